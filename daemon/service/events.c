/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Event fan-out
 *
 * Subscriptions are one list under one mutex: the core raises an event
 * on the charging thread, which walks the list, encodes the event once
 * per delivery (all socket subscribers share one frame) and pushes it to
 * every subscriber of the group or an ancestor that may read the group
 * under the read access in force, once per subscriber however many of
 * its subscriptions cover the group (each event has a number; a
 * subscriber remembers the last it got). So one event costs a walk of
 * the subscriptions, which the service bounds per uid and in total
 * ([limits] subscriptions-per-uid, subscriptions), and at most one push
 * per subscriber, which its transport bounds. The lock is what keeps a
 * subscriber alive while it is pushed to: events_unsubscribe_all() takes
 * it. The sink is called after the subscribers, outside the lock; it has
 * its own.
 *
 * The core calls its hooks inside no core lock, possibly inside
 * core_read_lock() (events) or with its move locks held (moves): nothing
 * here waits for a grace period or calls back into the core, and pushes
 * only queue.
 */

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <urcu/list.h>

#include "clock.h"
#include "core/core.h"
#include "core/region.h"
#include "core/session.h"
#include "macro.h"
#include "service/authz.h"
#include "service/events.h"
#include "service/message-ids.h"
#include "base/log.h"
#include "base/selfstats.h"

typedef struct Subscription {
        EventSubscriber *sub;
        int region; /* the region key whose events it wants; EVENTS_ALL_REGIONS: every one */
        struct cds_list_head link; /* Events.subscriptions */
        char path[];
} Subscription;

/*
 * A refusal by a max and an oom are logged for the administrator, at most
 * once every SAID_INTERVAL_USEC per group: a client that charges past its
 * max in a loop must not flood the journal. Groups share SAID_SLOTS slots
 * by a hash of their path; two groups in one slot share its pace, which
 * only makes the log quieter. The rest is counted and said with the next.
 */
#define SAID_SLOTS 256
#define SAID_INTERVAL_USEC (10 * USEC_PER_SEC)

typedef struct Said {
        uint64_t hash, last_usec;
        unsigned suppressed;
} Said;

struct Events {
        MemCore *core;
        _Atomic int read_access;   /* ReadAccess; relaxed: each event reads it once */
        _Atomic int confined_read; /* ConfinedRead; likewise */
        pthread_mutex_t lock;
        struct cds_list_head subscriptions;
        uint64_t seq; /* memory events raised; under the lock */
        /* Set while no other thread raises events: read without the lock. */
        EventsSinkFn sink;
        void *sink_userdata;
        pthread_mutex_t said_lock;
        Said said[SAID_SLOTS];
};

bool events_path_within(const char *path, const char *top) {
        size_t n = strlen(top);

        if (strcmp(top, "/") == 0)
                return true;
        return strncmp(path, top, n) == 0 && (path[n] == 0 || path[n] == '/');
}

/* The encodings of one event, one per delivery: the subscribers of one
 * transport share theirs. Few deliveries exist (one per transport); past
 * ENCODED_MAX the last slot is encoded again as needed. */
#define ENCODED_MAX 4

typedef struct Encoded {
        const EventDelivery *delivery;
        uint8_t *buf;
        size_t len;
        bool failed;
} Encoded;

typedef struct Encodings {
        Encoded v[ENCODED_MAX];
        unsigned n;
} Encodings;

static Encoded *encoding(Encodings *encs, const EventDelivery *d, const EventItem *ev) {
        Encoded *enc;

        for (unsigned i = 0; i < encs->n; i++)
                if (encs->v[i].delivery == d)
                        return &encs->v[i];
        if (encs->n < ENCODED_MAX)
                enc = &encs->v[encs->n++];
        else {
                enc = &encs->v[ENCODED_MAX - 1];
                free(enc->buf);
        }
        *enc = (Encoded) { .delivery = d };
        enc->failed = d->encode(ev, &enc->buf, &enc->len) < 0;
        return enc;
}

static void encodings_done(Encodings *encs) {
        for (unsigned i = 0; i < encs->n; i++)
                free(encs->v[i].buf);
}

static void deliver(EventSubscriber *sub, const EventItem *ev, Encodings *encs) {
        Encoded *enc = encoding(encs, sub->delivery, ev);

        /* Out of memory: this event is lost for these subscribers; the
         * counters it reports stay exact in the group. */
        if (!enc->failed)
                sub->delivery->push(sub->userdata, enc->buf, enc->len);
        else
                selfstats_count(SELF_EVENTS_DROPPED);
}

/* The requester of this thread's operation in progress (events_requester_set()). */
static _Thread_local struct {
        pid_t pid;
        uid_t uid;
} requester;

void events_requester_set(pid_t pid, uid_t uid) {
        requester.pid = pid;
        requester.uid = pid ? uid : 0;
}

/* A max or oom event of @g (in @region; NULL: memory), logged at most
 * once an interval per group and region (see Said). */
static void say_refusal(Events *e, MemGroup *g, const char *region, MemEvent event, uint64_t local) {
        uint64_t h = 14695981039346656037ULL, now = clock_now_usec(CLOCK_MONOTONIC);
        char f_group[16 + MEM_PATH_MAX], f_uid[32], f_pid[32], f_events[48], f_region[32 + MEM_REGION_NAME_MAX];
        const char *fields[] = { f_group, f_uid, f_pid, f_events, region ? f_region : NULL, NULL };
        char in_region[16 + MEM_REGION_NAME_MAX] = "";
        unsigned suppressed;
        Said *s;

        for (const char *c = g->path; *c; c++)
                h = (h ^ (uint8_t) *c) * 1099511628211ULL;
        for (const char *c = region ? region : ""; *c; c++)
                h = (h ^ (uint8_t) *c) * 1099511628211ULL;
        s = &e->said[h % SAID_SLOTS];
        pthread_mutex_lock(&e->said_lock);
        if (s->hash == h && now - s->last_usec < SAID_INTERVAL_USEC) {
                s->suppressed++;
                pthread_mutex_unlock(&e->said_lock);
                return;
        }
        suppressed = s->hash == h ? s->suppressed : 0;
        *s = (Said) { .hash = h, .last_usec = now };
        pthread_mutex_unlock(&e->said_lock);
        snprintf(f_group, sizeof(f_group), "MEMACCT_GROUP=%s", g->path);
        snprintf(f_uid, sizeof(f_uid), "MEMACCT_UID=%u", (unsigned) requester.uid);
        snprintf(f_pid, sizeof(f_pid), "MEMACCT_PID=%d", (int) requester.pid);
        snprintf(f_events, sizeof(f_events), "MEMACCT_EVENTS=%llu", (unsigned long long) local);
        if (region) {
                snprintf(f_region, sizeof(f_region), "MEMACCT_REGION=%s", region);
                snprintf(in_region, sizeof(in_region), " in region %s", region);
        }
        if (event == MEM_EVENT_MAX)
                log_struct(LOG_NOTICE, MESSAGE_REFUSED_AT_MAX, fields,
                           "Group %s refused a charge at its max%s (max events: %llu), of uid %u pid %d%s",
                           g->path, in_region, (unsigned long long) local, (unsigned) requester.uid,
                           (int) requester.pid, suppressed ? " (and more, not logged)" : "");
        else
                log_struct(LOG_NOTICE, MESSAGE_OUT_OF_MEMORY, fields,
                           "Group %s is out of memory%s: a charge could not be brought under max (oom events: "
                           "%llu), of uid %u pid %d%s", g->path, in_region, (unsigned long long) local,
                           (unsigned) requester.uid, (int) requester.pid, suppressed ? " (and more, not logged)" : "");
}

static void core_event_hook(MemGroup *g, int region, MemEvent event, uint64_t local, void *userdata) {
        char region_name[MEM_REGION_NAME_MAX + 1];
        Events *e = userdata;
        EventItem ev = {
                .kind = EVENT_MEMORY,
                .path = g->path,
                .event = event,
                .count = local,
                .pid = requester.pid,
                .uid = requester.uid,
        };
        ReadAccess access = atomic_load_explicit(&e->read_access, memory_order_relaxed);
        ConfinedRead confined = atomic_load_explicit(&e->confined_read, memory_order_relaxed);
        Encodings encs = {};
        Subscription *s;
        uint64_t seq;

        if (region != 0 && core_region_name(e->core, region, region_name) == 0)
                ev.region = region_name;
        selfstats_event(EVENT_MEMORY);
        if (event == MEM_EVENT_MAX || event == MEM_EVENT_OOM)
                say_refusal(e, g, ev.region, event, local);
        pthread_mutex_lock(&e->lock);
        seq = ++e->seq;
        cds_list_for_each_entry(s, &e->subscriptions, link)
                if (s->sub->delivered != seq && (s->region == EVENTS_ALL_REGIONS || s->region == region) && events_path_within(g->path, s->path) &&
                    authz_may_read(access, confined, s->sub->who, g)) {
                        s->sub->delivered = seq;
                        deliver(s->sub, &ev, &encs);
                }
        pthread_mutex_unlock(&e->lock);
        encodings_done(&encs);
        if (e->sink)
                e->sink(&ev, e->sink_userdata);
}

/*
 * A moved session (by a Move with a pid, or its own) is told where it is
 * now, so that a client that replays after a reconnect replays there.
 * The core holds its move locks: only encode and queue. The subscriber
 * is alive: its session is, and the registry frees the session (waiting
 * for the move) before the subscriber.
 */
static void core_move_hook(MemSession *s, MemGroup *dst, void *userdata) {
        EventSubscriber *sub = s->userdata;
        EventItem ev = { .kind = EVENT_MOVED, .path = dst->path };
        Encodings encs = {};

        (void) userdata;
        selfstats_event(EVENT_MOVED);
        if (!sub || !sub->delivery)
                return;
        deliver(sub, &ev, &encs); /* a hint: the move itself stands if it is lost */
        encodings_done(&encs);
}

int events_send(EventSubscriber *sub, const EventItem *ev) {
        Encodings encs = {};
        bool failed;

        if (!sub->delivery)
                return -ENOTSUP;
        deliver(sub, ev, &encs);
        failed = encs.n > 0 && encs.v[0].failed;
        encodings_done(&encs);
        return failed ? -ENOMEM : 0;
}

int events_new(MemCore *core, Events **ret) {
        Events *e = calloc(1, sizeof(*e));

        if (!e)
                return -ENOMEM;
        e->core = core;
        pthread_mutex_init(&e->lock, NULL);
        pthread_mutex_init(&e->said_lock, NULL);
        CDS_INIT_LIST_HEAD(&e->subscriptions);
        core_set_event_hook(core, core_event_hook, e);
        core_set_move_hook(core, core_move_hook, e);
        *ret = e;
        return 0;
}

Events *events_free(Events *e) {
        Subscription *s, *tmp;

        if (!e)
                return NULL;
        core_set_event_hook(e->core, NULL, NULL);
        core_set_move_hook(e->core, NULL, NULL);
        cds_list_for_each_entry_safe(s, tmp, &e->subscriptions, link)
                free(s);
        pthread_mutex_destroy(&e->said_lock);
        pthread_mutex_destroy(&e->lock);
        free(e);
        return NULL;
}

void events_set_read_access(Events *e, ReadAccess read_access, ConfinedRead confined_read) {
        atomic_store_explicit(&e->read_access, read_access, memory_order_relaxed);
        atomic_store_explicit(&e->confined_read, confined_read, memory_order_relaxed);
}

void events_set_sink(Events *e, EventsSinkFn sink, void *userdata) {
        e->sink = sink;
        e->sink_userdata = userdata;
}

int events_subscribe(Events *e, EventSubscriber *sub, const char *path, int region) {
        size_t n = strlen(path) + 1;
        Subscription *s = malloc(sizeof(*s) + n);

        if (!s)
                return -ENOMEM;
        s->sub = sub;
        s->region = region;
        memcpy(s->path, path, n);
        pthread_mutex_lock(&e->lock);
        cds_list_add_tail(&s->link, &e->subscriptions);
        pthread_mutex_unlock(&e->lock);
        sub->nsubs++;
        return 0;
}

void events_unsubscribe_all(Events *e, EventSubscriber *sub) {
        Subscription *s, *tmp;

        if (sub->nsubs == 0)
                return;
        pthread_mutex_lock(&e->lock);
        cds_list_for_each_entry_safe(s, tmp, &e->subscriptions, link)
                if (s->sub == sub) {
                        cds_list_del(&s->link);
                        free(s);
                }
        pthread_mutex_unlock(&e->lock);
        sub->nsubs = 0;
}

void events_emit(Events *e, EventKind kind, const char *path, unsigned limits) {
        events_emit_region(e, kind, path, NULL, limits);
}

void events_emit_region(Events *e, EventKind kind, const char *path, const char *region, unsigned limits) {
        EventItem ev = { .kind = kind, .path = path, .region = region, .limits = limits };

        selfstats_event(kind);
        if (e && e->sink)
                e->sink(&ev, e->sink_userdata);
}

void events_notify(void *userdata, EventKind kind, const char *path, unsigned limits) {
        events_emit(userdata, kind, path, limits);
}
