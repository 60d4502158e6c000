/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * The daemon's own counters, for the metrics listener: requests by
 * operation, status and transport with their durations, sessions and
 * connections by transport, events fanned out and lost, state saves and
 * their fsyncs, statistics flushes. Process-wide (one daemon per
 * process), written with relaxed atomic adds on the hot paths and summed
 * by a scrape: no lock is ever taken to count.
 */

#include <stdbool.h>
#include <stdint.h>

#include "core/model.h"

typedef enum ServiceTransport {
        SERVICE_TRANSPORT_SOCKET,
        SERVICE_TRANSPORT_BUS,
        _SERVICE_TRANSPORT_MAX,
        _SERVICE_TRANSPORT_INVALID = -22,
} ServiceTransport;

/* The operations, by their socket names (the bus's methods map onto them). */
typedef enum ServiceOp {
        SERVICE_OP_OTHER, /* unknown or unset: a malformed request */
        SERVICE_OP_HELLO,
        SERVICE_OP_CREATE_GROUP,
        SERVICE_OP_CREATE_TRANSIENT_GROUP,
        SERVICE_OP_REMOVE_GROUP,
        SERVICE_OP_SET_LIMITS,
        SERVICE_OP_GET_GROUP,
        SERVICE_OP_LIST_GROUPS,
        SERVICE_OP_CHARGE,
        SERVICE_OP_UNCHARGE,
        SERVICE_OP_ATTACH,
        SERVICE_OP_MOVE,
        SERVICE_OP_GET_CLIENT,
        SERVICE_OP_RESET_PEAK,
        SERVICE_OP_SUBSCRIBE,
        SERVICE_OP_STOCK_SETUP,
        SERVICE_OP_IMPORT_CGROUPS,
        SERVICE_OP_ADD_RULE,
        SERVICE_OP_REMOVE_RULE,
        SERVICE_OP_LIST_RULES,
        SERVICE_OP_SET_OWNER,
        SERVICE_OP_GET_INFO,
        SERVICE_OP_LIST_SESSIONS,
        SERVICE_OP_PRUNE_MIRRORS,
        SERVICE_OP_ADD_REGION,
        SERVICE_OP_REMOVE_REGION,
        SERVICE_OP_LIST_REGIONS,
        SERVICE_OP_TRANSFER,
        SERVICE_OP_EVICT_VALUABLE,
        SERVICE_OP_SET_RECLAIMABLE,
        SERVICE_OP_RECLAIM_DONE,
        SERVICE_OP_RECLAIM,
        _SERVICE_OP_MAX,
        _SERVICE_OP_INVALID = -22,
} ServiceOp;

/* The histograms and their fixed bucket bounds (selfstats.c). */
typedef enum SelfHistogram {
        SELF_HIST_REQUEST_SOCKET, /* memacctd_request_duration_seconds{transport="socket"} */
        SELF_HIST_REQUEST_BUS,
        SELF_HIST_FSYNC,          /* memacctd_fsync_duration_seconds */
        SELF_HIST_FLUSH,          /* memacctd_stats_flush_duration_seconds */
        _SELF_HIST_MAX,
} SelfHistogram;

#define SELF_HIST_BOUNDS 6

/* A histogram as a scrape reads it: per-bucket (not cumulative) counts, the last past every bound. */
typedef struct SelfHistogramRead {
        const double *bounds; /* SELF_HIST_BOUNDS upper bounds in seconds, ascending */
        uint64_t counts[SELF_HIST_BOUNDS + 1];
        double sum_sec;
} SelfHistogramRead;

typedef enum SelfCounter {
        SELF_EVENTS_DROPPED,       /* events lost: the fan-out could not encode them */
        SELF_STATE_SAVES,          /* state saves that succeeded */
        SELF_STATE_SAVE_FAILURES,  /* state saves that failed */
        _SELF_COUNTER_MAX,
} SelfCounter;

/* Wire statuses (proto/status.h MemStatus, 12 today) a request count has room for; more count as the last. */
#define SELF_STATUS_MAX 16

const char *service_transport_to_string(ServiceTransport t);
const char *service_op_to_string(ServiceOp op);
/** service_op_from_string() - the op of a socket name ("create_group"); SERVICE_OP_OTHER if none. */
ServiceOp service_op_from_string(const char *s);
/** selfstats_event_kind_to_string() - "memory", "moved", "group_added"...; NULL out of range. */
const char *selfstats_event_kind_to_string(EventKind k);

/** selfstats_clock_nsec() - CLOCK_MONOTONIC in nanoseconds: the start of a timed request. */
uint64_t selfstats_clock_nsec(void);

/**
 * selfstats_request() - one request of @op on @t ended with the wire
 * status @status (MemStatus: the transport maps its errno, so the table
 * stays in one place, proto/status.c); @start_nsec of
 * selfstats_clock_nsec() at its start adds its duration, 0 adds none.
 * Any thread; relaxed adds only.
 *
 * Return: the clock at its end when it was timed, else 0: a transport
 * serving a burst of requests starts the next one's clock there and
 * reads the clock once per request, not twice.
 */
uint64_t selfstats_request(ServiceTransport t, ServiceOp op, unsigned status, uint64_t start_nsec);

/** selfstats_observe() - add @nsec to histogram @h. Any thread. */
void selfstats_observe(SelfHistogram h, uint64_t nsec);

/** selfstats_count() - add one to @c. Any thread. */
void selfstats_count(SelfCounter c);

/** selfstats_event() - one event of @kind fanned out. Any thread. */
void selfstats_event(EventKind kind);

/** selfstats_sessions_add(), selfstats_connections_add() - a gauge of @t moves by @delta. Any thread. */
void selfstats_sessions_add(ServiceTransport t, int delta);
void selfstats_connections_add(ServiceTransport t, int delta);

/* ---- reading, for a scrape (any thread) ---- */

/** selfstats_requests() - requests of @op on @t with wire status @status (MemStatus). */
uint64_t selfstats_requests(ServiceTransport t, ServiceOp op, unsigned status);
uint64_t selfstats_counter(SelfCounter c);
uint64_t selfstats_events(EventKind kind);
int64_t selfstats_sessions(ServiceTransport t);
int64_t selfstats_connections(ServiceTransport t);
void selfstats_histogram(SelfHistogram h, SelfHistogramRead *ret);
