/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Reclaim planning (reclaim.h; docs/kernel.md, "reclaim.c").
 *
 * The kernel reclaims a memory cgroup that hit its max in small steps:
 * try_charge_memcg() asks try_to_free_mem_cgroup_pages() for
 * MEMCG_CHARGE_BATCH pages, do_try_to_free_pages() walks the subtree at
 * falling priorities until a walk has reclaimed them, and each group's
 * share of a walk is get_scan_count()'s: its reclaimable size less the
 * fraction its effective protection covers, shifted right by the
 * priority. Protection is recomputed from the usage left as the walk
 * reaches each group (mem_cgroup_calculate_protection()), so a group
 * that has given much is protected more of what is left: the kernel's
 * test_memcg_min/low reach 29M/21M for children protected 75M and 25M
 * under 50M, where one proportional split would give 33M/17M.
 *
 * Here the same arithmetic runs on a snapshot, in bytes, as if every
 * take were given back at once; the layer above asks the holders for the
 * totals and plans again with what is left if they gave less. The walk is
 * the kernel's full walk in pre-order (no partial walks with a persistent
 * iterator: those trade fairness for latency, which a plan need not).
 */

#include <errno.h>
#include <stdlib.h>

#include "core.h"
#include "group-internal.h"
#include "macro.h"
#include "protection.h"
#include "reclaim.h"
#include "region.h"

/* The most steps one plan takes; a larger need takes larger steps. */
#define RECLAIM_STEPS_MAX 1024

typedef struct Walk {
        ReclaimNode *v;
        size_t n;
        bool recursive;
        int64_t *usage, *left;       /* the usage and reclaimable bytes left as the plan goes */
        int64_t *emin, *elow;        /* as of each node's last visit */
        int64_t *kids_min, *kids_low; /* children's protected usage, kept current */
        bool low_pass, low_skipped;
} Walk;

/* The protected usage of every node's children. */
static void walk_children_protected(Walk *w) {
        for (size_t i = 0; i < w->n; i++) {
                w->kids_min[i] = w->v[i].other_children_min;
                w->kids_low[i] = w->v[i].other_children_low;
        }
        for (size_t i = 1; i < w->n; i++) {
                int p = w->v[i].parent;

                w->kids_min[p] += MIN(w->usage[i], w->v[i].min);
                w->kids_low[p] += MIN(w->usage[i], w->v[i].low);
        }
}

/* Node @i and its ancestors lose @bytes of usage, and their parents'
 * sums of protected usage follow, as propagate_protected_usage() keeps
 * them on every uncharge. */
static void walk_uncharge(Walk *w, size_t i, int64_t bytes) {
        for (int j = (int) i; j >= 0; j = w->v[j].parent) {
                int p = w->v[j].parent;
                int64_t old = w->usage[j];

                w->usage[j] -= bytes;
                if (p < 0)
                        continue;
                w->kids_min[p] += MIN(w->usage[j], w->v[j].min) - MIN(old, w->v[j].min);
                w->kids_low[p] += MIN(w->usage[j], w->v[j].low) - MIN(old, w->v[j].low);
        }
}

/* mem_cgroup_calculate_protection() of node @i, its parent visited before it in this walk. */
static void walk_protection(Walk *w, size_t i) {
        int p = w->v[i].parent;

        if (i == 0 || w->usage[i] == 0) {
                /* The target is never protected; an empty group keeps
                 * nothing to protect (the kernel leaves its value stale,
                 * and its below_min() holds either way). */
                w->emin[i] = w->elow[i] = 0;
        } else if (p == 0) {
                w->emin[i] = w->v[i].min;
                w->elow[i] = w->v[i].low;
        } else {
                w->emin[i] = effective_protection(w->usage[i], w->usage[p], w->v[i].min, w->emin[p], w->kids_min[p],
                                                  w->recursive);
                w->elow[i] = effective_protection(w->usage[i], w->usage[p], w->v[i].low, w->elow[p], w->kids_low[p],
                                                  w->recursive);
        }
}

/* get_scan_count() for node @i at @priority: the bytes its walk scans. */
static int64_t walk_scan(const Walk *w, size_t i, unsigned priority) {
        int64_t size = w->left[i], protection, cgroup_size, scan;

        protection = i == 0 ? 0 : w->low_pass ? w->emin[i] : MAX(w->emin[i], w->elow[i]);
        if (protection > 0) {
                cgroup_size = MAX(w->usage[i], protection);
                scan = size - (int64_t) ((__int128) size * protection / (cgroup_size + RECLAIM_PAGE));
                scan = MAX(scan, (int64_t) RECLAIM_CLUSTER);
        } else
                scan = size;
        return scan >> priority;
}

/* One shrink_node_memcgs() walk at @priority, of at most @goal bytes per group. Return: the bytes taken. */
static int64_t walk_once(Walk *w, unsigned priority, int64_t goal) {
        int64_t total = 0;

        for (size_t i = 0; i < w->n; i++) {
                int64_t take;

                walk_protection(w, i);
                if (i > 0 && w->emin[i] >= w->usage[i])
                        continue; /* mem_cgroup_below_min(): hard protection */
                if (i > 0 && w->elow[i] >= w->usage[i]) {
                        if (!w->low_pass) {
                                w->low_skipped = true;
                                continue;
                        }
                        w->v[i].low_event = true;
                }
                if (w->left[i] <= 0)
                        continue;
                /* shrink_lruvec() scans it all, but stops once this
                 * group alone has given the step's goal. */
                take = MIN(MIN(walk_scan(w, i, priority), w->left[i]), goal);
                /* The scan's floor of a cluster would take a group a few
                 * pages below its effective min, as the kernel may; here
                 * min is a floor. */
                if (i > 0)
                        take = MIN(take, w->usage[i] - w->emin[i]);
                if (take <= 0)
                        continue;
                w->left[i] -= take;
                w->v[i].take += take;
                walk_uncharge(w, i, take);
                total += take;
        }
        return total;
}

/* do_try_to_free_pages() of @goal bytes. Return: the bytes taken. */
static int64_t walk_step(Walk *w, int64_t goal) {
        int64_t got = 0;

        w->low_pass = w->low_skipped = false;
        for (;;) {
                for (int prio = RECLAIM_PRIORITIES; prio >= 0 && got < goal; prio--)
                        got += walk_once(w, (unsigned) prio, goal);
                /* Untapped low reserves, and nothing else to take: once
                 * more, reclaiming below low (memcg_low_reclaim). */
                if (got > 0 || !w->low_skipped || w->low_pass)
                        return got;
                w->low_pass = true;
        }
}

static bool tree_ok(const ReclaimNode *v, size_t n) {
        if (n == 0 || v[0].parent != -1)
                return false;
        for (size_t i = 0; i < n; i++) {
                if (i > 0 && (v[i].parent < 0 || (size_t) v[i].parent >= i))
                        return false;
                if (v[i].usage < 0 || v[i].min < 0 || v[i].low < 0 || v[i].reclaimable < 0 ||
                    v[i].reclaimable > v[i].usage || v[i].other_children_min < 0 || v[i].other_children_low < 0)
                        return false;
        }
        return true;
}

int reclaim_plan(ReclaimNode *v, size_t n, int64_t need, bool recursive, ReclaimOutcome *ret) {
        _cleanup_free_ int64_t *scratch = NULL;
        Walk w = { .v = v, .n = n, .recursive = recursive };
        int64_t planned = 0, step;

        *ret = (ReclaimOutcome) {};
        if (!tree_ok(v, n) || need < 0)
                return -EINVAL;
        scratch = calloc(6 * n, sizeof(int64_t));
        if (!scratch)
                return -ENOMEM;
        w.usage = scratch;
        w.left = scratch + n;
        w.emin = scratch + 2 * n;
        w.elow = scratch + 3 * n;
        w.kids_min = scratch + 4 * n;
        w.kids_low = scratch + 5 * n;
        for (size_t i = 0; i < n; i++) {
                w.usage[i] = v[i].usage;
                w.left[i] = v[i].reclaimable;
                v[i].take = 0;
                v[i].low_event = false;
        }
        walk_children_protected(&w);
        step = MAX((int64_t) RECLAIM_STEP, need / RECLAIM_STEPS_MAX);
        while (planned < need) {
                int64_t got = walk_step(&w, step);

                if (got == 0)
                        break; /* nothing left that may be taken */
                planned += got;
                ret->low_pass |= w.low_pass;
        }
        ret->planned = planned;
        return 0;
}

/* @g's counter in @key; NULL when it has none there. In core_read_lock(). */
static MemCounter *counter_of(MemGroup *g, int key) {
        MemRegionState *st;

        if (key == MEM_REGION_MEMORY)
                return &g->counter;
        st = region_state(g, region_slot(key));
        return st ? &st->counter : NULL;
}

/* The node of @g in @v, added with its ancestors up to @target when missing; -1 when @g is not below @target. */
static int snapshot_node(ReclaimNode *v, MemGroup **groups, size_t *n, MemGroup *target, MemGroup *g) {
        int parent;

        for (size_t i = 0; i < *n; i++)
                if (groups[i] == g)
                        return (int) i;
        if (g == target || !g->parent)
                return -1; /* the target is node 0; the root is above every target */
        parent = snapshot_node(v, groups, n, target, g->parent);
        if (parent < 0)
                return -1;
        groups[*n] = g;
        v[*n] = (ReclaimNode) { .parent = parent };
        return (int) (*n)++;
}

int reclaim_snapshot(MemCore *core, MemGroup *target, int key, ReclaimHolder *holders, size_t n,
                     ReclaimNode **ret, size_t *ret_n, bool *ret_recursive) {
        _cleanup_free_ MemGroup **groups = NULL;
        _cleanup_free_ ReclaimNode *v = NULL;
        size_t max = 1, count = 1;
        int r = 0;

        for (size_t i = 0; i < n; i++)
                max += holders[i].group->depth;
        v = calloc(max, sizeof(*v));
        groups = calloc(max, sizeof(*groups));
        if (!v || !groups)
                return -ENOMEM;
        groups[0] = target;
        v[0] = (ReclaimNode) { .parent = -1 };

        core_read_lock();
        if (key != MEM_REGION_MEMORY && !region_find(core, key))
                r = -ENOENT;
        for (size_t i = 0; r == 0 && i < n; i++) {
                holders[i].node = snapshot_node(v, groups, &count, target, holders[i].group);
                if (holders[i].node >= 0)
                        v[holders[i].node].reclaimable += MAX(holders[i].bytes, 0);
        }
        for (size_t i = 0; r == 0 && i < count; i++) {
                const MemCounter *c = counter_of(groups[i], key);

                if (!c)
                        continue;
                v[i].usage = counter_read(c);
                v[i].min = counter_read_limit(&c->min);
                v[i].low = counter_read_limit(&c->low);
                v[i].other_children_min = atomic_load_explicit(&c->children_min_usage, memory_order_relaxed);
                v[i].other_children_low = atomic_load_explicit(&c->children_low_usage, memory_order_relaxed);
        }
        core_read_unlock();
        if (r < 0)
                return r;

        for (size_t i = 0; i < count; i++) {
                /* Counters read one by one: keep the snapshot consistent. */
                v[i].usage = MAX(v[i].usage, 0);
                v[i].reclaimable = MIN(v[i].reclaimable, v[i].usage);
        }
        for (size_t i = 1; i < count; i++) {
                ReclaimNode *p = &v[v[i].parent];

                p->other_children_min = MAX(p->other_children_min - MIN(v[i].usage, v[i].min), 0);
                p->other_children_low = MAX(p->other_children_low - MIN(v[i].usage, v[i].low), 0);
        }
        *ret_recursive = key != MEM_REGION_MEMORY || atomic_load(&core->recursive_protection);
        *ret = TAKE_PTR(v);
        *ret_n = count;
        return 0;
}

int64_t reclaim_need(MemGroup *target, int key, uint64_t bytes) {
        const MemCounter *c;
        int64_t need = 0;

        core_read_lock();
        c = counter_of(target, key);
        if (c && bytes <= MEM_CHARGE_MAX)
                need = counter_read(c) + (int64_t) bytes - counter_read_limit(&c->max);
        core_read_unlock();
        return MAX(need, 0);
}

int64_t reclaim_above(MemGroup *g, int key, uint64_t max) {
        const MemCounter *c;
        int64_t above = 0;

        core_read_lock();
        c = counter_of(g, key);
        if (c)
                above = counter_read(c) - (int64_t) MIN(max, (uint64_t) MEM_COUNTER_MAX);
        core_read_unlock();
        return MAX(above, 0);
}

size_t reclaim_over_high(MemGroup *g, int key, MemGroup **ret_groups, int64_t *ret_over, size_t max) {
        size_t n = 0;

        core_read_lock();
        for (MemGroup *i = g; i && n < max; i = i->parent) {
                const MemCounter *c = counter_of(i, key);
                int64_t over;

                if (!c)
                        continue;
                over = counter_read(c) - counter_read_limit(&c->high);
                if (over > 0 && group_tryget(i)) {
                        ret_groups[n] = i;
                        ret_over[n++] = over;
                }
        }
        core_read_unlock();
        return n;
}
