/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Protobuf encoding for the socket transport (wire.h).
 */

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "frame.h"
#include "macro.h"
#include "service/service.h"
#include "sock/wire.h"
#include "varint.h"

/* A frame may expand to this many times its size when decoded. */
#define ARENA_FACTOR 8

/*
 * The decoding arena: a bump allocator per worker thread, reset for every
 * frame. protobuf-c allocates each submessage and string separately; this
 * makes that a pointer increment and bounds it.
 */
typedef struct Arena {
        uint8_t *buf;
        size_t size, used;
} Arena;

static __thread Arena tls_arena;
static pthread_key_t arena_key;
static pthread_once_t arena_once = PTHREAD_ONCE_INIT;

/* Worker threads end with the daemon: free their arena with them. */
static void arena_destroy(void *p) {
        Arena *a = p;

        free(a->buf);
        *a = (Arena) {};
}

static void arena_key_create(void) {
        (void) pthread_key_create(&arena_key, arena_destroy);
}

static void *arena_alloc(void *data, size_t size) {
        Arena *a = data;
        size_t at = (a->used + 15) & ~(size_t) 15;

        if (at > a->size || size > a->size - at)
                return NULL;
        a->used = at + size;
        return a->buf + at;
}

static void arena_free(void *data, void *ptr) {
        (void) data;
        (void) ptr;
}

ProtobufCAllocator wire_arena_allocator(void) {
        return (ProtobufCAllocator) { arena_alloc, arena_free, &tls_arena };
}

int wire_arena_reset(uint32_t max_frame) {
        size_t want = (size_t) max_frame * ARENA_FACTOR + 4096;

        if (tls_arena.size < want) {
                uint8_t *p = realloc(tls_arena.buf, want);

                if (!p)
                        return -ENOMEM;
                if (!tls_arena.buf) {
                        pthread_once(&arena_once, arena_key_create);
                        (void) pthread_setspecific(arena_key, &tls_arena);
                }
                tls_arena.buf = p;
                tls_arena.size = want;
        }
        tls_arena.used = 0;
        return 0;
}

/* A varint at @p (at most @n bytes): its value and length, or -EBADMSG. */
static int varint_get(const uint8_t *p, size_t n, uint64_t *ret, size_t *ret_len) {
        int k = varint_decode(p, n, VARINT64_MAX, ret);

        if (k <= 0)
                return -EBADMSG;
        *ret_len = (size_t) k;
        return 0;
}

/* Nested messages deeper than this are not looked into (ours nest two). */
#define NUL_SCAN_DEPTH 8

static int find_nul(const ProtobufCMessageDescriptor *desc, const uint8_t *p, size_t n, unsigned depth,
                    char *name, size_t size) {
        size_t off = 0, k;
        uint64_t key, len;
        int r;

        while (off < n) {
                const ProtobufCFieldDescriptor *f;

                if (varint_get(p + off, n - off, &key, &k) < 0)
                        return -EBADMSG;
                off += k;
                switch (key & 7) {
                case 0: /* varint */
                        if (varint_get(p + off, n - off, &len, &k) < 0)
                                return -EBADMSG;
                        off += k;
                        continue;
                case 1: /* 64-bit */
                        k = 8;
                        break;
                case 5: /* 32-bit */
                        k = 4;
                        break;
                case 2: /* length-delimited: strings, bytes, messages */
                        if (varint_get(p + off, n - off, &len, &k) < 0 || len > n - off - k)
                                return -EBADMSG;
                        off += k;
                        f = key >> 3 <= UINT32_MAX ?
                                    protobuf_c_message_descriptor_get_field(desc, (unsigned) (key >> 3)) : NULL;
                        r = 0;
                        if (f && f->type == PROTOBUF_C_TYPE_STRING && memchr(p + off, 0, len))
                                r = 1;
                        else if (f && f->type == PROTOBUF_C_TYPE_MESSAGE && depth < NUL_SCAN_DEPTH)
                                r = find_nul(f->descriptor, p + off, len, depth + 1, name, size);
                        if (r != 0) {
                                if (r > 0) {
                                        /* Outer names first: prepend ours. */
                                        size_t have = strnlen(name, size), ours = strlen(f->name);

                                        if (have > 0 && have + ours + 1 < size) {
                                                memmove(name + ours + 1, name, have + 1);
                                                memcpy(name, f->name, ours);
                                                name[ours] = '.';
                                        } else if (have == 0)
                                                snprintf(name, size, "%s", f->name);
                                }
                                return r;
                        }
                        k = len;
                        break;
                default:
                        return -EBADMSG;
                }
                if (k > n - off)
                        return -EBADMSG;
                off += k;
        }
        return 0;
}

int wire_find_nul_string(const ProtobufCMessageDescriptor *desc, const uint8_t *body, size_t len, char *ret_name,
                         size_t size) {
        if (size == 0)
                return -EINVAL;
        ret_name[0] = 0;
        /* Most frames hold no zero byte at all, and then no string holds
         * one: a memchr() instead of a walk on every request. */
        if (!memchr(body, 0, len))
                return 0;
        return find_nul(desc, body, len, 0, ret_name, size);
}

int wire_response_append(const Memacct__V1__Response *resp, struct evbuffer *out) {
        size_t len = memacct__v1__response__get_packed_size(resp);
        uint8_t prefix[FRAME_PREFIX_MAX];
        size_t n = frame_prefix_encode((uint32_t) len, prefix);
        struct evbuffer_iovec v;

        if (len > UINT32_MAX)
                return -EMSGSIZE;
        if (evbuffer_reserve_space(out, (ev_ssize_t) (n + len), &v, 1) < 1)
                return -ENOMEM;
        memcpy(v.iov_base, prefix, n);
        memacct__v1__response__pack(resp, (uint8_t *) v.iov_base + n);
        v.iov_len = n + len;
        return evbuffer_commit_space(out, &v, 1);
}

uint8_t *wire_frame_new(const Memacct__V1__Response *resp, size_t *ret_len) {
        size_t body = memacct__v1__response__get_packed_size(resp);
        uint8_t prefix[FRAME_PREFIX_MAX], *frame;
        size_t n = frame_prefix_encode((uint32_t) body, prefix);

        frame = malloc(n + body);
        if (!frame)
                return NULL;
        memcpy(frame, prefix, n);
        memacct__v1__response__pack(resp, frame + n);
        *ret_len = n + body;
        return frame;
}

int wire_event_frame(const EventItem *ev, uint8_t **ret, size_t *ret_len) {
        Memacct__V1__Response resp = MEMACCT__V1__RESPONSE__INIT;
        Memacct__V1__Event e = MEMACCT__V1__EVENT__INIT;
        Memacct__V1__Moved mv = MEMACCT__V1__MOVED__INIT;
        Memacct__V1__ReclaimRequest rq = MEMACCT__V1__RECLAIM_REQUEST__INIT;

        resp.has_id = resp.has_status = true;
        resp.id = 0;
        resp.status = MEMACCT__V1__STATUS__STATUS_OK;
        switch (ev->kind) {
        case EVENT_MEMORY:
                e.path = (char *) ev->path;
                e.name = (char *) mem_event_to_string(ev->event);
                e.has_count = true;
                e.count = ev->count;
                e.region = (char *) ev->region; /* NULL, absent: memory's */
                e.has_pid = e.has_uid = ev->pid != 0;
                e.pid = (uint32_t) ev->pid;
                e.uid = (uint32_t) ev->uid;
                resp.result_case = MEMACCT__V1__RESPONSE__RESULT_EVENT;
                resp.event = &e;
                break;
        case EVENT_MOVED:
                mv.path = (char *) ev->path;
                resp.result_case = MEMACCT__V1__RESPONSE__RESULT_MOVED;
                resp.moved = &mv;
                break;
        case EVENT_RECLAIM:
                rq.has_id = rq.has_bytes = true;
                rq.id = ev->id;
                rq.bytes = ev->count;
                rq.region = (char *) ev->region; /* NULL, absent: memory */
                resp.result_case = MEMACCT__V1__RESPONSE__RESULT_RECLAIM;
                resp.reclaim = &rq;
                break;
        default:
                return -EINVAL;
        }
        *ret = wire_frame_new(&resp, ret_len);
        return *ret ? 0 : -ENOMEM;
}

/* One Counter per event at @cs, named and valued from @values, and its pointer in @ptrs. */
static void event_counters_fill(Memacct__V1__Counter *cs, Memacct__V1__Counter **ptrs, const uint64_t *values) {
        for (MemEvent e = 0; e < _MEM_EVENT_MAX; e++) {
                memacct__v1__counter__init(&cs[e]);
                cs[e].name = (char *) mem_event_to_string(e);
                cs[e].has_value = true;
                cs[e].value = values[e];
                ptrs[e] = &cs[e];
        }
}

/*
 * One RegionInfo and all it points at, so that a group's regions are one
 * allocation: the message first, so that a pointer to it frees the whole
 * (wire_group_info_free()). The name is a copy: the MemGroupInfo it
 * comes from is gone by the time the reply is encoded.
 */
typedef struct WireRegion {
        Memacct__V1__RegionInfo ri;
        Memacct__V1__Counter *ptrs[2 * _MEM_EVENT_MAX];
        Memacct__V1__Counter counters[2 * _MEM_EVENT_MAX];
        char name[MEM_REGION_NAME_MAX + 1];
} WireRegion;

/* @gi's regions from @info's. Return: 0 or -ENOMEM (@gi has none then). */
static int regions_fill(Memacct__V1__GroupInfo *gi, const MemGroupInfo *info) {
        unsigned n = MIN(info->nr_regions, (unsigned) ELEMENTSOF(info->regions));
        Memacct__V1__RegionInfo **v;
        WireRegion *w;

        if (n == 0)
                return 0;
        v = calloc(n, sizeof(*v));
        w = calloc(n, sizeof(*w));
        if (!v || !w) {
                free(v);
                free(w);
                return -ENOMEM;
        }
        for (unsigned i = 0; i < n; i++) {
                const MemRegionInfo *src = &info->regions[i];
                Memacct__V1__RegionInfo *ri = &w[i].ri;

                memacct__v1__region_info__init(ri);
                memcpy(w[i].name, src->name, sizeof(w[i].name));
                w[i].name[MEM_REGION_NAME_MAX] = 0;
                ri->name = w[i].name;
#define SET(f) (ri->has_##f = true, ri->f = src->f)
                SET(capacity); SET(current); SET(peak); SET(max); SET(high); SET(low); SET(min);
                SET(effective_min); SET(effective_low); SET(failcnt); SET(kept);
#undef SET
                event_counters_fill(w[i].counters, w[i].ptrs, src->events);
                event_counters_fill(w[i].counters + _MEM_EVENT_MAX, w[i].ptrs + _MEM_EVENT_MAX, src->events_local);
                ri->events = w[i].ptrs;
                ri->n_events = _MEM_EVENT_MAX;
                ri->events_local = w[i].ptrs + _MEM_EVENT_MAX;
                ri->n_events_local = _MEM_EVENT_MAX;
                v[i] = ri;
        }
        gi->regions = v;
        gi->n_regions = n;
        return 0;
}

static Memacct__V1__Counter *counters_new(size_t n) {
        Memacct__V1__Counter *v = calloc(n, sizeof(*v));

        for (size_t i = 0; v && i < n; i++)
                memacct__v1__counter__init(&v[i]);
        return v;
}

/* @gi's memory.pressure: both lines in one allocation, which pressure_some points at. Return: 0, -ENOMEM. */
static int pressure_fill(Memacct__V1__GroupInfo *gi, const MemGroupInfo *info) {
        Memacct__V1__Pressure *v = calloc(_MEM_PRESSURE_MAX, sizeof(*v));

        if (!v)
                return -ENOMEM;
        for (size_t s = 0; s < _MEM_PRESSURE_MAX; s++) {
                const MemPressureFigures *f = &info->pressure[s];

                memacct__v1__pressure__init(&v[s]);
                /* Hundredths, as the kernel prints them: x/100.0 prints
                 * back as the same two decimals. */
                v[s].has_avg10 = v[s].has_avg60 = v[s].has_avg300 = v[s].has_total = true;
                v[s].avg10 = f->avg10 / 100.0;
                v[s].avg60 = f->avg60 / 100.0;
                v[s].avg300 = f->avg300 / 100.0;
                v[s].total = f->total_usec;
        }
        gi->pressure_some = &v[MEM_PRESSURE_SOME];
        gi->pressure_full = &v[MEM_PRESSURE_FULL];
        return 0;
}

int wire_group_info_fill(Memacct__V1__GroupInfo *gi, const char *path, const MemGroupInfo *info) {
        Memacct__V1__Counter *cs = counters_new(2 * _MEM_EVENT_MAX + _MEM_STAT_MAX);
        Memacct__V1__Counter **ptrs = calloc(2 * _MEM_EVENT_MAX + _MEM_STAT_MAX, sizeof(*ptrs));
        size_t k = 0;

        memacct__v1__group_info__init(gi);
        if (!cs || !ptrs) {
                free(cs);
                free(ptrs);
                return -ENOMEM;
        }
        gi->path = (char *) path;
#define SET(f) (gi->has_##f = true, gi->f = info->f)
        SET(current); SET(peak); SET(max); SET(high); SET(low); SET(min);
        SET(effective_min); SET(effective_low); SET(failcnt);
#undef SET
        gi->has_owner = gi->has_nr_children = gi->has_nr_sessions = true;
        gi->owner = (uint32_t) info->owner;
        gi->nr_children = info->nr_children;
        gi->nr_sessions = info->nr_attached;
        gi->has_kept = gi->has_session = true;
        gi->kept = service_info_kept(info);
        gi->session = service_info_session(info);
        gi->has_kernel_current = info->mirror;
        gi->kernel_current = info->kernel_current;

        gi->events = ptrs + k;
        for (MemEvent e = 0; e < _MEM_EVENT_MAX; e++, k++) {
                cs[k].name = (char *) mem_event_to_string(e);
                cs[k].has_value = true;
                cs[k].value = info->events[e];
                ptrs[k] = &cs[k];
        }
        gi->n_events = _MEM_EVENT_MAX;
        gi->events_local = ptrs + k;
        for (MemEvent e = 0; e < _MEM_EVENT_MAX; e++, k++) {
                cs[k].name = (char *) mem_event_to_string(e);
                cs[k].has_value = true;
                cs[k].value = info->events_local[e];
                ptrs[k] = &cs[k];
        }
        gi->n_events_local = _MEM_EVENT_MAX;
        gi->stat = ptrs + k;
        for (MemStatItem i = 0; i < _MEM_STAT_MAX; i++, k++) {
                cs[k].name = (char *) mem_stat_item_to_string(i);
                cs[k].has_value = true;
                cs[k].value = (uint64_t) info->stat[i];
                ptrs[k] = &cs[k];
        }
        gi->n_stat = _MEM_STAT_MAX;
        if (pressure_fill(gi, info) < 0 || regions_fill(gi, info) < 0) {
                wire_group_info_free(gi);
                return -ENOMEM;
        }
        return 0;
}

void wire_group_info_free(Memacct__V1__GroupInfo *gi) {
        if (gi->events) {
                free(gi->events[0]); /* the Counter array */
                free(gi->events);    /* the pointer array */
                gi->events = NULL;
        }
        free(gi->pressure_some); /* both lines: pressure_fill() */
        gi->pressure_some = gi->pressure_full = NULL;
        if (gi->regions) {
                free(gi->regions[0]); /* the WireRegion array: its first message is its start */
                free(gi->regions);
                gi->regions = NULL;
                gi->n_regions = 0;
        }
}
