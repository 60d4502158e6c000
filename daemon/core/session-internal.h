/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Session and client helpers shared inside the core only (session.c,
 * session-regions.c, move.c). */

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "group-internal.h"
#include "session.h"

static inline int64_t load64(_Atomic int64_t *v) {
        return atomic_load_explicit(v, memory_order_relaxed);
}

/* A single writer's update: the atomics only make concurrent readers
 * well-defined, and compile to a plain load and store. */
static inline void store64(_Atomic int64_t *v, int64_t x) {
        atomic_store_explicit(v, x, memory_order_relaxed);
}

/*
 * A session's sums of what it holds (held[] by stat item, region_held[]
 * by region slot). Only the session's own thread adds to them, but a
 * stock drain may take from them on another thread, and only for
 * sessions with a stock page: the others update them with a plain load
 * and store (no locked instruction). s->stock is set by the owner thread
 * itself, so reading it here is safe.
 */
static inline void held_add(MemSession *s, _Atomic int64_t *v, int64_t bytes) {
        if (s->stock)
                atomic_fetch_add(v, bytes);
        else
                store64(v, load64(v) + bytes);
}

/* Take @bytes out of *@v unless fewer are held: a CAS when a drain may take at the same time (held_add()). */
static inline bool held_take(MemSession *s, _Atomic int64_t *v, int64_t bytes) {
        int64_t cur = load64(v);

        if (!s->stock) {
                if (cur < bytes)
                        return false;
                store64(v, cur - bytes);
                return true;
        }
        do {
                if (cur < bytes)
                        return false;
        } while (!atomic_compare_exchange_weak(v, &cur, cur - bytes));
        return true;
}

/**
 * client_lookup() - the client of process @pid instance @instance, or
 * NULL. The caller is in an RCU read-side section.
 */
MemClient *client_lookup(MemCore *core, pid_t pid, uint64_t instance);

/*
 * Fast path 3: mem_cgroup_begin_update_page_stat() after "memcg: use a
 * global flag to avoid taking a lock when no move is in progress"
 * (Kamezawa Hiroyuki, 2012; docs/kernel.md).
 *
 * Accounting a session's charge reads the session's group and updates that
 * group's counters, statistics and the session's held sums; a move of the
 * session must not change the group in between. Moves are rare, so the
 * update path reads one read-mostly global, the count of moves in
 * progress, and takes no lock when it is 0. The caller is inside an RCU
 * read-side section that lasts until session_end_update(); a mover raises
 * the count and then waits for a grace period before it touches anything
 * (session_move()), so every update that saw 0 has finished before the
 * move starts, and every update that starts later sees the count and
 * falls back to the group's move_lock, re-checking the group under it.
 *
 * Before the patch the per-group moving count was read on every update
 * (-DMEMACCT_BEFORE_PATCH): a dependent load from the group, on the line
 * other sessions' movers write.
 */
static inline MemGroup *session_begin_update(MemSession *s, bool *ret_locked) {
        MemGroup *g, *now;

        *ret_locked = false;
#ifndef MEMACCT_BEFORE_PATCH
        /*
         * The count first, the group after, both acquire (plain loads on
         * x86): a count of 0 either predates a move's increment, and that
         * move's grace period waits for us, or comes from a finished move's
         * decrement, and then the group read after it is the new one.
         */
        if (_likely_(atomic_load_explicit(&s->core->moving, memory_order_acquire) == 0))
                return atomic_load_explicit(&s->group, memory_order_acquire);
#endif
        g = atomic_load_explicit(&s->group, memory_order_acquire);
        while (g) {
                if (atomic_load_explicit(&g->moving_account, memory_order_acquire) <= 0) {
                        /* Not moving now; but a move may have finished
                         * between our two loads: then the group changed. */
                        now = atomic_load_explicit(&s->group, memory_order_acquire);
                        if (now == g)
                                break;
                        g = now;
                        continue;
                }
                pthread_mutex_lock(&g->move_lock);
                now = atomic_load(&s->group);
                if (now == g) {
                        *ret_locked = true;
                        break;
                }
                pthread_mutex_unlock(&g->move_lock);
                g = now;
        }
        return g;
}

static inline void session_end_update(MemGroup *g, bool locked) {
        if (locked)
                pthread_mutex_unlock(&g->move_lock);
}

/**
 * charge_drain_retry() - try_charge_memcg()'s drain_all_stock() step: @r
 * is a first attempt's result in region @key; with MEM_CHARGE_DRAIN in
 * @flags and a refusal, drain the stocks under the refusing group and
 * call @again once if that released anything, else raise oom there
 * (unless @flags has MEM_CHARGE_NO_OOM).
 * Return: @r, or @again's result.
 */
int charge_drain_retry(MemCore *core, int key, int r, unsigned flags, MemChargeResult *ret,
                       int (*again)(void *ctx, unsigned flags, MemChargeResult *ret), void *ctx);

/**
 * stock_counter_drain() - drain_stock() of counter @index of @s's page:
 * empty it, add what it held to the drain total at @drained, and take as
 * much from the session's sum @held (NULL: none), never more than it
 * holds. The caller uncharges what is returned. Return: the bytes taken.
 */
uint64_t stock_counter_drain(MemSession *s, unsigned index, unsigned drained, _Atomic int64_t *held);

/**
 * session_drain_region() - drain_stock() of @s's page counter in device
 * region @key: uncharge from @g (the session's group, held still by the
 * caller's session_begin_update()) what it held. Return: the bytes released.
 */
uint64_t session_drain_region(MemSession *s, MemGroup *g, int key);
