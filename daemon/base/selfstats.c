/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The daemon's own counters
 *
 * Every counter is a relaxed atomic in one static table. Relaxed is
 * enough: each counter is independent and only ever added to (a gauge
 * added to and taken from), no other memory is published through it,
 * and a scrape only wants a recent value of each; atomicity alone keeps
 * concurrent adds from being lost. What relaxed does not give is a
 * consistent cut across counters: a scrape may see a histogram's bucket
 * before its sum moved. So a histogram keeps per-bucket counts and no
 * count of its own: the exposition's _count is the sum of the buckets it
 * read, and equals the +Inf bucket by construction; only _sum may lag by
 * the observations in flight.
 *
 * The cost on a request is one clock read at its start and one at its
 * end, and three adds (the request, its bucket, the sum) to cache lines
 * the two workers share; the request's own work (a protobuf decode, a
 * tree walk) dwarfs them. Per-thread slots would save the bouncing but
 * need a registry of threads to sum; not worth it at this rate.
 */

#include <stdatomic.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "macro.h"
#include "base/selfstats.h"

/* Requests and flushes take microseconds; fsyncs milliseconds to seconds. */
static const double fast_bounds[SELF_HIST_BOUNDS] = { 1e-5, 1e-4, 1e-3, 1e-2, 1e-1, 1.0 };
static const double slow_bounds[SELF_HIST_BOUNDS] = { 1e-4, 1e-3, 1e-2, 1e-1, 1.0, 10.0 };

typedef struct Histogram {
        _Atomic uint64_t counts[SELF_HIST_BOUNDS + 1];
        _Atomic uint64_t sum_nsec;
} Histogram;

static struct {
        _Atomic uint64_t requests[_SERVICE_TRANSPORT_MAX][_SERVICE_OP_MAX][SELF_STATUS_MAX];
        Histogram hist[_SELF_HIST_MAX];
        _Atomic uint64_t counters[_SELF_COUNTER_MAX];
        _Atomic uint64_t events[EVENT_LIMITS_CHANGED + 1];
        _Atomic int64_t sessions[_SERVICE_TRANSPORT_MAX], connections[_SERVICE_TRANSPORT_MAX];
} self;

static const char *const transport_names[_SERVICE_TRANSPORT_MAX] = {
        [SERVICE_TRANSPORT_SOCKET] = "socket",
        [SERVICE_TRANSPORT_BUS] = "bus",
};

static const char *const op_names[_SERVICE_OP_MAX] = {
        [SERVICE_OP_OTHER] = "other",
        [SERVICE_OP_HELLO] = "hello",
        [SERVICE_OP_CREATE_GROUP] = "create_group",
        [SERVICE_OP_CREATE_TRANSIENT_GROUP] = "create_transient_group",
        [SERVICE_OP_REMOVE_GROUP] = "remove_group",
        [SERVICE_OP_SET_LIMITS] = "set_limits",
        [SERVICE_OP_GET_GROUP] = "get_group",
        [SERVICE_OP_LIST_GROUPS] = "list_groups",
        [SERVICE_OP_CHARGE] = "charge",
        [SERVICE_OP_UNCHARGE] = "uncharge",
        [SERVICE_OP_ATTACH] = "attach",
        [SERVICE_OP_MOVE] = "move",
        [SERVICE_OP_GET_CLIENT] = "get_client",
        [SERVICE_OP_RESET_PEAK] = "reset_peak",
        [SERVICE_OP_SUBSCRIBE] = "subscribe",
        [SERVICE_OP_STOCK_SETUP] = "stock_setup",
        [SERVICE_OP_IMPORT_CGROUPS] = "import_cgroups",
        [SERVICE_OP_ADD_RULE] = "add_rule",
        [SERVICE_OP_REMOVE_RULE] = "remove_rule",
        [SERVICE_OP_LIST_RULES] = "list_rules",
        [SERVICE_OP_SET_OWNER] = "set_owner",
        [SERVICE_OP_GET_INFO] = "get_info",
        [SERVICE_OP_LIST_SESSIONS] = "list_sessions",
        [SERVICE_OP_PRUNE_MIRRORS] = "prune_mirrors",
        [SERVICE_OP_ADD_REGION] = "add_region",
        [SERVICE_OP_REMOVE_REGION] = "remove_region",
        [SERVICE_OP_LIST_REGIONS] = "list_regions",
        [SERVICE_OP_TRANSFER] = "transfer",
        [SERVICE_OP_EVICT_VALUABLE] = "evict_valuable",
        [SERVICE_OP_SET_RECLAIMABLE] = "set_reclaimable",
        [SERVICE_OP_RECLAIM_DONE] = "reclaim_done",
        [SERVICE_OP_RECLAIM] = "reclaim",
};

static const char *const event_kind_names[EVENT_LIMITS_CHANGED + 1] = {
        [EVENT_MEMORY] = "memory",
        [EVENT_MOVED] = "moved",
        [EVENT_GROUP_ADDED] = "group_added",
        [EVENT_GROUP_REMOVED] = "group_removed",
        [EVENT_LIMITS_CHANGED] = "limits_changed",
};

const char *service_transport_to_string(ServiceTransport t) {
        return t >= 0 && t < _SERVICE_TRANSPORT_MAX ? transport_names[t] : NULL;
}

const char *service_op_to_string(ServiceOp op) {
        return op >= 0 && op < _SERVICE_OP_MAX ? op_names[op] : NULL;
}

ServiceOp service_op_from_string(const char *s) {
        for (ServiceOp op = 0; op < _SERVICE_OP_MAX; op++)
                if (strcmp(op_names[op], s) == 0)
                        return op;
        return SERVICE_OP_OTHER;
}

const char *selfstats_event_kind_to_string(EventKind k) {
        return k >= 0 && k <= EVENT_LIMITS_CHANGED ? event_kind_names[k] : NULL;
}

uint64_t selfstats_clock_nsec(void) {
        return clock_now_nsec(CLOCK_MONOTONIC);
}

static void add(_Atomic uint64_t *c) {
        atomic_fetch_add_explicit(c, 1, memory_order_relaxed);
}

void selfstats_observe(SelfHistogram h, uint64_t nsec) {
        const double *bounds = h == SELF_HIST_FSYNC ? slow_bounds : fast_bounds;
        double sec = (double) nsec / 1e9;
        size_t i = 0;

        if (h < 0 || h >= _SELF_HIST_MAX)
                return;
        while (i < SELF_HIST_BOUNDS && sec > bounds[i])
                i++;
        add(&self.hist[h].counts[i]);
        atomic_fetch_add_explicit(&self.hist[h].sum_nsec, nsec, memory_order_relaxed);
}

uint64_t selfstats_request(ServiceTransport t, ServiceOp op, unsigned status, uint64_t start_nsec) {
        uint64_t end_nsec;

        if (t < 0 || t >= _SERVICE_TRANSPORT_MAX)
                return 0;
        if (op < 0 || op >= _SERVICE_OP_MAX)
                op = SERVICE_OP_OTHER;
        add(&self.requests[t][op][MIN(status, SELF_STATUS_MAX - 1u)]);
        if (start_nsec == 0)
                return 0;
        end_nsec = selfstats_clock_nsec();
        selfstats_observe(t == SERVICE_TRANSPORT_SOCKET ? SELF_HIST_REQUEST_SOCKET : SELF_HIST_REQUEST_BUS,
                          end_nsec - start_nsec);
        return end_nsec;
}

void selfstats_count(SelfCounter c) {
        if (c >= 0 && c < _SELF_COUNTER_MAX)
                add(&self.counters[c]);
}

void selfstats_event(EventKind kind) {
        if (kind >= 0 && kind <= EVENT_LIMITS_CHANGED)
                add(&self.events[kind]);
}

void selfstats_sessions_add(ServiceTransport t, int delta) {
        if (t >= 0 && t < _SERVICE_TRANSPORT_MAX)
                atomic_fetch_add_explicit(&self.sessions[t], delta, memory_order_relaxed);
}

void selfstats_connections_add(ServiceTransport t, int delta) {
        if (t >= 0 && t < _SERVICE_TRANSPORT_MAX)
                atomic_fetch_add_explicit(&self.connections[t], delta, memory_order_relaxed);
}

uint64_t selfstats_requests(ServiceTransport t, ServiceOp op, unsigned status) {
        if (t < 0 || t >= _SERVICE_TRANSPORT_MAX || op < 0 || op >= _SERVICE_OP_MAX || status >= SELF_STATUS_MAX)
                return 0;
        return atomic_load_explicit(&self.requests[t][op][status], memory_order_relaxed);
}

uint64_t selfstats_counter(SelfCounter c) {
        return c >= 0 && c < _SELF_COUNTER_MAX ? atomic_load_explicit(&self.counters[c], memory_order_relaxed) : 0;
}

uint64_t selfstats_events(EventKind kind) {
        return kind >= 0 && kind <= EVENT_LIMITS_CHANGED
                       ? atomic_load_explicit(&self.events[kind], memory_order_relaxed)
                       : 0;
}

int64_t selfstats_sessions(ServiceTransport t) {
        return t >= 0 && t < _SERVICE_TRANSPORT_MAX ? atomic_load_explicit(&self.sessions[t], memory_order_relaxed)
                                                    : 0;
}

int64_t selfstats_connections(ServiceTransport t) {
        return t >= 0 && t < _SERVICE_TRANSPORT_MAX
                       ? atomic_load_explicit(&self.connections[t], memory_order_relaxed)
                       : 0;
}

void selfstats_histogram(SelfHistogram h, SelfHistogramRead *ret) {
        *ret = (SelfHistogramRead) { .bounds = h == SELF_HIST_FSYNC ? slow_bounds : fast_bounds };
        if (h < 0 || h >= _SELF_HIST_MAX)
                return;
        for (size_t i = 0; i <= SELF_HIST_BOUNDS; i++)
                ret->counts[i] = atomic_load_explicit(&self.hist[h].counts[i], memory_order_relaxed);
        ret->sum_sec = (double) atomic_load_explicit(&self.hist[h].sum_nsec, memory_order_relaxed) / 1e9;
}
