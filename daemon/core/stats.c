/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Batched statistics
 *
 * A group's memory.stat items are updated on every charge and uncharge by
 * every worker thread, so an update must not touch a line another thread
 * writes. Each thread keeps running sums per group in its own slots; a
 * flush folds what changed since the last flush ("prev") bottom-up into
 * the groups' hierarchical totals (the kernel's per-cpu state/state_prev
 * and rstat flush). Only the flusher writes totals, prev and pending, under
 * the flush lock; readers read totals with relaxed loads.
 *
 * How stale a total may be is bounded twice, as in the kernel: by
 * MEM_STAT_BATCH units per thread (a reader flushes when more is waiting,
 * see fast path 2 in stats_mod()) and by the daemon's periodic flush.
 */

#include <stdlib.h>
#include <string.h>

#include "stats.h"

static const char *const mem_stat_item_table[_MEM_STAT_MAX] = {
        [MEM_STAT_ANON] = "anon",     [MEM_STAT_FILE] = "file",     [MEM_STAT_SHMEM] = "shmem",
        [MEM_STAT_KERNEL] = "kernel", [MEM_STAT_SOCK] = "sock",     [MEM_STAT_SWAP] = "swap",
        [MEM_STAT_DEVICE] = "device", [MEM_STAT_OTHER] = "other",
};

DEFINE_STRING_TABLE(mem_stat_item, MemStatItem, _MEM_STAT_MAX)

int stats_init(MemStats *s, unsigned max_groups, unsigned max_threads) {
        *s = (MemStats) {
                .max_threads = max_threads,
                .nchunks = (max_groups + MEM_STAT_CHUNK - 1) / MEM_STAT_CHUNK,
        };
        pthread_mutex_init(&s->flush_lock, NULL);
        s->threads = calloc(max_threads, sizeof(*s->threads));
        return s->threads ? 0 : -ENOMEM;
}

static void thread_free(MemStatsThread *t, unsigned nchunks) {
        if (!t)
                return;
        for (unsigned c = 0; c < nchunks; c++) {
                free(t->slots[c]);
                free(t->prev[c]);
        }
        free(t->slots);
        free(t->prev);
        free(t);
}

void stats_done(MemStats *s) {
        unsigned n = atomic_load(&s->nthreads);

        for (unsigned i = 0; i < n; i++)
                thread_free(s->threads[i], s->nchunks);
        free(s->threads);
        pthread_mutex_destroy(&s->flush_lock);
}

static int thread_alloc_chunk(MemStatsThread *t, unsigned chunk) {
        if (t->slots[chunk])
                return 0;
        t->slots[chunk] = cacheline_alloc(MEM_STAT_CHUNK * sizeof(MemStatSlot));
        t->prev[chunk] = calloc(MEM_STAT_CHUNK, sizeof(MemStatPrev));
        if (!t->slots[chunk] || !t->prev[chunk])
                return -ENOMEM;
        memset(t->slots[chunk], 0, MEM_STAT_CHUNK * sizeof(MemStatSlot));
        return 0;
}

int stats_thread_add(MemStats *s) {
        unsigned n = atomic_load(&s->nthreads);
        MemStatsThread *t;

        if (n >= s->max_threads)
                return -ENOSPC;
        t = cacheline_alloc(sizeof(*t));
        if (!t)
                return -ENOMEM;
        *t = (MemStatsThread) {
                .slots = calloc(s->nchunks, sizeof(*t->slots)),
                .prev = calloc(s->nchunks, sizeof(*t->prev)),
        };
        if (!t->slots || !t->prev)
                goto fail;
        for (unsigned c = 0; c < s->chunks_ready; c++)
                if (thread_alloc_chunk(t, c) < 0)
                        goto fail;
        s->threads[n] = t;
        /* Release: a flusher that sees the count sees the thread's slots. */
        atomic_store_explicit(&s->nthreads, n + 1, memory_order_release);
        return (int) n;
fail:
        thread_free(t, s->nchunks);
        return -ENOMEM;
}

int stats_prepare_id(MemStats *s, unsigned id) {
        unsigned chunk = id / MEM_STAT_CHUNK, n = atomic_load(&s->nthreads);

        if (chunk >= s->nchunks)
                return -ENOSPC;
        for (unsigned i = 0; i < n; i++) {
                MemStatsThread *t = s->threads[i];
                int r = thread_alloc_chunk(t, chunk);

                if (r < 0)
                        return r;
                /* The id may be a removed group's: nobody writes its slots
                 * any more (removal needs a group with no charges), and the
                 * flusher only visits published groups. */
                for (int k = 0; k < _MEM_STAT_MAX; k++)
                        atomic_store_explicit(&t->slots[chunk][id % MEM_STAT_CHUNK].state[k], 0,
                                              memory_order_relaxed);
                t->prev[chunk][id % MEM_STAT_CHUNK] = (MemStatPrev) {};
        }
        if (chunk >= s->chunks_ready)
                s->chunks_ready = chunk + 1;
        return 0;
}

static unsigned bytes_to_units(int64_t bytes) {
        uint64_t a = bytes < 0 ? -(uint64_t) bytes : (uint64_t) bytes;
        uint64_t u = (a + MEM_STAT_UNIT_BYTES - 1) / MEM_STAT_UNIT_BYTES;

        return u > UINT32_MAX / 2 ? UINT32_MAX / 2 : (unsigned) u;
}

/*
 * Fast path 2: memcg_rstat_updated() after "mm: memcg: add a threshold to
 * the flush of memcg stats" (Jiebin Sun, 2022; docs/kernel.md).
 *
 * A thread counts its own pending units without atomics and, once it has
 * passed a batch, reports the batches to the shared flush pressure. Once
 * the pressure is above the number of threads a flush is already due, and
 * further reports would only bounce the counter's line between CPUs for
 * nothing: so the atomic add is skipped while the pressure is at or past
 * the threshold, and the thread's count is dropped either way. The read is
 * relaxed: seeing a stale value costs at most one needless add, or one
 * skipped add that the next batch of any thread makes up for.
 *
 * Before the patch every batch did the atomic add (-DMEMACCT_BEFORE_PATCH).
 */
static void stats_updated(MemStats *s, MemStatsThread *t, int64_t bytes) {
        unsigned x = t->updates + bytes_to_units(bytes);

        if (x > MEM_STAT_BATCH) {
#ifndef MEMACCT_BEFORE_PATCH
                if (atomic_load_explicit(&s->flush_pressure, memory_order_relaxed) <=
                    (int) atomic_load_explicit(&s->nthreads, memory_order_relaxed))
#endif
                        atomic_fetch_add_explicit(&s->flush_pressure, (int) (x / MEM_STAT_BATCH),
                                                  memory_order_relaxed);
                x = 0;
        }
        t->updates = x;
}

void stats_mod(MemStats *s, unsigned thread, unsigned id, MemStatItem item, int64_t bytes) {
        MemStatsThread *t = s->threads[thread];
        _Atomic int64_t *v = &t->slots[id / MEM_STAT_CHUNK][id % MEM_STAT_CHUNK].state[item];

        if (bytes == 0)
                return;
        /* Single writer: a relaxed load and store compile to a plain add;
         * the atomics only make the flusher's concurrent read well-defined. */
        atomic_store_explicit(v, atomic_load_explicit(v, memory_order_relaxed) + bytes,
                              memory_order_relaxed);
        stats_updated(s, t, bytes);
}

bool stats_flush_due(MemStats *s) {
        return atomic_load_explicit(&s->flush_pressure, memory_order_relaxed) >
               (int) atomic_load_explicit(&s->nthreads, memory_order_relaxed);
}

bool stats_flush_begin(MemStats *s, bool force) {
        if (force) {
                pthread_mutex_lock(&s->flush_lock);
                return true;
        }
        if (!stats_flush_due(s))
                return false;
        return pthread_mutex_trylock(&s->flush_lock) == 0;
}

void stats_flush_end(MemStats *s) {
        atomic_store_explicit(&s->flush_pressure, 0, memory_order_relaxed);
        atomic_fetch_add_explicit(&s->flushes, 1, memory_order_relaxed);
        pthread_mutex_unlock(&s->flush_lock);
}

void stats_fold_group(MemStats *s, unsigned id, MemGroupStats *gs, MemGroupStats *parent) {
        unsigned n = atomic_load_explicit(&s->nthreads, memory_order_acquire);
        int64_t delta[_MEM_STAT_MAX] = {};

        for (unsigned i = 0; i < n; i++) {
                MemStatsThread *t = s->threads[i];
                MemStatSlot *slot = &t->slots[id / MEM_STAT_CHUNK][id % MEM_STAT_CHUNK];
                MemStatPrev *prev = &t->prev[id / MEM_STAT_CHUNK][id % MEM_STAT_CHUNK];

                for (int k = 0; k < _MEM_STAT_MAX; k++) {
                        int64_t cur = atomic_load_explicit(&slot->state[k], memory_order_relaxed);

                        delta[k] += cur - prev->state[k];
                        prev->state[k] = cur;
                }
        }
        for (int k = 0; k < _MEM_STAT_MAX; k++) {
                int64_t d = delta[k] + gs->pending[k];

                if (delta[k])
                        atomic_fetch_add_explicit(&gs->local[k], delta[k], memory_order_relaxed);
                gs->pending[k] = 0;
                if (d == 0)
                        continue;
                atomic_fetch_add_explicit(&gs->total[k], d, memory_order_relaxed);
                if (parent)
                        parent->pending[k] += d;
        }
}
