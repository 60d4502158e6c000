/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Effective protection
 *
 * A group's min and low protect its usage from reclaim, but only as far as
 * its ancestors' protection reaches. The kernel's five rules
 * (mm/page_counter.c, effective_protection()):
 *
 *  1. On the first level below the reclaim root, effective = declared.
 *  2. Lower levels are capped by the parent's effective value.
 *  3. Overcommit (children claim more than the parent has): the parent's
 *     protection is shared in proportion to each child's *used* protection.
 *  4. Undercommit: no sharing; each child gets at most its own setting.
 *  5. With recursive protection, protection the children leave unclaimed
 *     floats to them in proportion to their *unprotected* usage.
 */

#include "protection.h"

int64_t effective_protection(int64_t usage, int64_t parent_usage, int64_t setting,
                             int64_t parent_effective, int64_t siblings_protected,
                             bool recursive) {
        int64_t protected = MIN(usage, setting), ep;

        /* Rule 3. Both factors are below 2^62 and the product can pass
         * 2^63, so it is taken in 128 bits; the kernel's pages never get
         * that big, bytes can. */
        if (siblings_protected > parent_effective)
                return (int64_t) ((__int128) protected * parent_effective / siblings_protected);

        ep = protected;
        if (!recursive)
                return ep; /* rule 4 */

        /* Rule 5. The three comparisons guard the division and tolerate
         * inputs that were not read atomically together. */
        if (parent_effective > siblings_protected && parent_usage > siblings_protected &&
            usage > protected) {
                __int128 unclaimed = (__int128) (parent_effective - siblings_protected) *
                                     (usage - protected) / (parent_usage - siblings_protected);
                ep += (int64_t) unclaimed;
        }
        return ep;
}

void counter_effective_protection(const MemCounter *root, const MemCounter *c, bool recursive,
                                  int64_t *ret_emin, int64_t *ret_elow) {
        const MemCounter *path[256];
        int64_t emin = 0, elow = 0;
        size_t n = 0;

        /* Collect the path root..c (exclusive of root); depth is bounded
         * by the group registry far below 256. */
        for (const MemCounter *i = c; i && i != root && i->parent && n < ELEMENTSOF(path);
             i = i->parent)
                path[n++] = i;

        while (n > 0) {
                const MemCounter *i = path[--n], *parent = i->parent;
                int64_t usage = counter_read(i);

                if (usage == 0) {
                        emin = elow = 0;
                } else if (parent == root || !parent->parent) {
                        /* Rule 1: raw settings, not capped by usage. */
                        emin = counter_read_limit(&i->min);
                        elow = counter_read_limit(&i->low);
                } else {
                        int64_t parent_usage = counter_read(parent);

                        emin = effective_protection(
                                usage, parent_usage, counter_read_limit(&i->min), emin,
                                atomic_load_explicit(&parent->children_min_usage,
                                                     memory_order_relaxed),
                                recursive);
                        elow = effective_protection(
                                usage, parent_usage, counter_read_limit(&i->low), elow,
                                atomic_load_explicit(&parent->children_low_usage,
                                                     memory_order_relaxed),
                                recursive);
                }
        }
        *ret_emin = emin;
        *ret_elow = elow;
}
