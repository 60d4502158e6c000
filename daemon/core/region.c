/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Device memory regions
 *
 * The kernel's dmem controller (kernel/cgroup/dmem.c) gives every cgroup
 * one page_counter per region a driver registered, created on first use
 * together with every ancestor's (get_cg_pool_locked()), and bounds the
 * root by the region's capacity. This is the same, in bytes, with the
 * memory controller's full set on each counter: high and its events,
 * failcnt, events and events.local, and kept charges (docs/regions.md).
 *
 * The charge itself is the one "memory" uses: counter_try_charge() on the
 * region's counters, the same max/oom/high events and throttle, so a
 * device charge costs what a memory charge costs plus one dependent load
 * (the group's slot array) on the way in.
 *
 * Lifetimes: a group's states live until the group is freed
 * (region_group_free(), after its grace period) or its region is removed
 * (region-registry.c says how a removal waits for the charges).
 */

#include <stdlib.h>
#include <string.h>

#include "core.h"
#include "group-internal.h"
#include "protection.h"
#include "region.h"
#include "stock.h"

MemRegion *region_live(MemCore *core, int key) {
        MemRegion *r;

        if (key <= 0)
                return NULL;
        r = atomic_load_explicit(&core->regions[region_slot(key)], memory_order_acquire);
        if (!r || r->key != key || atomic_load_explicit(&r->removing, memory_order_acquire))
                return NULL;
        rcu_tsan_consume(r);
        return r;
}

/* The region of @key, removing or not: for uncharges and reads. In a read section. */
MemRegion *region_find(MemCore *core, int key) {
        MemRegion *r;

        if (key <= 0)
                return NULL;
        r = atomic_load_explicit(&core->regions[region_slot(key)], memory_order_acquire);
        if (!r || r->key != key)
                return NULL;
        rcu_tsan_consume(r);
        return r;
}

MemRegionState *region_state(MemGroup *g, unsigned slot) {
        MemRegionSlot *v = atomic_load_explicit(&g->regions, memory_order_acquire);
        MemRegionState *s;

        if (!v)
                return NULL;
        s = atomic_load_explicit(&v[slot], memory_order_acquire);
        if (s)
                rcu_tsan_consume(s);
        return s;
}

/*
 * Install a state for @g, its parent's first. Installs race only with
 * each other (two first charges of one group): a compare-and-swap
 * decides, and the loser frees its copy before anyone saw it.
 */
MemRegionState *region_state_obtain(MemGroup *g, unsigned slot) {
        MemRegionState *s = region_state(g, slot), *parent = NULL, *expected = NULL;
        MemRegionSlot *v, *none = NULL;

        if (s)
                return s;
        if (g->parent) {
                parent = region_state_obtain(g->parent, slot);
                if (!parent)
                        return NULL;
        }
        v = atomic_load_explicit(&g->regions, memory_order_acquire);
        if (!v) {
                v = calloc(MEM_REGION_MAX, sizeof(*v));
                if (!v)
                        return NULL;
                if (!atomic_compare_exchange_strong(&g->regions, &none, v)) {
                        free(v);
                        v = none;
                }
        }
        s = cacheline_alloc(sizeof(*s));
        if (!s)
                return NULL;
        memset(s, 0, sizeof(*s));
        counter_init(&s->counter, parent ? &parent->counter : NULL);
        s->group = g;
        rcu_tsan_publish(s);
        if (!atomic_compare_exchange_strong(&v[slot], &expected, s)) {
                free(s);
                return expected;
        }
        /* Counted for region list. Only a live region's counters are made,
         * but for the root's, made before its region is published, which
         * core_region_add() counts itself. */
        {
                MemRegion *r = atomic_load_explicit(&g->core->regions[slot], memory_order_acquire);

                if (r)
                        atomic_fetch_add_explicit(&r->groups, 1, memory_order_relaxed);
        }
        return s;
}

static MemRegionState *state_of_counter(MemCounter *c) {
        return (MemRegionState *) ((char *) c - offsetof(MemRegionState, counter));
}

/* group_event_raise() for a region's counters. */
static void region_event_raise(MemCore *core, MemRegionState *s, int key, MemEvent ev) {
        uint64_t local = atomic_fetch_add_explicit(&s->events_local[ev], 1, memory_order_relaxed) + 1;

        for (MemCounter *c = &s->counter; c; c = c->parent)
                atomic_fetch_add_explicit(&state_of_counter(c)->events[ev], 1, memory_order_relaxed);
        if (core->event_hook)
                core->event_hook(s->group, key, ev, local, core->event_hook_userdata);
}

void region_group_event(MemCore *core, MemGroup *g, int key, MemEvent ev) {
        MemRegionState *s;

        core_read_lock();
        s = region_state(g, region_slot(key));
        if (s)
                region_event_raise(core, s, key, ev);
        core_read_unlock();
}

/* charge_counters() and charge_account() of charge.c on @s's counters. */
static int state_charge(MemCore *core, MemRegionState *s, int key, uint64_t bytes, unsigned flags,
                        MemChargeResult *res) {
        MemCounter *fail = NULL;
        int r;

        if (flags & MEM_CHARGE_FORCE) {
                r = counter_charge(&s->counter, bytes);
                if (r < 0)
                        return r;
                if (r > 0) {
                        res->over_max = true;
                        for (MemCounter *c = &s->counter; c; c = c->parent)
                                if (counter_read(c) > counter_read_limit(&c->max))
                                        region_event_raise(core, state_of_counter(c), key, MEM_EVENT_MAX);
                }
                r = 1;
        } else {
                r = stock_charge(core, &s->counter, bytes);
                if (r == MEM_STOCK_MISS)
                        r = counter_try_charge(&s->counter, NULL, bytes, &fail);
                /* drain_all_stock() of the threads' stocks and one more
                 * try; the clients' pages are drained by the session path
                 * (charge_drain_retry()), outside this read section. */
                if (r == -EDQUOT && core->stocks && stock_drain(core, fail) > 0)
                        r = counter_try_charge(&s->counter, NULL, bytes, &fail);
                if (r == -EDQUOT) {
                        MemRegionState *refused = state_of_counter(fail);

                        region_event_raise(core, refused, key, MEM_EVENT_MAX);
                        if (!(flags & MEM_CHARGE_NO_OOM))
                                region_event_raise(core, refused, key, MEM_EVENT_OOM);
                        res->refused = group_ref(refused->group);
                        return r;
                }
                if (r < 0)
                        return r;
        }
        if (_likely_(r == 0))
                return 0;
        for (MemCounter *c = &s->counter; c; c = c->parent) {
                int64_t usage = counter_read(c), high = counter_read_limit(&c->high);

                if (_likely_(usage <= high))
                        continue;
                region_event_raise(core, state_of_counter(c), key, MEM_EVENT_HIGH);
                res->over_high = MAX(res->over_high, (uint64_t) (usage - high));
                res->throttle_usec = MAX(res->throttle_usec, charge_high_delay_usec(usage, high, bytes));
        }
        return 0;
}

static int result_out(int r, MemChargeResult *res, MemChargeResult *ret) {
        if (ret)
                *ret = *res;
        else
                charge_result_done(res);
        return r;
}

int region_charge(MemCore *core, MemGroup *g, int key, uint64_t bytes, unsigned flags,
                  MemChargeResult *ret) {
        MemChargeResult own, *res = ret ? ret : &own;
        MemRegionState *s;
        int r;

        /* Into the caller's result directly: a copy per charge costs. */
        *res = (MemChargeResult) {};
        if (!region_live(core, key))
                r = -ENOENT;
        else if (bytes == 0)
                r = 0;
        else if (!(s = region_state_obtain(g, region_slot(key))))
                r = -ENOMEM;
        else {
                r = state_charge(core, s, key, bytes, flags, res);
                if (r == 0)
                        res->margin = counter_margin(&s->counter);
        }
        if (!ret)
                charge_result_done(&own);
        return r;
}

void region_uncharge(MemCore *core, MemGroup *g, int key, uint64_t bytes) {
        MemRegionState *s = region_find(core, key) ? region_state(g, region_slot(key)) : NULL;

        if (s && bytes > 0)
                stock_uncharge(core, &s->counter, bytes);
}

/* As group_charge_kept(): the 'dead' check on both sides of the charge. */
int region_charge_kept(MemCore *core, MemGroup *g, int key, uint64_t bytes, unsigned flags,
                       MemChargeResult *ret) {
        MemChargeResult res = {};
        MemRegionState *s;
        int r = 0;

        core_read_lock();
        if (atomic_load(&g->dead))
                r = -ENOENT;
        else if (!region_live(core, key))
                r = -ENOENT;
        else if (bytes > 0) {
                s = region_state_obtain(g, region_slot(key));
                r = s ? state_charge(core, s, key, bytes, flags, &res) : -ENOMEM;
                if (r == 0 && atomic_load(&g->dead)) {
                        counter_uncharge(&s->counter, NULL, bytes);
                        r = -ENOENT;
                }
                if (r == 0) {
                        if (flags & MEM_CHARGE_DELEGATOR)
                                atomic_fetch_add(&s->kept_delegator, (int64_t) bytes);
                        atomic_fetch_add(&s->kept, (int64_t) bytes);
                }
        }
        core_read_unlock();
        return result_out(r, &res, ret);
}

/* The same order rules as group_uncharge_kept_as() (charge.c). */
int region_uncharge_kept_as(MemCore *core, MemGroup *g, int key, uint64_t bytes, bool delegate) {
        MemRegionState *s;
        int64_t cur, theirs;

        if (bytes > MEM_CHARGE_MAX)
                return -EOVERFLOW;
        core_read_lock();
        if (atomic_load(&g->dead) || !region_find(core, key)) {
                core_read_unlock();
                return -ENOENT;
        }
        s = region_state(g, region_slot(key));
        if (!s) {
                core_read_unlock();
                return bytes > 0 ? -ERANGE : 0;
        }
        cur = atomic_load(&s->kept);
        do {
                theirs = delegate ? MAX(atomic_load(&s->kept_delegator), 0) : 0;
                if (cur - theirs < (int64_t) bytes) {
                        core_read_unlock();
                        return -ERANGE;
                }
        } while (!atomic_compare_exchange_weak(&s->kept, &cur, cur - (int64_t) bytes));
        if (!delegate && bytes > 0) {
                int64_t d = atomic_load(&s->kept_delegator);

                while (d > 0 && !atomic_compare_exchange_weak(&s->kept_delegator, &d,
                                                              d - MIN(d, (int64_t) bytes)))
                        ;
        }
        if (bytes > 0)
                stock_uncharge(core, &s->counter, bytes);
        core_read_unlock();
        return 0;
}

uint64_t region_kept_delegator(MemCore *core, MemGroup *g, int key) {
        MemRegionState *s;
        int64_t d = 0, k = 0;

        core_read_lock();
        s = region_find(core, key) ? region_state(g, region_slot(key)) : NULL;
        if (s) {
                d = atomic_load_explicit(&s->kept_delegator, memory_order_relaxed);
                k = atomic_load_explicit(&s->kept, memory_order_relaxed);
        }
        core_read_unlock();
        return (uint64_t) MAX(MIN(d, k), 0);
}

int region_set_limits(MemCore *core, MemGroup *g, int key, const MemLimits *l, bool force) {
        MemRegionState *s = NULL;
        int r;

        if (!g->parent && (l->set & MEM_LIMIT_MAX))
                return -EINVAL;
        if (l->set & MEM_LIMIT_MAX) {
                /* Stocked bytes are not used: they must not count against a new max. */
                core_read_lock();
                s = region_live(core, key) ? region_state(g, region_slot(key)) : NULL;
                if (s)
                        (void) stock_drain(core, &s->counter);
                core_read_unlock();
        }
        pthread_mutex_lock(&core->limits_lock);
        core_read_lock();
        if (!region_live(core, key))
                r = -ENOENT;
        else {
                s = region_state_obtain(g, region_slot(key));
                r = s ? counter_apply_limits(&s->counter, l, force) : -ENOMEM;
        }
        /* A forced max below usage: oom, as group_set_limits(); nothing
         * reclaims towards it yet. */
        if (r > 0)
                region_event_raise(core, s, key, MEM_EVENT_OOM);
        core_read_unlock();
        pthread_mutex_unlock(&core->limits_lock);
        return r;
}

int region_set_kernel_current(MemCore *core, MemGroup *g, int key, uint64_t bytes) {
        MemRegionState *s;
        int r = 0;

        core_read_lock();
        if (!region_live(core, key))
                r = -ENOENT;
        else {
                s = bytes ? region_state_obtain(g, region_slot(key)) : region_state(g, region_slot(key));
                if (s)
                        /* A sample: nothing is ordered by it. */
                        atomic_store_explicit(&s->kernel_current, bytes, memory_order_relaxed);
                else if (bytes)
                        r = -ENOMEM;
        }
        core_read_unlock();
        return r;
}

int region_reset_peak(MemCore *core, MemGroup *g, int key) {
        MemRegionState *s;
        int r = 0;

        core_read_lock();
        if (!region_find(core, key))
                r = -ENOENT;
        else if ((s = region_state(g, region_slot(key))))
                counter_reset_watermark(&s->counter);
        core_read_unlock();
        return r;
}

/* Everything but the name and capacity, from @s (NULL: a group with no
 * counter in the region reads as one with nothing charged and no limit). */
static void state_read(const MemRegionState *s, const MemGroup *reclaim_root,
                       MemRegionInfo *ret) {
        const MemCounter *c = s ? &s->counter : NULL;
        const MemRegionState *root_state = NULL;
        int64_t emin = 0, elow = 0;

        if (!s) {
                ret->current = ret->peak = ret->low = ret->min = ret->failcnt = ret->kept = 0;
                ret->kept_delegator = 0;
                ret->kernel_current = 0;
                ret->effective_min = ret->effective_low = 0;
                ret->max = ret->high = UINT64_MAX;
                memset(ret->events, 0, sizeof(ret->events));
                memset(ret->events_local, 0, sizeof(ret->events_local));
                return;
        }
        ret->current = (uint64_t) counter_read(c);
        ret->peak = (uint64_t) atomic_load_explicit(&c->watermark, memory_order_relaxed);
        ret->max = counter_limit_to_u64(counter_read_limit(&c->max));
        ret->high = counter_limit_to_u64(counter_read_limit(&c->high));
        ret->low = counter_limit_to_u64(counter_read_limit(&c->low));
        ret->min = counter_limit_to_u64(counter_read_limit(&c->min));
        ret->failcnt = atomic_load_explicit(&c->failcnt, memory_order_relaxed);
        ret->kept = (uint64_t) MAX(atomic_load_explicit(&s->kept, memory_order_relaxed), 0);
        /* Clamped to the total read before it: a delegator's charge in
         * between raises the part first (charge.c's order). */
        ret->kept_delegator =
                MIN((uint64_t) MAX(atomic_load_explicit(&s->kept_delegator, memory_order_relaxed), 0), ret->kept);
        ret->kernel_current = atomic_load_explicit(&s->kernel_current, memory_order_relaxed);
        for (int i = 0; i < _MEM_EVENT_MAX; i++) {
                ret->events[i] = atomic_load_explicit(&s->events[i], memory_order_relaxed);
                ret->events_local[i] = atomic_load_explicit(&s->events_local[i], memory_order_relaxed);
        }
        /* Protection is relative to the reclaim root's counter in this
         * region; a reclaim root with none there has nothing charged
         * below it, and neither has @s then. */
        if (reclaim_root) {
                MemCounter *p;

                for (p = s->counter.parent, root_state = s; root_state && root_state->group != reclaim_root;
                     p = p ? p->parent : NULL)
                        root_state = p ? state_of_counter(p) : NULL;
        }
        counter_effective_protection(root_state ? &root_state->counter : NULL, c, true, &emin, &elow);
        ret->effective_min = counter_limit_to_u64(emin);
        ret->effective_low = counter_limit_to_u64(elow);
}

void region_read(MemCore *core, MemGroup *g, const MemGroup *reclaim_root, MemGroupInfo *ret) {
        ret->nr_regions = 0;
        core_read_lock();
        for (unsigned slot = 1; slot < MEM_REGION_MAX; slot++) {
                MemRegion *r = atomic_load_explicit(&core->regions[slot], memory_order_acquire);
                MemRegionState *s;
                MemRegionInfo *info;

                if (!r)
                        continue;
                rcu_tsan_consume(r);
                s = region_state(g, slot);
                if (!s)
                        continue;
                info = &ret->regions[ret->nr_regions++];
                memcpy(info->name, r->name, sizeof(info->name));
                info->capacity = r->capacity;
                state_read(s, reclaim_root, info);
        }
        core_read_unlock();
}

int region_read_one(MemCore *core, MemGroup *g, int key, const MemGroup *reclaim_root,
                    MemRegionInfo *ret) {
        MemRegion *r;

        core_read_lock();
        r = region_find(core, key);
        if (r) {
                memcpy(ret->name, r->name, sizeof(ret->name));
                ret->capacity = r->capacity;
                state_read(region_state(g, region_slot(key)), reclaim_root, ret);
        }
        core_read_unlock();
        return r ? 0 : -ENOENT;
}

bool region_limits(MemCore *core, MemGroup *g, int key, MemLimits *ret) {
        MemRegionState *s;

        core_read_lock();
        s = region_find(core, key) ? region_state(g, region_slot(key)) : NULL;
        if (s)
                *ret = (MemLimits) {
                        .set = MEM_LIMIT_MAX | MEM_LIMIT_HIGH | MEM_LIMIT_LOW | MEM_LIMIT_MIN,
                        .max = counter_limit_to_u64(counter_read_limit(&s->counter.max)),
                        .high = counter_limit_to_u64(counter_read_limit(&s->counter.high)),
                        .low = counter_limit_to_u64(counter_read_limit(&s->counter.low)),
                        .min = counter_limit_to_u64(counter_read_limit(&s->counter.min)),
                };
        core_read_unlock();
        return s;
}

uint64_t region_group_margin(MemCore *core, MemGroup *g, int key) {
        unsigned slot = region_slot(key);
        uint64_t margin = UINT64_MAX;
        MemRegionState *s = NULL;

        /* group_margin()'s walk, on the region's counters, with the
         * region looked up once, not at every step. Unlike a group's own
         * counter, which lives as long as the caller's reference, these
         * are unhooked and freed after a grace period when the group or
         * the region is removed: read in the section. */
        core_read_lock();
        if (region_find(core, key))
                /* A group with no counters yet: its first ancestor with some. */
                for (MemGroup *i = g; i && !(s = region_state(i, slot)); i = i->parent)
                        ;
        if (s)
                margin = counter_margin(&s->counter);
        core_read_unlock();
        return margin;
}

/*
 * Device regions compute protection recursively, as dmem does: its
 * dmem_cgroup_calculate_protection() passes recursive_protection = true
 * to page_counter_calculate_protection() whatever the mount options.
 */
static bool state_recursive(MemCore *core, int key) {
        return key != MEM_REGION_MEMORY || atomic_load(&core->recursive_protection);
}

int region_evict_valuable(MemCore *core, MemGroup *limit, MemGroup *test, int key, bool ignore_low) {
        const MemCounter *climit, *ctest;
        int64_t used, emin, elow;
        MemRegionState *ls = NULL, *ts = NULL;
        int r;

        if (limit == test)
                return MEM_EVICT_YES;
        if (limit && !limit->parent)
                return MEM_EVICT_YES;
        if (limit && !group_is_descendant(test, limit))
                return MEM_EVICT_NO;
        core_read_lock();
        if (key != MEM_REGION_MEMORY) {
                if (!region_find(core, key)) {
                        core_read_unlock();
                        return -ENOENT;
                }
                ls = limit ? region_state(limit, region_slot(key)) : NULL;
                ts = region_state(test, region_slot(key));
        }
        if (key != MEM_REGION_MEMORY && (!ts || (limit && !ls))) {
                /* No counter: nothing charged there, nothing to take. */
                core_read_unlock();
                return MEM_EVICT_NO;
        }
        climit = key == MEM_REGION_MEMORY ? (limit ? &limit->counter : NULL) : (ls ? &ls->counter : NULL);
        ctest = key == MEM_REGION_MEMORY ? &test->counter : &ts->counter;
        counter_effective_protection(climit, ctest, state_recursive(core, key), &emin, &elow);
        used = counter_read(ctest);
        core_read_unlock();
        if (used <= emin)
                r = MEM_EVICT_NO;
        else if (ignore_low || used > elow)
                r = MEM_EVICT_YES;
        else
                r = MEM_EVICT_HIT_LOW;
        return r;
}

/* ---- moves (move.c) ---- */

int region_move_charge(MemGroup *dst, MemGroup *top, unsigned slot, uint64_t bytes, MemChargeResult *res) {
        MemRegionState *d = region_state_obtain(dst, slot), *t = region_state(top, slot);
        MemCounter *fail = NULL;
        int r;

        if (!d)
                return -ENOMEM;
        r = counter_try_charge(&d->counter, t ? &t->counter : NULL, bytes, &fail);
        if (r == -EDQUOT) {
                MemRegionState *refused = state_of_counter(fail);
                MemRegion *region = atomic_load(&dst->core->regions[slot]);

                region_event_raise(dst->core, refused, region ? region->key : 0, MEM_EVENT_MAX);
                res->refused = group_ref(refused->group);
        }
        return MIN(r, 0);
}

void region_move_uncharge(MemGroup *g, MemGroup *top, unsigned slot, uint64_t bytes) {
        MemRegionState *s = region_state(g, slot), *t = top ? region_state(top, slot) : NULL;

        if (s && bytes > 0)
                counter_uncharge(&s->counter, t ? &t->counter : NULL, bytes);
}

/* ---- groups ---- */

static void state_free_rcu(struct rcu_head *head) {
        rcu_tsan_grace_period();
        free(caa_container_of(head, MemRegionState, rcu));
}

void region_state_retire(MemRegionState *s) {
        rcu_tsan_publish(s);
        urcu_memb_call_rcu(&s->rcu, state_free_rcu);
}

/*
 * Release what a removed group keeps in every region, and unhook its
 * counters: a reference may outlive the removal, and a read through it
 * must not find counters whose region may be removed (its root's counter
 * freed) and its slot given to another. Nothing charges a dead group:
 * group_remove() waited a grace period after marking it.
 */
void region_group_release(MemCore *core, MemGroup *g) {
        MemRegionSlot *v = atomic_load_explicit(&g->regions, memory_order_acquire);

        if (!v)
                return;
        core_read_lock();
        for (unsigned slot = 1; slot < MEM_REGION_MAX; slot++) {
                MemRegionState *s = atomic_exchange(&v[slot], NULL);
                MemRegion *r;
                int64_t k;

                if (!s)
                        continue;
                /* The state is the slot's region's: an earlier region's
                 * went with it, under the same tree_lock as this. */
                r = atomic_load_explicit(&core->regions[slot], memory_order_acquire);
                if (r)
                        atomic_fetch_sub_explicit(&r->groups, 1, memory_order_relaxed);
                k = atomic_exchange(&s->kept, 0);
                atomic_store(&s->kept_delegator, 0);
                if (k > 0)
                        counter_uncharge(&s->counter, NULL, (uint64_t) k);
                stock_drain_counter(core, &s->counter);
                region_state_retire(s);
        }
        core_read_unlock();
}

void region_group_free(MemGroup *g) {
        MemRegionSlot *v = atomic_load_explicit(&g->regions, memory_order_relaxed);

        if (!v)
                return;
        for (unsigned slot = 1; slot < MEM_REGION_MAX; slot++)
                free(atomic_load_explicit(&v[slot], memory_order_relaxed));
        free(v);
}
