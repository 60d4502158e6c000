/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * Batched hierarchical statistics (memory.stat), after the kernel's
 * per-cpu memcg stats and rstat flushing (mm/memcontrol.c).
 */

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "macro.h"
#include "model.h"

/*
 * Updates are counted in 4 KiB units (a byte delta rounds up to one unit),
 * the kernel's pages: the flush threshold then bounds the bytes a reader
 * can miss, not just the number of calls.
 */
#define MEM_STAT_UNIT_BYTES 4096
/* MEMCG_CHARGE_BATCH: units a thread accumulates before it reports. */
#define MEM_STAT_BATCH 64
/* Per-thread slots are allocated for this many group ids at a time. */
#define MEM_STAT_CHUNK 1024

/* One thread's running sums for one group: written only by that thread. */
typedef struct MemStatSlot {
        _Atomic int64_t state[_MEM_STAT_MAX];
} MemStatSlot;

/* Group ids a thread can note as updated between two flushes; past that,
 * the next flush walks every group (stats_collect()). */
#define MEM_STAT_RING 4096

typedef struct MemStatsThread {
        /* Written by its thread only: on every update (updates), on the
         * first update of a group since the last flush (head, overflow). */
        unsigned updates _cacheline_aligned_;
        _Atomic unsigned head;  /* ring entries written, free-running */
        _Atomic bool overflow;  /* an update found the ring full */
        /* Read-only once allocated (registry lock). */
        MemStatSlot **slots _cacheline_aligned_; /* [chunk][id % MEM_STAT_CHUNK] */
        _Atomic uint8_t **queued;                /* same shape: the id is in the ring */
        unsigned *ring;                          /* [MEM_STAT_RING] group ids */
        /* Written by the flusher only. */
        _Atomic unsigned tail _cacheline_aligned_; /* ring entries consumed */
} MemStatsThread;

/* The statistics of one group, embedded in it. */
typedef struct MemGroupStats {
        _Atomic int64_t total[_MEM_STAT_MAX]; /* subtree, as of the last flush */
        /* This group only: the sum of its threads' slots as of the last
         * flush, which is also what the next flush subtracts to find the
         * delta (the kernel's state_prev, once per group, not per thread). */
        _Atomic int64_t local[_MEM_STAT_MAX];
        int64_t pending[_MEM_STAT_MAX];       /* children's deltas not yet folded; flusher only */
} MemGroupStats;

typedef struct MemStats {
        /* Fast path 2's flush-pressure counter: shared by every updater,
         * so it has a line of its own. */
        _Atomic int flush_pressure _cacheline_aligned_;

        pthread_mutex_t flush_lock _cacheline_aligned_;
        _Atomic uint64_t flushes;
        _Atomic uint64_t folded; /* groups folded, over all flushes */
        unsigned max_threads;
        unsigned nchunks;      /* chunk table size: ceil(max_groups / MEM_STAT_CHUNK) */
        unsigned chunks_ready; /* chunks allocated for every thread so far */
        /* Ids from here up were never given out: their slots in every
         * thread are still the zeros mmap() made (stats_prepare_id()). */
        unsigned ids_fresh;
        _Atomic unsigned nthreads;
        MemStatsThread **threads;
        bool membarrier;       /* sparse flushes possible (stats_collect()) */

        /* Flusher only: the ids a flush collected, and ids to fold at the
         * next flush though no thread updated them (stats_defer_id()). */
        unsigned *collected;
        size_t ncollected, collected_cap;
        unsigned *deferred;
        size_t ndeferred, deferred_cap;
        bool full_next; /* a deferred id could not be noted: walk all next time */
} MemStats;

int stats_init(MemStats *s, unsigned max_groups, unsigned max_threads);
void stats_done(MemStats *s);

/**
 * stats_thread_add() - give the calling thread its per-thread slots.
 * The caller serialises this with stats_prepare_id() (registry lock).
 *
 * Return: the thread's index, -ENOSPC past max_threads, -ENOMEM.
 */
int stats_thread_add(MemStats *s);

/**
 * stats_prepare_id() - make the slots of group id @id exist and read zero
 * in every thread, before the group is published. Registry lock held.
 *
 * Return: 0 or -ENOMEM.
 */
int stats_prepare_id(MemStats *s, unsigned id);

/**
 * stats_mod() - add @bytes (may be negative) to @item of group @id from the
 * calling thread (index @thread). No atomic read-modify-write: a plain
 * per-thread add, and a report to the shared flush pressure at most once
 * per MEM_STAT_BATCH units, and only while a flush is not already due.
 */
void stats_mod(MemStats *s, unsigned thread, unsigned id, MemStatItem item, int64_t bytes);

/** stats_flush_due() - more than a batch per thread is waiting. */
bool stats_flush_due(MemStats *s);

/**
 * stats_flush_begin() - take the flush lock. With @force it waits for a
 * running flush; without, it returns false when another flush runs or no
 * flush is due (the caller then reads what the last flush left).
 */
bool stats_flush_begin(MemStats *s, bool force);
void stats_flush_end(MemStats *s);

/**
 * stats_collect() - the ids of the groups updated since the last flush,
 * from every thread's ring, and the deferred ones; possibly with
 * duplicates and ids of groups removed since (the caller skips those).
 * After it returns, every update that the threads' rings no longer hold
 * is visible to the caller's loads of the slots (see stats.c). Flush lock
 * held.
 *
 * Return: the number of ids at *@ret_ids (valid until the next call), or
 * -ENOBUFS when the caller must fold every group instead: a ring
 * overflowed, memory ran out, or sparse flushes are not possible here.
 */
ssize_t stats_collect(MemStats *s, const unsigned **ret_ids);

/**
 * stats_defer_id() - have the next flush fold @id although no thread
 * updated it (its pending changed outside a flush). Flush lock held.
 */
void stats_defer_id(MemStats *s, unsigned id);

/**
 * stats_fold_group() - fold group @id's per-thread deltas and its pending
 * children's deltas into @gs, and pass the sum on to @parent's pending.
 * Flush lock held; children must be folded before their parent.
 */
void stats_fold_group(MemStats *s, unsigned id, MemGroupStats *gs, MemGroupStats *parent);
