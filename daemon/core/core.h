/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * The accounting core: one object that owns the group tree, the statistics,
 * the sessions and clients. No I/O, no transport types: every transport
 * calls these functions.
 *
 * Threads: every thread that calls into a core registers with it first
 * (core_thread_register()). Group lookups and reads run under
 * core_read_lock() (RCU) without any global lock.
 */

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <urcu/rculfhash.h>

#include "group.h"
#include "rcu-tsan.h"
#include "stats.h"

/*
 * Told of every event raised, on the thread that raised it, inside no
 * core lock but possibly inside core_read_lock(): it must not wait for a
 * grace period. @local is the group's local count after the event;
 * @region the key of the region whose counter raised it (region.h).
 */
typedef void (*MemEventHook)(MemGroup *g, int region, MemEvent ev, uint64_t local, void *userdata);

typedef struct MemSession MemSession;

/*
 * Told when a session was moved to @dst, on the mover's thread, with the
 * core's move_mutex held (and clients_lock for client_move()): it may only
 * queue work. The session is alive for the duration of the call.
 */
typedef void (*MemMoveHook)(MemSession *s, MemGroup *dst, void *userdata);

typedef struct MemCoreConfig {
        unsigned max_threads;   /* threads that may register */
        unsigned max_groups;    /* groups, the root included */
        unsigned max_depth;     /* path components */
        uint64_t rss_threshold; /* bytes a session's RSS member drifts before it syncs */
        bool recursive_protection;
        /* Each registered thread keeps a charge stock (stock.h): charges
         * in batches, the surplus kept, as the kernel's memcg_stock. What
         * a group reads as current then includes stocked bytes. */
        bool charge_stock;
} MemCoreConfig;

#define MEM_CORE_CONFIG_DEFAULT                                                               \
        ((MemCoreConfig) {                                                                    \
                .max_threads = 64,                                                            \
                .max_groups = 65536,                                                          \
                .max_depth = 32,                                                              \
                .rss_threshold = 64 * 4096,                                                   \
                .recursive_protection = false,                                                \
                .charge_stock = false,                                                        \
        })

struct MemCore {
        MemCoreConfig config;

        /* Writers of the tree (create, remove, thread registration). */
        pthread_mutex_t tree_lock;
        /* Writers of limits (group_set_limits()). */
        pthread_mutex_t limits_lock;
        struct cds_lfht *groups;
        MemGroup *root;
        unsigned ngroups;
        unsigned next_id;
        unsigned *free_ids;
        unsigned nfree_ids;
        /* Group of each id, for the flusher (stats_collect() gives ids);
         * set once a group is linked, cleared under the flush lock when
         * it is removed. */
        _Atomic(MemGroup *) *by_id;
        /* The flusher's: the groups a sparse flush folds. */
        MemGroup **flush_set;
        size_t flush_set_cap;

        MemStats stats;

        /*
         * Fast path 3: the number of moves in progress anywhere. Read on
         * every stat update, written twice per move: read-mostly, so it
         * gets a line of its own.
         */
        _Atomic int moving _cacheline_aligned_;
        /* Odd while a move changes counters; snapshot readers retry. */
        _Atomic unsigned move_seq;
        pthread_mutex_t move_mutex _cacheline_aligned_;

        pthread_mutex_t clients_lock;
        struct cds_lfht *clients;

        /* Sessions with a stock page, for drains (session.c). */
        pthread_mutex_t stock_lock;
        struct cds_list_head stock_sessions;

        /* The device regions by slot (region.c); slot 0 is memory's and
         * stays NULL. Writers hold regions_lock, readers RCU. */
        pthread_mutex_t regions_lock;
        _Atomic(struct MemRegion *) regions[MEM_REGION_MAX];
        unsigned region_gen;

        /* Every group's pressure record (pressure.c): stalls are rare. */
        pthread_mutex_t pressure_lock;

        /* Called on every event raised / every move; set once before use. */
        MemEventHook event_hook;
        void *event_hook_userdata;
        MemMoveHook move_hook;
        void *move_hook_userdata;

        _Atomic int64_t rss_threshold;
        _Atomic bool recursive_protection;

        /* config.max_threads charge stocks, by thread slot (stock.c); NULL
         * without config.charge_stock. */
        struct MemStock *stocks;
};

/**
 * core_new() - create a core with the root group "/".
 * Return: 0, -EINVAL for a config out of range, -ENOMEM.
 */
int core_new(const MemCoreConfig *config, MemCore **ret);

/**
 * core_free() - free the core. Every session must be gone and every
 * registered thread but the caller unregistered.
 */
MemCore *core_free(MemCore *core);
DEFINE_TRIVIAL_CLEANUP_FUNC(MemCore *, core_free);

/**
 * core_thread_register() - let the calling thread use @core (RCU reader
 * registration and per-thread statistics slots). A thread uses one core
 * at a time. Slots are never reused (their sums stay part of the totals),
 * so max_threads bounds registrations over the core's life: the daemon's
 * threads are long-lived. Return: 0, -ENOSPC past max_threads, -ENOMEM.
 */
int core_thread_register(MemCore *core);
void core_thread_unregister(MemCore *core);

/** core_thread_slot() - the calling thread's index in @core. */
unsigned core_thread_slot(MemCore *core);

static inline void core_read_lock(void) {
        urcu_memb_read_lock();
}

static inline void core_read_unlock(void) {
        rcu_tsan_reader_done();
        urcu_memb_read_unlock();
}

/**
 * core_stats_flush() - fold every thread's pending statistics into the
 * tree. Without @force, only when a flush is due (the threshold of fast
 * path 2); the daemon's timer calls it with @force every interval.
 */
void core_stats_flush(MemCore *core, bool force);

/** core_set_event_hook() - install the event hook; before other threads use the core. */
void core_set_event_hook(MemCore *core, MemEventHook hook, void *userdata);
/** core_set_move_hook() - install the move hook; before other threads use the core. */
void core_set_move_hook(MemCore *core, MemMoveHook hook, void *userdata);

void core_set_recursive_protection(MemCore *core, bool on);
void core_set_rss_threshold(MemCore *core, uint64_t bytes);
unsigned core_group_count(MemCore *core);

/**
 * core_read_usage_consistent() - read the usage of @n groups as one
 * snapshot with respect to moves: a move is in all of them or none.
 */
void core_read_usage_consistent(MemCore *core, MemGroup *const *groups, size_t n,
                                uint64_t *ret_usage);
