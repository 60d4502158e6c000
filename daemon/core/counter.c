/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Hierarchical counter
 *
 * A counter holds the bytes charged to a group and its whole subtree. Every
 * charge walks from the charged group to the root (or to a stop counter,
 * for moves between siblings), so a group's usage always equals the sum of
 * the live charges below it. The walk is lock-free: each level does a
 * speculative atomic add and compares the result with that level's max;
 * a level that ends above its max undoes its own add and the levels below
 * it are cancelled. This is mm/page_counter.c, byte for byte where it
 * matters.
 *
 * Invariants: usage never goes below 0; a successful try_charge never
 * leaves any counter above its max except by a concurrent forced charge or
 * forced max change, and each of those says so to its caller.
 */

#include <errno.h>

#include "counter.h"

void counter_init(MemCounter *c, MemCounter *parent) {
        *c = (MemCounter) {};
        atomic_store_explicit(&c->high, MEM_COUNTER_MAX, memory_order_relaxed);
        atomic_store_explicit(&c->max, MEM_COUNTER_MAX, memory_order_relaxed);
        c->parent = parent;
}

/*
 * Fast path 1: propagate_protected_usage() after "mm: page_counter: remove
 * unneeded atomic ops for low/min" (Shakeel Butt, 2022).
 *
 * A counter's protected usage is min(usage, min); its parent keeps the sum
 * over its children in children_min_usage, the "siblings_protected" input
 * of effective protection. Whenever usage stays above min (the common case
 * for any group that has a min at all) the protected usage does not
 * change, so the old value is read first and the exchange and the parent
 * update happen only when it differs: one plain load instead of an atomic
 * exchange on a line every charger of the subtree shares.
 *
 * The exchange is still used on the change path, never a store: two
 * racing updaters must each take the old value that the other left, so
 * the deltas they add to the parent sum to the true change.
 *
 * Before the patch the gate was "min || min_usage", and a counter with a
 * min paid the exchange on every charge and uncharge. Building with
 * -DMEMACCT_BEFORE_PATCH restores that for the benchmark.
 */
static inline void propagate_one(_Atomic int64_t *usage_slot, _Atomic int64_t *parent_sum,
                          int64_t setting, int64_t usage) {
        int64_t protected = MIN(usage, setting), old;

#ifdef MEMACCT_BEFORE_PATCH
        if (setting == 0 && atomic_load_explicit(usage_slot, memory_order_relaxed) == 0)
                return;
        old = atomic_exchange(usage_slot, protected);
#else
        old = atomic_load_explicit(usage_slot, memory_order_relaxed);
        if (protected == old)
                return;
        old = atomic_exchange(usage_slot, protected);
#endif
        if (protected != old)
                atomic_fetch_add_explicit(parent_sum, protected - old, memory_order_relaxed);
}

static inline void propagate_protected_usage(MemCounter *c, int64_t usage) {
        MemCounter *parent = c->parent;

        if (!parent)
                return;
        propagate_one(&c->min_usage, &parent->children_min_usage,
                      counter_read_limit(&c->min), usage);
        propagate_one(&c->low_usage, &parent->children_low_usage,
                      counter_read_limit(&c->low), usage);
}

/*
 * The peak is informational: a lost update under a race leaves it slightly
 * low, which page_counter accepts rather than pay a CAS loop per charge.
 */
static void update_watermark(MemCounter *c, int64_t usage) {
        if (usage > atomic_load_explicit(&c->watermark, memory_order_relaxed))
                atomic_store_explicit(&c->watermark, usage, memory_order_relaxed);
}

static void cancel_one(MemCounter *c, uint64_t bytes) {
        int64_t new = atomic_fetch_sub(&c->usage, (int64_t) bytes) - (int64_t) bytes;

        if (_unlikely_(new < 0)) {
                /* Clamp like page_counter_cancel(); unreachable while the core
                 * tracks every charge, and tested as such. */
                atomic_fetch_add(&c->usage, -new);
                new = 0;
        }
        propagate_protected_usage(c, new);
}

int counter_charge(MemCounter *c, uint64_t bytes) {
        MemCounter *i;
        int r = 0;

        if (bytes > MEM_CHARGE_MAX)
                return -EOVERFLOW;
        for (i = c; i; i = i->parent) {
                int64_t new = atomic_fetch_add(&i->usage, (int64_t) bytes) + (int64_t) bytes;

                if (_unlikely_(new > MEM_COUNTER_MAX)) {
                        atomic_fetch_sub(&i->usage, (int64_t) bytes);
                        for (MemCounter *j = c; j != i; j = j->parent)
                                cancel_one(j, bytes);
                        return -EOVERFLOW;
                }
                propagate_protected_usage(i, new);
                update_watermark(i, new);
                if (new > counter_read_limit(&i->max))
                        r = 1;
        }
        return r;
}

static int try_charge(MemCounter *c, MemCounter *stop, uint64_t bytes, MemCounter **ret_fail, bool count) {
        bool over_high = false;
        MemCounter *i, *j;

        if (bytes > MEM_CHARGE_MAX)
                return -EOVERFLOW;
        for (i = c; i != stop; i = i->parent) {
                /*
                 * The add is seq_cst, a full barrier: it is ordered before
                 * the read of max, which is what makes counter_set_max()
                 * race-free (either we see its new limit or it sees our
                 * usage and retries).
                 */
                int64_t new = atomic_fetch_add(&i->usage, (int64_t) bytes) + (int64_t) bytes;

                /*
                 * Benign race, as page_counter_try_charge() says of its
                 * own: a charge that is refused here has held @bytes on
                 * every level below @i (and briefly on @i) until it is
                 * undone, so a concurrent charge may see usage up to
                 * @bytes too high and be refused although the final
                 * usage would have admitted it. Every undo follows at
                 * once, the error is bounded by the charges in flight,
                 * and a charge is never admitted past a max.
                 */
                if (new > atomic_load(&i->max)) {
                        atomic_fetch_sub(&i->usage, (int64_t) bytes);
                        /* Racy in the kernel; a relaxed add costs the same
                         * here and only runs on the failure path. */
                        if (count)
                                atomic_fetch_add_explicit(&i->failcnt, 1, memory_order_relaxed);
                        for (j = c; j != i; j = j->parent)
                                cancel_one(j, bytes);
                        if (ret_fail)
                                *ret_fail = i;
                        return -EDQUOT;
                }
                propagate_protected_usage(i, new);
                update_watermark(i, new);
                /* high sits in the line max was just read from: noting it
                 * here spares callers a second walk on every charge. */
                over_high |= new > counter_read_limit(&i->high);
        }
        return over_high ? 1 : 0;
}

int counter_try_charge(MemCounter *c, MemCounter *stop, uint64_t bytes, MemCounter **ret_fail) {
        return try_charge(c, stop, bytes, ret_fail, true);
}

int counter_try_charge_batch(MemCounter *c, uint64_t bytes) {
        return try_charge(c, NULL, bytes, NULL, false);
}

void counter_uncharge(MemCounter *c, MemCounter *stop, uint64_t bytes) {
        for (MemCounter *i = c; i != stop; i = i->parent)
                cancel_one(i, bytes);
}

int counter_set_max(MemCounter *c, int64_t limit) {
        for (;;) {
                int64_t usage = atomic_load(&c->usage), old;

                if (usage > limit)
                        return -EBUSY;
                old = atomic_exchange(&c->max, limit);
                if (atomic_load(&c->usage) <= usage || limit >= old)
                        return 0;
                /* A charge slipped in under the old limit: put it back and
                 * look again, as page_counter_set_max() does. */
                atomic_store(&c->max, old);
        }
}

int counter_set_max_force(MemCounter *c, int64_t limit) {
        atomic_exchange(&c->max, limit);
        return atomic_load(&c->usage) > limit ? 1 : 0;
}

void counter_set_high(MemCounter *c, int64_t high) {
        atomic_store_explicit(&c->high, high, memory_order_relaxed);
}

/* As page_counter_set_min/low(): re-propagate on the whole path so the
 * ancestors' children_*_usage reflect the new setting at once. */
void counter_set_min(MemCounter *c, int64_t min) {
        atomic_store(&c->min, min);
        for (MemCounter *i = c; i; i = i->parent)
                propagate_protected_usage(i, counter_read(i));
}

void counter_set_low(MemCounter *c, int64_t low) {
        atomic_store(&c->low, low);
        for (MemCounter *i = c; i; i = i->parent)
                propagate_protected_usage(i, counter_read(i));
}

void counter_reset_watermark(MemCounter *c) {
        atomic_store_explicit(&c->watermark, counter_read(c), memory_order_relaxed);
}

int counter_apply_limits(MemCounter *c, const MemLimits *l, bool force) {
        int r = 0;

        if (l->set & MEM_LIMIT_MAX) {
                int64_t max = counter_clamp_limit(l->max);

                r = force ? counter_set_max_force(c, max) : counter_set_max(c, max);
                if (r < 0)
                        return r;
        }
        if (l->set & MEM_LIMIT_HIGH)
                counter_set_high(c, counter_clamp_limit(l->high));
        if (l->set & MEM_LIMIT_LOW)
                counter_set_low(c, counter_clamp_limit(l->low));
        if (l->set & MEM_LIMIT_MIN)
                counter_set_min(c, counter_clamp_limit(l->min));
        return r;
}

uint64_t counter_margin(const MemCounter *c) {
        uint64_t margin = UINT64_MAX;

        for (; c; c = c->parent) {
                int64_t max = counter_read_limit(&c->max), usage = counter_read(c);

                if (max >= MEM_COUNTER_MAX)
                        continue;
                margin = MIN(margin, usage >= max ? 0 : (uint64_t) (max - usage));
        }
        return margin;
}
