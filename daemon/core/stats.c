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
 *
 * A flush touches only what changed (the kernel's cgroup_rstat_updated()
 * and its per-cpu updated lists): a thread notes a group's id in its own
 * ring the first time it updates the group after a flush, and the flusher
 * folds the noted groups and their ancestors (core.c), not the whole tree.
 * docs/kernel.md, "Flushes proportional to work", has the argument; in
 * short, the thread writes the slot, then reads its "queued" flag and
 * notes the id only when the flag is clear; the flusher clears the flags
 * of the ids it takes, then runs membarrier(), then reads the slots. The
 * barrier that membarrier() forces on every running thread falls either
 * after a thread's read of the flag, which then sees it clear and notes
 * the id again for the next flush, or before it, and then the slot write
 * before that read is visible to the flusher: an update is never left
 * unnoted and unfolded. Without membarrier() every flush walks the tree.
 */

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "membarrier.h"
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
        /* A kernel or sandbox without it only costs the sparse flushes. */
        s->membarrier = membarrier_register();
        return s->threads ? 0 : -ENOMEM;
}

#define CHUNK_BYTES (MEM_STAT_CHUNK * sizeof(MemStatSlot))

static void thread_free(MemStatsThread *t, unsigned nchunks) {
        if (!t)
                return;
        for (unsigned c = 0; c < nchunks; c++) {
                if (t->slots[c])
                        munmap(t->slots[c], CHUNK_BYTES);
                free(t->queued[c]);
        }
        free(t->slots);
        free(t->queued);
        free(t->ring);
        free(t);
}

void stats_done(MemStats *s) {
        unsigned n = atomic_load(&s->nthreads);

        for (unsigned i = 0; i < n; i++)
                thread_free(s->threads[i], s->nchunks);
        free(s->threads);
        free(s->collected);
        free(s->deferred);
        pthread_mutex_destroy(&s->flush_lock);
}

/*
 * The slots straight from mmap(), not malloc() and memset(): pages of
 * zeros that take memory only once this thread writes them. Most threads
 * (the saver, housekeeping, most workers) never update most groups, and
 * at a million groups a cleared chunk per thread was 64 MiB each, paged
 * in at start. A read by the flusher maps the shared zero page.
 */
static int thread_alloc_chunk(MemStatsThread *t, unsigned chunk) {
        void *p;

        if (t->slots[chunk])
                return 0;
        t->queued[chunk] = calloc(MEM_STAT_CHUNK, sizeof(**t->queued));
        if (!t->queued[chunk])
                return -ENOMEM;
        p = mmap(NULL, CHUNK_BYTES, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED)
                return -ENOMEM;
        t->slots[chunk] = p;
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
                .queued = calloc(s->nchunks, sizeof(*t->queued)),
                .ring = calloc(MEM_STAT_RING, sizeof(*t->ring)),
        };
        if (!t->slots || !t->queued || !t->ring)
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
        /* A fresh id's slots are untouched zeros: writing zeros would only
         * page them in. */
        bool fresh = id >= s->ids_fresh;

        if (chunk >= s->nchunks)
                return -ENOSPC;
        for (unsigned i = 0; i < n; i++) {
                MemStatsThread *t = s->threads[i];
                int r = thread_alloc_chunk(t, chunk);

                if (r < 0)
                        return r;
                /* A reused id may be a removed group's: nobody writes its
                 * slots any more (removal needs a group with no charges),
                 * and the flusher only visits published groups. Its queued
                 * flag may stay set: the ring still holds the id, and the
                 * flush that takes it folds the new group, which is
                 * harmless. */
                if (fresh)
                        continue;
                for (int k = 0; k < _MEM_STAT_MAX; k++)
                        atomic_store_explicit(&t->slots[chunk][id % MEM_STAT_CHUNK].state[k], 0,
                                              memory_order_relaxed);
        }
        if (chunk >= s->chunks_ready)
                s->chunks_ready = chunk + 1;
        if (fresh)
                s->ids_fresh = id + 1;
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

/*
 * The first update of group @id by this thread since a flush took it:
 * note the id for the next flush. The ring is single-producer (this
 * thread) single-consumer (the flusher): the entry is written before
 * head is released, and a slot of the ring is reused only once tail,
 * acquired here, says the flusher has read it.
 */
static void stats_note_updated(MemStatsThread *t, _Atomic uint8_t *queued, unsigned id) {
        unsigned head = atomic_load_explicit(&t->head, memory_order_relaxed);

        if (head - atomic_load_explicit(&t->tail, memory_order_acquire) >= MEM_STAT_RING) {
                /* Full: the next flush walks every group. The flag stays
                 * clear, so the id is noted again once there is room. */
                atomic_store_explicit(&t->overflow, true, memory_order_relaxed);
                return;
        }
        t->ring[head % MEM_STAT_RING] = id;
        atomic_store_explicit(queued, 1, memory_order_relaxed);
        atomic_store_explicit(&t->head, head + 1, memory_order_release);
}

void stats_mod(MemStats *s, unsigned thread, unsigned id, MemStatItem item, int64_t bytes) {
        MemStatsThread *t = s->threads[thread];
        unsigned chunk = id / MEM_STAT_CHUNK, i = id % MEM_STAT_CHUNK;
        _Atomic int64_t *v = &t->slots[chunk][i].state[item];
        _Atomic uint8_t *queued = &t->queued[chunk][i];

        if (bytes == 0)
                return;
        /* Single writer: a relaxed load and store compile to a plain add;
         * the atomics only make the flusher's concurrent read well-defined. */
        atomic_store_explicit(v, atomic_load_explicit(v, memory_order_relaxed) + bytes,
                              memory_order_relaxed);
        /* After the slot write, with no fence: the flusher's membarrier()
         * orders the two (see the top of the file). */
        if (_unlikely_(!atomic_load_explicit(queued, memory_order_relaxed)))
                stats_note_updated(t, queued, id);
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

/* Add @id to a flusher-owned array. Return: false when out of memory. */
static bool ids_push(unsigned **ids, size_t *n, size_t *cap, unsigned id) {
        if (*n == *cap) {
                size_t c = MAX(*cap * 2, (size_t) 256);
                unsigned *p = realloc(*ids, c * sizeof(*p));

                if (!p)
                        return false;
                *ids = p;
                *cap = c;
        }
        (*ids)[(*n)++] = id;
        return true;
}

void stats_defer_id(MemStats *s, unsigned id) {
        if (!ids_push(&s->deferred, &s->ndeferred, &s->deferred_cap, id))
                s->full_next = true;
}

ssize_t stats_collect(MemStats *s, const unsigned **ret_ids) {
        unsigned n = atomic_load_explicit(&s->nthreads, memory_order_acquire);
        bool full = s->full_next || !s->membarrier, cleared = false;

        s->full_next = false;
        s->ncollected = 0;
        for (size_t i = 0; i < s->ndeferred; i++)
                full |= !ids_push(&s->collected, &s->ncollected, &s->collected_cap, s->deferred[i]);
        s->ndeferred = 0;
        for (unsigned i = 0; i < n; i++) {
                MemStatsThread *t = s->threads[i];
                unsigned head = atomic_load_explicit(&t->head, memory_order_acquire);
                unsigned tail = atomic_load_explicit(&t->tail, memory_order_relaxed);

                /* Before the ids are taken: an update that overflows from
                 * now on makes the next flush a whole one. */
                full |= atomic_exchange_explicit(&t->overflow, false, memory_order_relaxed);
                for (; tail != head; tail++) {
                        unsigned id = t->ring[tail % MEM_STAT_RING];

                        atomic_store_explicit(&t->queued[id / MEM_STAT_CHUNK][id % MEM_STAT_CHUNK], 0,
                                              memory_order_relaxed);
                        full |= !ids_push(&s->collected, &s->ncollected, &s->collected_cap, id);
                        cleared = true;
                }
                atomic_store_explicit(&t->tail, tail, memory_order_release);
        }
        /* The flags cleared, now the slots may be read (see the top). */
        if (cleared && membarrier_all() < 0)
                full = true;
        if (full)
                return -ENOBUFS;
        *ret_ids = s->collected;
        return (ssize_t) s->ncollected;
}

void stats_fold_group(MemStats *s, unsigned id, MemGroupStats *gs, MemGroupStats *parent) {
        unsigned n = atomic_load_explicit(&s->nthreads, memory_order_acquire);
        int64_t delta[_MEM_STAT_MAX] = {};

        /* A walk of every group misses on these three lines of each: ask
         * for them now, so that the misses overlap with the slots' reads
         * (the full flush ran at half speed without). */
        __builtin_prefetch(&gs->local[0], 1);
        __builtin_prefetch(&gs->total[0], 1);
        __builtin_prefetch(&gs->pending[0], 1);
        for (unsigned i = 0; i < n; i++) {
                MemStatSlot *slot = &s->threads[i]->slots[id / MEM_STAT_CHUNK][id % MEM_STAT_CHUNK];

                for (int k = 0; k < _MEM_STAT_MAX; k++)
                        delta[k] += atomic_load_explicit(&slot->state[k], memory_order_relaxed);
        }
        atomic_store_explicit(&s->folded, atomic_load_explicit(&s->folded, memory_order_relaxed) + 1,
                              memory_order_relaxed);
        /* The flusher is the only writer of local and total (flush lock):
         * a relaxed load and store, no locked add, as in stats_mod(). */
        for (int k = 0; k < _MEM_STAT_MAX; k++) {
                int64_t local = atomic_load_explicit(&gs->local[k], memory_order_relaxed), d;

                /* The slots' sum less what the last fold saw of it. */
                delta[k] -= local;
                d = delta[k] + gs->pending[k];
                if (delta[k])
                        atomic_store_explicit(&gs->local[k], local + delta[k], memory_order_relaxed);
                gs->pending[k] = 0;
                if (d == 0)
                        continue;
                atomic_store_explicit(&gs->total[k],
                                      atomic_load_explicit(&gs->total[k], memory_order_relaxed) + d,
                                      memory_order_relaxed);
                if (parent)
                        parent->pending[k] += d;
        }
}
