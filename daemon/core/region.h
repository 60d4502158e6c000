/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * Device memory regions: the kernel dmem controller's regions
 * (kernel/cgroup/dmem.c), daemon-wide, each with a counter set in every
 * group that uses it (docs/regions.md).
 *
 * A region is named to the core by a key: 0 is "memory", the group's own
 * counter, statistics and kept charges; a device region's key is its
 * slot with a generation above it, so that a key kept across a removal
 * never names the region added later in the same slot.
 *
 * A group's counter set in a device region (a MemRegionState, dmem's
 * "pool") is created on the first charge or limit there, with every
 * ancestor's, as dmem's get_cg_pool_locked() does, and lives as long as
 * the group or the region. A group that uses no device region pays one
 * pointer.
 */

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <urcu/urcu-memb.h>

#include "charge.h"
#include "counter.h"
#include "model.h"

#define MEM_REGION_MEMORY 0 /* the key of "memory" */

typedef struct MemRegion {
        int key;
        uint64_t capacity;      /* UINT64_MAX: unlimited */
        _Atomic bool removing;  /* core_region_remove() in progress */
        _Atomic unsigned groups; /* groups with counters in it (region_state_obtain()) */
        struct rcu_head rcu;
        char name[MEM_REGION_NAME_MAX + 1];
} MemRegion;

typedef struct MemRegionState {
        MemCounter counter; /* parent: the parent group's state in the region */
        _Atomic uint64_t events[_MEM_EVENT_MAX];       /* this group and its subtree */
        _Atomic uint64_t events_local[_MEM_EVENT_MAX]; /* this group only */
        _Atomic int64_t kept;           /* kept charges */
        _Atomic int64_t kept_delegator; /* of kept, the delegator's (charge.c) */
        _Atomic uint64_t kernel_current; /* a mirror's dmem.current sample */
        MemGroup *group;
        struct rcu_head rcu;
} MemRegionState;

/**
 * core_region_add() - register @name with @capacity (UINT64_MAX:
 * unlimited): the root's max in it. The same name with the same capacity
 * again is a success. Any registered thread, outside core_read_lock().
 * Return: the key (> 0); -EINVAL (a bad name, or "memory"); -ENAMETOOLONG;
 * -EEXIST (registered with another capacity); -ENOSPC (MEM_REGION_MAX
 * reached); -ENOMEM.
 */
int core_region_add(MemCore *core, const char *name, uint64_t capacity);

/**
 * core_region_remove() - unregister @name and drop every group's counter
 * set in it. Refused while anything is charged to it; waits for a grace
 * period. Return: 0; -ENOENT; -EINVAL ("memory"); -EBUSY (charged).
 */
int core_region_remove(MemCore *core, const char *name);

/**
 * core_region_lookup() - the key of @name; NULL, "" and "memory" are
 * MEM_REGION_MEMORY. Any thread. Return: the key (>= 0), -ENOENT.
 */
int core_region_lookup(MemCore *core, const char *name);

/** core_region_live() - is @key a registered region not being removed? Any thread. */
bool core_region_live(MemCore *core, int key);

/**
 * core_region_name() - copy the name of @key to @ret (MEM_REGION_NAME_MAX
 * + 1 bytes). Return: 0, -ENOENT.
 */
int core_region_name(MemCore *core, int key, char *ret);

/**
 * core_region_list() - the regions, device regions in slot order, at most
 * @max (MEM_REGION_MAX always fits), "memory" first. Return: the count.
 */
unsigned core_region_list(MemCore *core, MemRegionDesc *ret, unsigned max);

/**
 * region_charge() - group_charge() in device region @key: the counters of
 * @g and its ancestors there, created as needed; the events it raises
 * are the region's. The caller is in core_read_lock().
 * Return: as group_charge(); -ENOENT (no such region, or it is being
 * removed); -ENOMEM.
 */
int region_charge(MemCore *core, MemGroup *g, int key, uint64_t bytes, unsigned flags,
                  MemChargeResult *ret);

/** region_group_event() - group_event_raise() of @ev on @g's counters in @key (none: nothing). */
void region_group_event(MemCore *core, MemGroup *g, int key, MemEvent ev);

/** region_uncharge() - the reverse; the caller knows @bytes are held. In core_read_lock(). */
void region_uncharge(MemCore *core, MemGroup *g, int key, uint64_t bytes);

/** region_charge_kept() - group_charge_kept() in @key. Return: as region_charge(). */
int region_charge_kept(MemCore *core, MemGroup *g, int key, uint64_t bytes, unsigned flags,
                       MemChargeResult *ret);

/** region_uncharge_kept_as() - group_uncharge_kept_as() in @key. */
int region_uncharge_kept_as(MemCore *core, MemGroup *g, int key, uint64_t bytes, bool delegate);

/** region_kept_delegator() - group_kept_delegator() in @key. */
uint64_t region_kept_delegator(MemCore *core, MemGroup *g, int key);

/**
 * region_set_limits() - group_set_limits() of @g's counters in @key,
 * creating them. The root's max in a device region is its capacity.
 * Return: as group_set_limits(); -EINVAL (a max on the root); -ENOENT;
 * -ENOMEM.
 */
int region_set_limits(MemCore *core, MemGroup *g, int key, const MemLimits *l, bool force);

/**
 * region_set_kernel_current() - group_set_kernel_current() in @key: the
 * kernel cgroup @g mirrors reported @bytes in its dmem.current for the
 * region. Creates @g's counters only for a sample above 0. Any thread.
 * Return: 0, -ENOENT, -ENOMEM.
 */
int region_set_kernel_current(MemCore *core, MemGroup *g, int key, uint64_t bytes);

/** region_reset_peak() - group_reset_peak() in @key. Return: 0, -ENOENT. */
int region_reset_peak(MemCore *core, MemGroup *g, int key);

/**
 * region_read() - fill @ret's regions from @g's counter sets (effective
 * protection relative to @reclaim_root, NULL: the root).
 */
void region_read(MemCore *core, MemGroup *g, const MemGroup *reclaim_root, MemGroupInfo *ret);

/**
 * region_read_one() - @g's counters in @key into @ret (all zero, limits
 * "max", when @g has none there). Return: 0, -ENOENT.
 */
int region_read_one(MemCore *core, MemGroup *g, int key, const MemGroup *reclaim_root,
                    MemRegionInfo *ret);

/**
 * region_limits() - the limits of @g in @key, all four named, as
 * MemLimits (UINT64_MAX: none); false when @g has no counters there.
 */
bool region_limits(MemCore *core, MemGroup *g, int key, MemLimits *ret);

/**
 * region_group_margin() - group_margin() in @key: what the tightest max
 * (the capacity included) still admits. UINT64_MAX when none.
 */
uint64_t region_group_margin(MemCore *core, MemGroup *g, int key);

/* What region_evict_valuable() answers. */
typedef enum MemEvict {
        MEM_EVICT_NO,
        MEM_EVICT_YES,
        MEM_EVICT_HIT_LOW, /* only low protects it: again with ignore_low */
} MemEvict;

/**
 * region_evict_valuable() - dmem_cgroup_state_evict_valuable(): may a
 * pool manager that must make room under @limit (NULL: the root) take
 * @test's memory in @key? @test itself or a root limit: always; a @test
 * outside @limit's subtree: never; else by @test's effective protection
 * relative to @limit, min always and low unless @ignore_low.
 * Return: a MemEvict; -ENOENT (no such region).
 */
int region_evict_valuable(MemCore *core, MemGroup *limit, MemGroup *test, int key, bool ignore_low);

/* ---- inside the core ---- */

/** region_group_release() - group_remove(): release @g's kept charges in every region, and unhook its counters. */
void region_group_release(MemCore *core, MemGroup *g);

/** region_state_retire() - free @s after a grace period; it is unhooked already. */
void region_state_retire(MemRegionState *s);

/** region_group_free() - free @g's counter sets (after its grace period). */
void region_group_free(MemGroup *g);

/** region_state() - @g's state in slot @slot, or NULL. In core_read_lock(). */
MemRegionState *region_state(MemGroup *g, unsigned slot);

/** region_state_obtain() - region_state(), created with its ancestors' when missing. NULL: -ENOMEM. */
MemRegionState *region_state_obtain(MemGroup *g, unsigned slot);

/** region_slot() - the slot of @key. */
static inline unsigned region_slot(int key) {
        return (unsigned) key % MEM_REGION_MAX;
}

/** region_find() - the region of @key, removing or not; in core_read_lock(). */
MemRegion *region_find(MemCore *core, int key);

/**
 * region_move_charge() - charge @bytes to @dst's counters in @slot up to,
 * excluding, @top's (a move: no high events, max on refusal). The caller
 * holds the move locks and core_read_lock(). Return: 0, -EDQUOT
 * (@res->refused set), -ENOMEM.
 */
int region_move_charge(MemGroup *dst, MemGroup *top, unsigned slot, uint64_t bytes, MemChargeResult *res);

/** region_move_uncharge() - uncharge @g's counters in @slot up to, excluding, @top (NULL: the root). */
void region_move_uncharge(MemGroup *g, MemGroup *top, unsigned slot, uint64_t bytes);

/** region_live() - the region of @key if it is registered and not being removed; in core_read_lock(). */
MemRegion *region_live(MemCore *core, int key);
