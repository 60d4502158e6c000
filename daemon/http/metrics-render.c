/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The exposition and the answers of the metrics listener
 *
 * A scrape reads the tree as a recursive list by the daemon itself
 * (service_list_groups() with the daemon's own peer, which reads
 * everything); its one exact statistics flush makes stat items exact as
 * of the scrape (collect-on-scrape, so the numbers do not lag the flush
 * interval). The exposition format wants the samples of one family
 * together, so each group's values go to one text per family, joined at
 * the end: memory is about twice the size of the answer while it is
 * built, and the answer alone once it is.
 *
 * Every text lives in pages of its own (MetricsText), never in malloc's
 * arenas: an answer is megabytes for a tree of thousands of groups, made
 * of thousands of small pieces if built with malloc, and freed pieces of
 * an arena are not given back to the kernel while any neighbour lives.
 * A mapping is given back whole by munmap().
 *
 * A scrape that says Accept-Encoding: gzip gets the answer deflated from
 * its text into pages of the same kind, a window at a time, and the text
 * freed: memory is the text and its compressed copy (a tenth of it, or
 * less) at the peak. zlib's own state (about 256 KiB) is mapped too, so
 * it does not stay behind in an arena. Level 1: a scrape is on the
 * listener's one thread, and the exposition's repetitive lines compress
 * nearly as well fast as slow.
 *
 * Limits that are not set ("max") are +Inf, never UINT64_MAX: a sentinel
 * that would otherwise read as 16 EiB on a dashboard.
 *
 * A group's counters in device regions go to families of their own
 * (metrics-regions.c says why), in the same walk; memory's families are
 * what they were before regions.
 */

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <zlib.h>

#include "http/metrics-internal.h"
#include "http/metrics.h"
#include "macro.h"
#include "base/log.h"

/* ---- text in pages of its own ---- */

static int text_reserve(MetricsText *t, size_t n) {
        size_t cap;
        void *p;

        if (t->cap - t->len >= n)
                return 0;
        if (n > SIZE_MAX / 4 - t->len)
                return -ENOMEM;
        /* Doubling keeps the mremap() calls logarithmic; 64 KiB to start. */
        cap = t->cap ? t->cap : 64 * 1024;
        while (cap - t->len < n)
                cap *= 2;
        if (t->cap)
                p = mremap(t->p, t->cap, cap, MREMAP_MAYMOVE);
        else
                p = mmap(NULL, cap, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED)
                return -ENOMEM;
        t->p = p;
        t->cap = cap;
        return 0;
}

int metrics_text_add(MetricsText *t, const void *data, size_t n) {
        if (n == 0)
                return 0;
        if (text_reserve(t, n) < 0)
                return -ENOMEM;
        memcpy(t->p + t->len, data, n);
        t->len += n;
        return 0;
}

int metrics_text_printf(MetricsText *t, const char *format, ...) {
        va_list ap;
        int n;

        /* A line of the exposition is short: try in place, grow once if needed. */
        for (int tries = 0; tries < 2; tries++) {
                size_t room;

                if (text_reserve(t, tries == 0 ? 256 : (size_t) n + 1) < 0)
                        return -ENOMEM;
                room = t->cap - t->len;
                va_start(ap, format);
                n = vsnprintf(t->p + t->len, room, format, ap);
                va_end(ap);
                if (n < 0)
                        return -ENOMEM;
                if ((size_t) n < room) {
                        t->len += (size_t) n;
                        return 0;
                }
        }
        return -ENOMEM;
}

void metrics_text_done(MetricsText *t) {
        if (t->cap)
                munmap(t->p, t->cap);
        *t = (MetricsText) {};
}

void *metrics_text_steal(MetricsText *t, size_t *ret_cap) {
        void *p = t->p;

        *ret_cap = t->cap;
        *t = (MetricsText) {};
        return p;
}

void metrics_text_unmap(void *p, size_t cap) {
        if (cap)
                munmap(p, cap);
}

/* ---- gzip ---- */

/* zlib's allocations in mappings of their own, the size in front (16 bytes keep the alignment). */
static void *z_alloc(void *opaque, unsigned items, unsigned size) {
        size_t n;
        char *p;

        (void) opaque;
        if (size && items > (SIZE_MAX - 16) / size)
                return Z_NULL;
        n = (size_t) items * size + 16;
        p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED)
                return Z_NULL;
        memcpy(p, &n, sizeof(n));
        return p + 16;
}

static void z_free(void *opaque, void *address) {
        char *p = (char *) address - 16;
        size_t n;

        (void) opaque;
        if (!address)
                return;
        memcpy(&n, p, sizeof(n));
        munmap(p, n);
}

/* @in gzip-compressed into @out (empty). Return: 0 or -ENOMEM (@out is then empty). */
static int gzip_text(const MetricsText *in, MetricsText *out) {
        z_stream z = { .zalloc = z_alloc, .zfree = z_free };
        int zr = Z_OK;

        /* 15 + 16: a 32 KiB window with the gzip header and trailer. */
        if (deflateInit2(&z, 1, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
                return -ENOMEM;
        z.next_in = (Bytef *) in->p;
        z.avail_in = 0;
        for (size_t left = in->len; zr != Z_STREAM_END;) {
                /* avail_in is 32 bits: feed the text a GiB at a time. */
                if (z.avail_in == 0 && left > 0) {
                        z.avail_in = (uInt) MIN(left, (size_t) 1 << 30);
                        left -= z.avail_in;
                }
                if (text_reserve(out, 64 * 1024) < 0) {
                        zr = Z_MEM_ERROR;
                        break;
                }
                z.next_out = (Bytef *) out->p + out->len;
                z.avail_out = (uInt) MIN(out->cap - out->len, (size_t) 1 << 30);
                {
                        uInt room = z.avail_out;

                        zr = deflate(&z, left == 0 ? Z_FINISH : Z_NO_FLUSH);
                        out->len += room - z.avail_out;
                }
                if (zr != Z_OK && zr != Z_STREAM_END && zr != Z_BUF_ERROR)
                        break;
        }
        deflateEnd(&z);
        if (zr != Z_STREAM_END) {
                metrics_text_done(out);
                return -ENOMEM;
        }
        return 0;
}

/* ---- the exposition ---- */

typedef enum MetricsFamily {
        FAMILY_USAGE,
        FAMILY_PEAK,
        FAMILY_MAX,
        FAMILY_HIGH,
        FAMILY_LOW,
        FAMILY_MIN,
        FAMILY_EFFECTIVE_MIN,
        FAMILY_EFFECTIVE_LOW,
        FAMILY_KERNEL_USAGE,
        FAMILY_SESSIONS_ATTACHED,
        FAMILY_FAILCNT,
        FAMILY_EVENTS,
        FAMILY_EVENTS_LOCAL,
        FAMILY_STAT,
        FAMILY_STAT_LOCAL,
        FAMILY_PRESSURE_WAITING,
        FAMILY_PRESSURE_STALLED,
        _FAMILY_MAX,
} MetricsFamily;

static const struct {
        const char *name, *type, *help;
} families[_FAMILY_MAX] = {
        [FAMILY_USAGE] = { "memacct_group_usage_bytes", "gauge",
                           "Bytes charged to the group and its subtree (memory.current)." },
        [FAMILY_PEAK] = { "memacct_group_peak_bytes", "gauge",
                          "Highest usage since creation or the last reset (memory.peak)." },
        [FAMILY_MAX] = { "memacct_group_max_bytes", "gauge",
                         "Hard limit (memory.max); +Inf when not set." },
        [FAMILY_HIGH] = { "memacct_group_high_bytes", "gauge",
                          "Throttle limit (memory.high); +Inf when not set." },
        [FAMILY_LOW] = { "memacct_group_low_bytes", "gauge",
                         "Best-effort protection (memory.low); +Inf for max." },
        [FAMILY_MIN] = { "memacct_group_min_bytes", "gauge",
                         "Hard protection (memory.min); +Inf for max." },
        [FAMILY_EFFECTIVE_MIN] = { "memacct_group_effective_min_bytes", "gauge",
                                   "Hard protection in effect, relative to the root; +Inf for max." },
        [FAMILY_EFFECTIVE_LOW] = { "memacct_group_effective_low_bytes", "gauge",
                                   "Best-effort protection in effect, relative to the root; +Inf for max." },
        [FAMILY_KERNEL_USAGE] = { "memacct_group_kernel_usage_bytes", "gauge",
                                  "The kernel cgroup's usage at the last sample, for cgroup mirrors only." },
        [FAMILY_SESSIONS_ATTACHED] = { "memacct_group_sessions", "gauge",
                                       "Sessions attached to the group itself." },
        [FAMILY_FAILCNT] = { "memacct_group_failcnt_total", "counter",
                             "Charges the group's max refused (failcnt)." },
        [FAMILY_EVENTS] = { "memacct_group_events_total", "counter",
                            "Events of the group and its subtree (memory.events)." },
        [FAMILY_EVENTS_LOCAL] = { "memacct_group_events_local_total", "counter",
                                  "Events of the group itself (memory.events.local)." },
        [FAMILY_STAT] = { "memacct_group_stat_bytes", "gauge",
                          "Bytes by item of the group and its subtree (memory.stat)." },
        [FAMILY_STAT_LOCAL] = { "memacct_group_stat_local_bytes", "gauge",
                                "Bytes by item charged to the group itself." },
        /* cAdvisor's names for a container's memory pressure
         * (container_pressure_memory_waiting_seconds_total, _stalled_):
         * memory.pressure's some and full totals. */
        [FAMILY_PRESSURE_WAITING] = { "memacct_pressure_waiting_seconds_total", "counter",
                                      "Time at least one charge of the subtree waited for reclaim "
                                      "(memory.pressure some total)." },
        [FAMILY_PRESSURE_STALLED] = { "memacct_pressure_stalled_seconds_total", "counter",
                                      "Time every session attached in the subtree waited for reclaim "
                                      "(memory.pressure full total)." },
};

/*
 * Group paths are [A-Za-z0-9._:@-/] today and region names
 * [A-Za-z0-9._:/@+-], so the escape is a guard for whatever the rules
 * allow tomorrow.
 */
char *metrics_escape_label(const char *s, char *buf) {
        char *p = buf;

        for (; *s; s++) {
                if (*s == '\\' || *s == '"') {
                        *p++ = '\\';
                        *p++ = *s;
                } else if (*s == '\n') {
                        *p++ = '\\';
                        *p++ = 'n';
                } else
                        *p++ = *s;
        }
        *p = 0;
        return p;
}

const char *metrics_limit_value(uint64_t v, char buf[static 24]) {
        if (v == UINT64_MAX)
                return "+Inf";
        snprintf(buf, 24, "%" PRIu64, v);
        return buf;
}

static int add_u64(MetricsText *b, const char *name, const char *label, uint64_t v) {
        return metrics_text_printf(b, "%s{%s} %" PRIu64 "\n", name, label, v) < 0 ? -ENOMEM : 0;
}

/* µs as seconds, every digit kept: a counter that moves by microseconds. */
static int add_seconds(MetricsText *b, const char *name, const char *label, uint64_t usec) {
        return metrics_text_printf(b, "%s{%s} %" PRIu64 ".%06" PRIu64 "\n", name, label, usec / 1000000,
                                   usec % 1000000) < 0 ? -ENOMEM : 0;
}

static int add_limit(MetricsText *b, const char *name, const char *label, uint64_t v) {
        char num[24];

        return metrics_text_printf(b, "%s{%s} %s\n", name, label, metrics_limit_value(v, num)) < 0 ? -ENOMEM : 0;
}

/*
 * [metrics] series = basic (or series=basic): of a group, what an
 * operator watches and alerts on: usage, peak, the four limits, failcnt,
 * its own events (events.local: what the shipped alerts count) and, for a
 * mirror, the kernel's usage; 12 series instead of 36, leaving out
 * effective protection, the session count, the hierarchical events,
 * the two stat families and the two of pressure. A family with no sample is left out whole.
 */
static int render_group(MetricsText fam[_FAMILY_MAX], const char *label, const MemGroupInfo *in, bool basic) {
        int r = 0;

#define NAME(f) families[f].name
        r |= add_u64(&fam[FAMILY_USAGE], NAME(FAMILY_USAGE), label, in->current);
        r |= add_u64(&fam[FAMILY_PEAK], NAME(FAMILY_PEAK), label, in->peak);
        r |= add_limit(&fam[FAMILY_MAX], NAME(FAMILY_MAX), label, in->max);
        r |= add_limit(&fam[FAMILY_HIGH], NAME(FAMILY_HIGH), label, in->high);
        r |= add_limit(&fam[FAMILY_LOW], NAME(FAMILY_LOW), label, in->low);
        r |= add_limit(&fam[FAMILY_MIN], NAME(FAMILY_MIN), label, in->min);
        if (in->mirror)
                r |= add_u64(&fam[FAMILY_KERNEL_USAGE], NAME(FAMILY_KERNEL_USAGE), label, in->kernel_current);
        r |= add_u64(&fam[FAMILY_FAILCNT], NAME(FAMILY_FAILCNT), label, in->failcnt);
        for (MemEvent e = 0; e < _MEM_EVENT_MAX; e++)
                if (metrics_text_printf(&fam[FAMILY_EVENTS_LOCAL],
                                        "%s{%s,event=\"%s\"} %" PRIu64 "\n",
                                        NAME(FAMILY_EVENTS_LOCAL), label, mem_event_to_string(e),
                                        in->events_local[e]) < 0)
                        return -ENOMEM;
        if (basic)
                return r < 0 ? -ENOMEM : 0;
        r |= add_limit(&fam[FAMILY_EFFECTIVE_MIN], NAME(FAMILY_EFFECTIVE_MIN), label, in->effective_min);
        r |= add_limit(&fam[FAMILY_EFFECTIVE_LOW], NAME(FAMILY_EFFECTIVE_LOW), label, in->effective_low);
        r |= add_u64(&fam[FAMILY_SESSIONS_ATTACHED], NAME(FAMILY_SESSIONS_ATTACHED), label, in->nr_attached);
        r |= add_seconds(&fam[FAMILY_PRESSURE_WAITING], NAME(FAMILY_PRESSURE_WAITING), label,
                         in->pressure[MEM_PRESSURE_SOME].total_usec);
        r |= add_seconds(&fam[FAMILY_PRESSURE_STALLED], NAME(FAMILY_PRESSURE_STALLED), label,
                         in->pressure[MEM_PRESSURE_FULL].total_usec);
        for (MemEvent e = 0; e < _MEM_EVENT_MAX; e++)
                if (metrics_text_printf(&fam[FAMILY_EVENTS], "%s{%s,event=\"%s\"} %" PRIu64 "\n",
                                        NAME(FAMILY_EVENTS), label, mem_event_to_string(e), in->events[e]) < 0)
                        return -ENOMEM;
        for (MemStatItem i = 0; i < _MEM_STAT_MAX; i++) {
                /* group_read() clamps stat items at 0. */
                if (metrics_text_printf(&fam[FAMILY_STAT], "%s{%s,item=\"%s\"} %" PRId64 "\n",
                                        NAME(FAMILY_STAT), label, mem_stat_item_to_string(i),
                                        in->stat[i]) < 0 ||
                    metrics_text_printf(&fam[FAMILY_STAT_LOCAL], "%s{%s,item=\"%s\"} %" PRId64 "\n",
                                        NAME(FAMILY_STAT_LOCAL), label, mem_stat_item_to_string(i),
                                        in->stat_local[i]) < 0)
                        return -ENOMEM;
        }
#undef NAME
        return r < 0 ? -ENOMEM : 0;
}

int metrics_add_header(MetricsText *out, const char *name, const char *type, const char *help) {
        return metrics_text_printf(out, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type) < 0 ? -ENOMEM
                                                                                                  : 0;
}

typedef struct Render {
        MetricsText fam[_FAMILY_MAX];
        MetricsRegionTexts regions; /* the device regions' families (metrics-regions.c) */
        char *label; /* the label set of one group: group="..." and cgroup="..." escaped, room for region="..." */
        MetricsMirrors mirrors;
        unsigned prefix_depth; /* components of the prefix: "/" 0, "/a" 1 */
        unsigned depth;        /* levels below it exported; UINT_MAX: all */
        unsigned max_groups;
        bool basic;            /* the basic series alone (render_group()) */
        unsigned seen, exported;
} Render;

/* Components of a group path: "/" has none, "/a/b" two. */
static unsigned path_depth(const char *path) {
        unsigned n = 0;

        if (strcmp(path, "/") == 0)
                return 0;
        for (; *path; path++)
                n += *path == '/';
        return n;
}

/*
 * The labels every series of the group at @path carries: group="PATH", and
 * for the mirror of a kernel cgroup cgroup="CGROUP" too (the cgroup's path
 * in the hierarchy), both escaped, into x->label.
 */
static const char *label_set(Render *x, const char *path) {
        const char *cgroup = metrics_mirrors_find(&x->mirrors, path);
        char *p = x->label;

        p = stpcpy(p, "group=\"");
        p = metrics_escape_label(path, p);
        p = stpcpy(p, "\"");
        if (cgroup) {
                p = stpcpy(p, ",cgroup=\"");
                p = metrics_escape_label(cgroup, p);
                p = stpcpy(p, "\"");
        }
        return x->label;
}

/* ServiceGroupFn of a scrape: one group's samples into their families. */
static int render_one(void *userdata, const char *path, const MemGroupInfo *info) {
        Render *x = userdata;
        int r;

        x->seen++;
        /* Parents come first, so a group below the depth only skips itself. */
        if (x->depth != UINT_MAX && path_depth(path) - x->prefix_depth > x->depth)
                return 0;
        /* The cap reached with a group still to export: stop the walk there. */
        if (x->exported >= x->max_groups)
                return -ECANCELED;
        x->exported++;
        r = render_group(x->fam, label_set(x, path), info, x->basic);
        if (r >= 0 && info->nr_regions > 0)
                r = metrics_regions_group(&x->regions, x->label, info, x->basic);
        return r;
}

/* ServiceGroupFn of the count after a cut walk: paths only. */
static int count_one(void *userdata, const char *path, const MemGroupInfo *info) {
        unsigned *n = userdata;

        (void) path;
        (void) info;
        (*n)++;
        return 0;
}

/*
 * How much of the tree the scrape exported, and why not all of it. The
 * count of groups selected is not "_total": a gauge may not end so (the
 * suffix is a counter's, and promtool says so).
 */
static int render_cut(MetricsText *out, unsigned exported, unsigned selected, bool truncated) {
        static const char help_exported[] =
                "Groups this scrape exported; fewer than selected when depth= or the max-groups cap cut them.";
        static const char help_selected[] =
                "Groups in the subtree the scrape asked for (prefix=, else the whole tree), at every depth.";
        static const char help_truncated[] = "1 when the [metrics] max-groups cap cut this scrape's groups, else 0.";
        int r;

        r = metrics_add_header(out, "memacctd_metrics_groups_exported", "gauge", help_exported);
        if (r >= 0 && metrics_text_printf(out, "memacctd_metrics_groups_exported %u\n", exported) < 0)
                r = -ENOMEM;
        if (r >= 0)
                r = metrics_add_header(out, "memacctd_metrics_groups_selected", "gauge", help_selected);
        if (r >= 0 && metrics_text_printf(out, "memacctd_metrics_groups_selected %u\n", selected) < 0)
                r = -ENOMEM;
        if (r >= 0)
                r = metrics_add_header(out, "memacctd_metrics_groups_truncated", "gauge", help_truncated);
        if (r >= 0 && metrics_text_printf(out, "memacctd_metrics_groups_truncated %d\n", truncated) < 0)
                r = -ENOMEM;
        return r;
}

/* The daemon-wide series after the groups'. */
static int render_daemon(Service *svc, MetricsText *out) {
        int r;

        r = metrics_add_header(out, "memacct_groups", "gauge", "Groups, the root included.");
        if (r >= 0 && metrics_text_printf(out, "memacct_groups %u\n", service_group_count(svc)) < 0)
                r = -ENOMEM;
        if (r >= 0)
                r = metrics_add_header(out, "memacct_sessions", "gauge", "Sessions open, on every transport.");
        if (r >= 0 && metrics_text_printf(out, "memacct_sessions %u\n", service_session_count(svc)) < 0)
                r = -ENOMEM;
        if (r >= 0)
                r = metrics_add_header(out, "memacct_build_info", "gauge", "The daemon's version; always 1.");
        if (r >= 0 && metrics_text_printf(out, "memacct_build_info{version=\"%s\"} 1\n", MEMACCT_VERSION) < 0)
                r = -ENOMEM;
        return r;
}

int metrics_render(Service *svc, const MetricsQuery *mq, unsigned max_groups, MetricsText *out, Refusal *rf) {
        Render x = {
                .prefix_depth = path_depth(mq->prefix),
                .depth = mq->depth,
                .max_groups = max_groups,
                .basic = mq->basic > 0,
        };
        bool truncated = false;
        unsigned total;
        int r = 0;

        /* The mirror table copied before the walk: no cgroup lock inside it. */
        if (metrics_mirrors_load(svc, &x.mirrors) < 0)
                return -ENOMEM;
        /* Each value escaped may double; the names, quotes and comma around them. */
        x.label = malloc(2 * MEM_PATH_MAX + 2 * x.mirrors.cgroup_max + 32 + METRICS_REGION_LABEL_MAX);
        if (!x.label) {
                metrics_mirrors_done(&x.mirrors);
                return -ENOMEM;
        }
        /* One exact flush for the whole scrape (the first group's read). */
        r = service_list_groups(svc, service_daemon_peer(svc), mq->prefix,
                                SERVICE_READ_RECURSIVE | SERVICE_READ_EXACT, render_one, &x, rf);
        total = x.seen;
        if (r == -ECANCELED) {
                /* Cut by the cap: the rest is counted, not read (a cheap walk of paths). */
                unsigned n = 0;
                Refusal ignored;

                refusal_init(&ignored);
                truncated = true;
                r = service_list_groups(svc, service_daemon_peer(svc), mq->prefix,
                                        SERVICE_READ_RECURSIVE | SERVICE_READ_PATHS, count_one, &n, &ignored);
                /* The prefix may have gone in between: what was rendered stands. */
                total = r >= 0 ? MAX(n, x.exported) : x.exported;
                r = 0;
        } else if (r < 0 && x.seen == 0) {
                /* The prefix: no such group, or not a group path (@rf says). */
                free(x.label);
                metrics_mirrors_done(&x.mirrors);
                return r;
        }
        for (size_t f = 0; f < _FAMILY_MAX && r >= 0; f++) {
                /* A family without samples (no cgroup mirrors) is left out. */
                if (x.fam[f].len == 0)
                        continue;
                r = metrics_add_header(out, families[f].name, families[f].type, families[f].help);
                if (r >= 0)
                        r = metrics_text_add(out, x.fam[f].p, x.fam[f].len);
                /* Each family's pages go back as soon as they are copied. */
                metrics_text_done(&x.fam[f]);
        }
        if (r >= 0)
                r = metrics_regions_flush(&x.regions, out);
        if (r >= 0)
                r = render_cut(out, x.exported, total, truncated);
        if (r >= 0)
                r = render_daemon(svc, out);
        if (r >= 0)
                r = metrics_regions_daemon(svc, out);
        if (r >= 0)
                r = metrics_render_self(out);
        for (size_t f = 0; f < _FAMILY_MAX; f++)
                metrics_text_done(&x.fam[f]);
        metrics_regions_done(&x.regions);
        free(x.label);
        metrics_mirrors_done(&x.mirrors);
        return r < 0 ? -ENOMEM : 0;
}

/* ---- answers ---- */

static const char *status_reason(unsigned status) {
        switch (status) {
        case 200: return "OK";
        case 400: return "Bad Request";
        case 404: return "Not Found";
        case 405: return "Method Not Allowed";
        case 408: return "Request Timeout";
        case 413: return "Content Too Large";
        case 431: return "Request Header Fields Too Large";
        case 501: return "Not Implemented";
        case 503: return "Service Unavailable";
        case 505: return "HTTP Version Not Supported";
        default: return "Internal Server Error";
        }
}

void metrics_response_done(MetricsResponse *resp) {
        metrics_text_done(&resp->head);
        metrics_text_done(&resp->body);
}

/* The status line and headers, for a body of @body_bytes (sent or, for HEAD, not). */
static int write_head(MetricsResponse *resp, unsigned status, const char *content_type, const char *extra,
                      size_t body_bytes, bool keep_alive_1_0) {
        resp->status = status;
        return metrics_text_printf(&resp->head,
                                   "HTTP/1.1 %u %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n%s%s\r\n",
                                   status, status_reason(status), content_type, body_bytes, extra ? extra : "",
                                   resp->close ? "Connection: close\r\n"
                                   : keep_alive_1_0 ? "Connection: keep-alive\r\n"
                                                    : "");
}

/* A short plain-text answer. */
static int respond_text(MetricsResponse *resp, unsigned status, const char *extra, const char *text,
                        bool head_only, bool keep_alive_1_0) {
        size_t n = strlen(text);
        int r;

        r = write_head(resp, status, "text/plain; charset=utf-8", extra, n + 1, keep_alive_1_0);
        if (r >= 0 && !head_only)
                r = metrics_text_printf(&resp->body, "%s\n", text);
        if (r < 0)
                metrics_response_done(resp);
        return r;
}

/* The answer to a scrape: the exposition, or why the query cannot be answered. */
static int respond_scrape(Service *svc, const HttpRequest *req, unsigned max_groups, bool basic,
                          MetricsResponse *resp) {
        bool head_only = req->method == HTTP_METHOD_HEAD, ka10 = req->keep_alive && req->minor == 0;
        const char *extra = "Vary: Accept-Encoding\r\n";
        char reason[REFUSAL_MESSAGE_MAX + 64];
        MetricsQuery *mq;
        Refusal rf;
        int r;

        /* The prefix is a whole path: off the thread's stack. */
        mq = malloc(sizeof(*mq));
        if (!mq)
                r = -ENOMEM;
        else if (metrics_query_parse(req->query, req->query_len, mq, reason, sizeof(reason)) < 0) {
                free(mq);
                return respond_text(resp, 400, NULL, reason, head_only, ka10);
        } else {
                if (mq->basic < 0)
                        mq->basic = basic;
                refusal_init(&rf);
                r = metrics_render(svc, mq, max_groups, &resp->body, &rf);
                free(mq);
        }
        if (r < 0 && r != -ENOMEM) {
                metrics_text_done(&resp->body);
                snprintf(reason, sizeof(reason), "prefix: %s", rf.message[0] ? rf.message : "not a group path");
                return respond_text(resp, r == -ENOENT ? 404 : 400, NULL, reason, head_only, ka10);
        }
        if (r < 0) {
                log_warning_errno(r, "Cannot answer a metrics scrape: %m");
                metrics_response_done(resp);
                resp->close = true;
                return respond_text(resp, 500, NULL, "Out of memory", head_only, false);
        }
        if (req->accept_gzip) {
                MetricsText z = {};

                r = gzip_text(&resp->body, &z);
                metrics_text_done(&resp->body);
                resp->body = z;
                extra = "Content-Encoding: gzip\r\nVary: Accept-Encoding\r\n";
        }
        if (r >= 0)
                r = write_head(resp, 200, METRICS_CONTENT_TYPE, extra, resp->body.len, ka10);
        /* HEAD: the length of the body that GET would send, and no body. */
        if (head_only)
                metrics_text_done(&resp->body);
        if (r < 0)
                metrics_response_done(resp);
        return r;
}

int metrics_respond(Service *svc, const HttpRequest *req, unsigned max_groups, bool basic, MetricsResponse *ret) {
        bool head_only = req->method == HTTP_METHOD_HEAD, ka10 = req->keep_alive && req->minor == 0;
        MetricsResponse resp = { .close = !req->keep_alive };
        int r;

        if (req->path_len != strlen("/metrics") || memcmp(req->path, "/metrics", req->path_len) != 0)
                r = respond_text(&resp, 404, NULL, "Not found; the metrics are at /metrics", head_only, ka10);
        else if (req->method != HTTP_METHOD_GET && req->method != HTTP_METHOD_HEAD)
                r = respond_text(&resp, 405, "Allow: GET, HEAD\r\n", "Method not allowed; use GET", false,
                                 ka10);
        else
                r = respond_scrape(svc, req, max_groups, basic, &resp);
        if (r < 0)
                return r;
        *ret = resp;
        return 0;
}

int metrics_respond_error(int error, MetricsResponse *ret) {
        MetricsResponse resp = { .close = true };
        unsigned status;
        const char *text;
        int r;

        switch (error) {
        case -EMSGSIZE:
                status = 431, text = "The request head is too large";
                break;
        case -EFBIG:
                status = 413, text = "The request body is too large";
                break;
        case -EPROTONOSUPPORT:
                status = 505, text = "Only HTTP/1.0 and HTTP/1.1 are served";
                break;
        case -EOPNOTSUPP:
                status = 501, text = "Transfer-Encoding is not supported";
                break;
        case -ETIMEDOUT:
                status = 408, text = "The request did not arrive in time";
                break;
        case -EBUSY:
                status = 503, text = "Too busy; try again later";
                break;
        case -EBADMSG:
                status = 400, text = "Malformed request";
                break;
        default:
                status = 500, text = "Internal error";
                break;
        }
        r = respond_text(&resp, status, NULL, text, false, false);
        if (r < 0)
                return r;
        *ret = resp;
        return 0;
}
