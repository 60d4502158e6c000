/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Charging a group
 *
 * A charge is a counter walk (counter.c) plus what the kernel's
 * try_charge_memcg() does around it: the max and oom events on refusal,
 * the high events and the throttle penalty on success, and the statistics
 * update. Kept charges belong to the group; their per-item sums let an
 * uncharge beyond what is kept be refused instead of underflowing.
 */

#include "charge.h"
#include "core.h"
#include "group-internal.h"
#include "stock.h"

void charge_result_done(MemChargeResult *r) {
        if (r && r->refused)
                r->refused = group_unref(r->refused);
}

/*
 * calculate_overage() and calculate_high_delay() of mm/memcontrol.c in µs:
 * overage is (usage - high) / high in 2^-20 units; the penalty grows with
 * its square so that a group just above high is barely slowed and one far
 * above is slowed to the 2 s cap. 128-bit intermediates: bytes are up to
 * 2^62 where the kernel's pages stay small.
 */
uint64_t charge_high_delay_usec(int64_t usage, int64_t high, uint64_t bytes) {
        unsigned __int128 overage, penalty;
        uint64_t batches_x64;

        if (usage <= high)
                return 0;
        high = MAX(high, 1);
        overage = ((unsigned __int128) (usage - high) << 20) / (uint64_t) high;
        if (overage == 0)
                return 0;
        penalty = overage * overage;
        if (penalty > ((unsigned __int128) 1 << 90))
                return MEM_HIGH_DELAY_MAX_USEC;
        penalty = (penalty * 1000000) >> 20 >> 14;
        /* The kernel scales by the pages over high per MEMCG_CHARGE_BATCH;
         * one charge never counts for less than a batch, as each kernel
         * charge adds at least a batch to memcg_nr_pages_over_high. */
        batches_x64 = MAX(bytes / 4096, (uint64_t) 64);
        penalty = penalty * batches_x64 / 64;
        if (penalty > MEM_HIGH_DELAY_MAX_USEC)
                penalty = MEM_HIGH_DELAY_MAX_USEC;
        if (penalty <= MEM_HIGH_DELAY_MIN_USEC)
                return 0;
        return (uint64_t) penalty;
}

/* The limit part: counters and the events of a refusal. Return: 0, or 1
 * when some level may be above its high; or a negative errno. */
static int charge_counters(MemGroup *g, uint64_t bytes, unsigned flags, MemChargeResult *res) {
        MemCounter *fail = NULL;
        int r;

        if (flags & MEM_CHARGE_FORCE) {
                r = counter_charge(&g->counter, bytes);
                if (r < 0)
                        return r;
                if (r > 0) {
                        /* Forced past a max: say so, and raise max where it
                         * was passed, as the kernel's force path does. */
                        res->over_max = true;
                        for (MemGroup *i = g; i; i = i->parent)
                                if (counter_read(&i->counter) > counter_read_limit(&i->counter.max))
                                        group_event_raise(i, MEM_EVENT_MAX);
                }
                /* Past a max or within every one, a forced charge is then
                 * an ordinary one: its high events and throttle as any
                 * charge's. Forced charges are rare: let the high walk
                 * look rather than note high on the way up. */
                return 1;
        }

        r = stock_charge(g->core, &g->counter, bytes);
        if (r != MEM_STOCK_MISS)
                return r;
        r = counter_try_charge(&g->counter, NULL, bytes, &fail);
        if (r == -EDQUOT) {
                MemGroup *refused = group_from_counter(fail);

                group_event_raise(refused, MEM_EVENT_MAX);
                if (!(flags & MEM_CHARGE_NO_OOM))
                        group_event_raise(refused, MEM_EVENT_OOM);
                res->refused = group_ref(refused);
        }
        return r;
}

/* The accounting part: statistics, and, when @over_high, the high events
 * and penalty of every level the charge left above high (the walk in
 * done_restock()). */
static void charge_account(MemCore *core, MemGroup *g, uint64_t bytes, MemStatItem item,
                           bool over_high, MemChargeResult *res) {
        stats_mod(&core->stats, core_thread_slot(core), g->id, item, (int64_t) bytes);
        if (_likely_(!over_high))
                return;
        for (MemGroup *i = g; i; i = i->parent) {
                int64_t usage = counter_read(&i->counter);
                int64_t high = counter_read_limit(&i->counter.high);
                uint64_t delay;

                if (_likely_(usage <= high))
                        continue;
                group_event_raise(i, MEM_EVENT_HIGH);
                res->over_high = MAX(res->over_high, (uint64_t) (usage - high));
                delay = charge_high_delay_usec(usage, high, bytes);
                res->throttle_usec = MAX(res->throttle_usec, delay);
        }
}

int group_charge(MemCore *core, MemGroup *g, uint64_t bytes, MemStatItem item, unsigned flags,
                 MemChargeResult *ret) {
        MemChargeResult res = {};
        int r = 0;

        if (!mem_stat_item_ok(item))
                r = -EINVAL;
        else if (bytes > 0) {
                r = charge_counters(g, bytes, flags, &res);
                if (r >= 0) {
                        charge_account(core, g, bytes, item, r > 0, &res);
                        r = 0;
                }
        }
        if (ret)
                *ret = res;
        else
                charge_result_done(&res);
        return r;
}

void group_uncharge(MemCore *core, MemGroup *g, uint64_t bytes, MemStatItem item) {
        /* Statistics first: once usage is 0 the group may be removed, and
         * its statistics must be complete by then. */
        stats_mod(&core->stats, core_thread_slot(core), g->id, item, -(int64_t) bytes);
        stock_uncharge(core, &g->counter, bytes);
}

/*
 * Kept charges and uncharges run in a read-side section and check 'dead'
 * inside it: group_remove() sets 'dead', waits for a grace period and
 * then releases what 'kept' holds (see there).
 *
 * Of 'kept', 'kept_delegator' is the delegator's part, which the
 * delegate may not release. The two are separate atomics, so the order
 * of their updates keeps every reader on the safe side: a delegator's
 * charge raises the part before the total, its uncharge lowers the total
 * before the part, so a delegate's uncharge, which checks the total less
 * the part, may see too little of its own for a moment but never any of
 * the delegator's. seq_cst throughout: kept charges are rare.
 */
int group_charge_kept(MemCore *core, MemGroup *g, uint64_t bytes, MemStatItem item,
                      unsigned flags, MemChargeResult *ret) {
        MemChargeResult res = {};
        int r = 0;

        core_read_lock();
        if (!mem_stat_item_ok(item))
                r = -EINVAL;
        else if (atomic_load(&g->dead))
                r = -ENOENT;
        else if (bytes > 0) {
                bool over_high;

                r = charge_counters(g, bytes, flags, &res);
                over_high = r > 0;
                if (r >= 0 && atomic_load(&g->dead)) {
                        /* Lost the race with group_remove() (see group.c):
                         * nothing was accounted yet, so only the counters
                         * are undone. */
                        counter_uncharge(&g->counter, NULL, bytes);
                        r = -ENOENT;
                }
                if (r >= 0) {
                        if (flags & MEM_CHARGE_DELEGATOR)
                                atomic_fetch_add(&g->kept_delegator[item], (int64_t) bytes);
                        atomic_fetch_add(&g->kept[item], (int64_t) bytes);
                        charge_account(core, g, bytes, item, over_high, &res);
                        r = 0;
                }
        }
        core_read_unlock();
        if (ret)
                *ret = res;
        else
                charge_result_done(&res);
        return r;
}

int group_uncharge_kept(MemCore *core, MemGroup *g, uint64_t bytes, MemStatItem item) {
        return group_uncharge_kept_as(core, g, bytes, item, false);
}

/* The delegator's release of @bytes from the total is done: take what
 * it can of them off its own part. */
static void kept_delegator_take(MemGroup *g, MemStatItem item, int64_t bytes) {
        int64_t cur = atomic_load(&g->kept_delegator[item]);

        while (cur > 0 && !atomic_compare_exchange_weak(&g->kept_delegator[item], &cur,
                                                        cur - MIN(cur, bytes)))
                ;
}

int group_uncharge_kept_as(MemCore *core, MemGroup *g, uint64_t bytes, MemStatItem item, bool delegate) {
        int64_t cur, theirs;

        if (!mem_stat_item_ok(item))
                return -EINVAL;
        if (bytes > MEM_CHARGE_MAX)
                return -EOVERFLOW;
        core_read_lock();
        if (atomic_load(&g->dead)) {
                core_read_unlock();
                return -ENOENT;
        }
        cur = atomic_load(&g->kept[item]);
        do {
                /* Re-read on every try: a part read before a total that
                 * moved since could belong to another state. */
                theirs = delegate ? MAX(atomic_load(&g->kept_delegator[item]), 0) : 0;
                if (cur - theirs < (int64_t) bytes) {
                        core_read_unlock();
                        return -ERANGE;
                }
        } while (!atomic_compare_exchange_weak(&g->kept[item], &cur, cur - (int64_t) bytes));
        if (!delegate && bytes > 0)
                kept_delegator_take(g, item, (int64_t) bytes);
        if (bytes > 0)
                group_uncharge(core, g, bytes, item);
        core_read_unlock();
        return 0;
}

uint64_t group_kept_delegator(MemGroup *g, MemStatItem item) {
        int64_t d, k;

        if (!mem_stat_item_ok(item))
                return 0;
        /* The part first: a charge in between only makes the total larger. */
        d = atomic_load_explicit(&g->kept_delegator[item], memory_order_relaxed);
        k = atomic_load_explicit(&g->kept[item], memory_order_relaxed);
        return (uint64_t) MAX(MIN(d, k), 0);
}
