/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Device memory regions: the registry
 *
 * The regions themselves, daemon-wide, as kernel/cgroup/dmem.c's
 * dmem_cgroup_register_region() and dmem_cgroup_unregister_region()
 * keep them: a name, a capacity that bounds the root, a slot in the
 * core's table, and a key that carries a generation (region.h).
 *
 * Lifetimes. A region lives from core_region_add() until
 * core_region_remove(), which goes ahead only if nothing is charged to
 * it: the root's usage, which counts every group's, is 0. It checks that
 * first, then marks the region removing, waits a grace period (every
 * charge that missed the mark is over, every later one sees it and is
 * refused with -ENOENT) and checks again: a charge that slipped in before
 * the mark makes it clear the mark and refuse. Only a charge racing the
 * removal of an unused region is ever refused for it. It then unhooks every
 * group's state under tree_lock and frees them after a grace period.
 * Uncharges do not look at the mark, so whoever holds a charge can always
 * give it back, and the removal retried then succeeds. A group's states
 * live until the group is freed (region_group_free(), after its grace
 * period) or its region is removed.
 */

#include <stdlib.h>
#include <string.h>

#include "core.h"
#include "group-internal.h"
#include "region.h"
#include "session.h"
#include "stock.h"

static bool region_char_ok(char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
               strchr("._:/@+-", c);
}

int mem_region_name_check(const char *name) {
        size_t n = 0;

        if (!name || !*name)
                return -EINVAL;
        for (; name[n]; n++) {
                if (n >= MEM_REGION_NAME_MAX)
                        return -ENAMETOOLONG;
                if (!region_char_ok(name[n]))
                        return -EINVAL;
        }
        return 0;
}

static void region_free_rcu(struct rcu_head *head) {
        rcu_tsan_grace_period();
        free(caa_container_of(head, MemRegion, rcu));
}


/* Under regions_lock. Return: the slot of @name, or 0. */
static unsigned slot_of(MemCore *core, const char *name) {
        for (unsigned slot = 1; slot < MEM_REGION_MAX; slot++) {
                MemRegion *r = atomic_load_explicit(&core->regions[slot], memory_order_relaxed);

                if (r && (strcmp(r->name, name) == 0))
                        return slot;
        }
        return 0;
}

int core_region_add(MemCore *core, const char *name, uint64_t capacity) {
        MemRegionState *root;
        unsigned slot;
        MemRegion *r;
        int ret;

        ret = mem_region_name_check(name);
        if (ret < 0)
                return ret;
        if ((strcmp(name, MEM_REGION_MEMORY_NAME) == 0))
                return -EINVAL;
        pthread_mutex_lock(&core->regions_lock);
        slot = slot_of(core, name);
        if (slot > 0) {
                r = atomic_load_explicit(&core->regions[slot], memory_order_relaxed);
                ret = r->capacity == capacity && !atomic_load(&r->removing) ? r->key : -EEXIST;
                goto out;
        }
        for (slot = 1; slot < MEM_REGION_MAX; slot++)
                if (!atomic_load_explicit(&core->regions[slot], memory_order_relaxed))
                        break;
        if (slot == MEM_REGION_MAX) {
                ret = -ENOSPC;
                goto out;
        }
        r = calloc(1, sizeof(*r));
        if (!r) {
                ret = -ENOMEM;
                goto out;
        }
        core->region_gen = (core->region_gen + 1) % (INT32_MAX / MEM_REGION_MAX);
        r->key = (int) ((MAX(core->region_gen, 1u)) * MEM_REGION_MAX + slot);
        r->capacity = capacity;
        strcpy(r->name, name);
        /* The root's counters first, bounded by the capacity: nobody can
         * charge the region before it is published below. */
        root = region_state_obtain(core->root, slot);
        if (!root) {
                free(r);
                ret = -ENOMEM;
                goto out;
        }
        atomic_init(&r->groups, 1); /* the root, whose counters bound it */
        counter_set_max_force(&root->counter, counter_clamp_limit(capacity));
        rcu_tsan_publish(r);
        atomic_store_explicit(&core->regions[slot], r, memory_order_release);
        ret = r->key;
out:
        pthread_mutex_unlock(&core->regions_lock);
        return ret;
}

/* Unhook @g's state in @slot for freeing; a group_walk() callback. */
static int state_unhook(MemGroup *g, void *userdata) {
        MemRegionSlot *v = atomic_load_explicit(&g->regions, memory_order_acquire);
        unsigned slot = *(unsigned *) userdata;
        MemRegionState *s = v ? atomic_exchange(&v[slot], NULL) : NULL;

        if (s)
                region_state_retire(s);
        return 0;
}

int core_region_remove(MemCore *core, const char *name) {
        MemRegionState *root;
        unsigned slot;
        MemRegion *r;

        if (name && (strcmp(name, MEM_REGION_MEMORY_NAME) == 0))
                return -EINVAL;
        pthread_mutex_lock(&core->regions_lock);
        slot = name ? slot_of(core, name) : 0;
        if (slot == 0) {
                pthread_mutex_unlock(&core->regions_lock);
                return -ENOENT;
        }
        r = atomic_load_explicit(&core->regions[slot], memory_order_relaxed);
        /* Stocked bytes are charged but not used: they go back first,
         * the clients' pages, then the threads' stocks. */
        (void) core_drain_stock(core, core->root, r->key);
        core_read_lock();
        root = region_state(core->root, slot);
        if (root)
                (void) stock_drain(core, &root->counter);
        core_read_unlock();
        /* Charged now: refused before the mark, so that a removal that is
         * refused never makes a concurrent charge fail. */
        root = region_state(core->root, slot);
        if (root && counter_read(&root->counter) != 0) {
                pthread_mutex_unlock(&core->regions_lock);
                return -EBUSY;
        }
        atomic_store(&r->removing, true);
        urcu_memb_synchronize_rcu();
        rcu_tsan_grace_period();
        root = region_state(core->root, slot);
        if (root && counter_read(&root->counter) != 0) {
                atomic_store(&r->removing, false);
                pthread_mutex_unlock(&core->regions_lock);
                return -EBUSY;
        }
        /* Nothing is charged and nothing can be: unpublish, then unhook
         * every group's state. Creates and removals of groups wait. */
        atomic_store_explicit(&core->regions[slot], NULL, memory_order_release);
        pthread_mutex_lock(&core->tree_lock);
        core_read_lock();
        (void) group_walk(core->root, state_unhook, &slot);
        core_read_unlock();
        pthread_mutex_unlock(&core->tree_lock);
        rcu_tsan_publish(r);
        urcu_memb_call_rcu(&r->rcu, region_free_rcu);
        pthread_mutex_unlock(&core->regions_lock);
        return 0;
}

int core_region_lookup(MemCore *core, const char *name) {
        int key = -ENOENT;

        if (!name || !*name || (strcmp(name, MEM_REGION_MEMORY_NAME) == 0))
                return MEM_REGION_MEMORY;
        core_read_lock();
        for (unsigned slot = 1; slot < MEM_REGION_MAX; slot++) {
                MemRegion *r = atomic_load_explicit(&core->regions[slot], memory_order_acquire);

                if (r && !atomic_load_explicit(&r->removing, memory_order_relaxed) && (strcmp(r->name, name) == 0)) {
                        rcu_tsan_consume(r);
                        key = r->key;
                        break;
                }
        }
        core_read_unlock();
        return key;
}

bool core_region_live(MemCore *core, int key) {
        bool live;

        core_read_lock();
        live = region_live(core, key) != NULL;
        core_read_unlock();
        return live;
}

int core_region_name(MemCore *core, int key, char *ret) {
        MemRegion *r;

        if (key == MEM_REGION_MEMORY) {
                strcpy(ret, MEM_REGION_MEMORY_NAME);
                return 0;
        }
        core_read_lock();
        r = region_find(core, key);
        if (r)
                memcpy(ret, r->name, MEM_REGION_NAME_MAX + 1);
        core_read_unlock();
        return r ? 0 : -ENOENT;
}

unsigned core_region_list(MemCore *core, MemRegionDesc *ret, unsigned max) {
        unsigned n = 0;

        if (max == 0)
                return 0;
        ret[n++] = (MemRegionDesc) {
                .name = MEM_REGION_MEMORY_NAME,
                .capacity = UINT64_MAX,
                .current = (uint64_t) counter_read(&core->root->counter),
                .peak = (uint64_t) atomic_load(&core->root->counter.watermark),
                .groups = core_group_count(core),
        };
        core_read_lock();
        for (unsigned slot = 1; slot < MEM_REGION_MAX && n < max; slot++) {
                MemRegion *r = atomic_load_explicit(&core->regions[slot], memory_order_acquire);
                MemRegionState *root;

                if (!r || atomic_load_explicit(&r->removing, memory_order_relaxed))
                        continue;
                rcu_tsan_consume(r);
                root = region_state(core->root, slot);
                ret[n] = (MemRegionDesc) {
                        .capacity = r->capacity,
                        .current = root ? (uint64_t) counter_read(&root->counter) : 0,
                        .peak = root ? (uint64_t) atomic_load(&root->counter.watermark) : 0,
                        .groups = atomic_load_explicit(&r->groups, memory_order_relaxed),
                };
                memcpy(ret[n].name, r->name, sizeof(ret[n].name));
                n++;
        }
        core_read_unlock();
        return n;
}
