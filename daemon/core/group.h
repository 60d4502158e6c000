/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * Groups: the nodes of the accounting tree, addressed by absolute path.
 */

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
/* The flavour first: the list and hash table headers use its primitives.
 * (The build defines _LGPL_SOURCE: see daemon/core/meson.build.) */
#include <urcu/urcu-memb.h>
#include <urcu/rculfhash.h>
#include <urcu/rculist.h>

#include "counter.h"
#include "model.h"
#include "stats.h"

typedef struct MemCore MemCore;
typedef struct MemGroup MemGroup;
typedef struct MemPressure MemPressure;
typedef struct MemRegionState MemRegionState;
typedef _Atomic(MemRegionState *) MemRegionSlot;

struct MemGroup {
        MemCounter counter;
        MemGroupStats stats;
        _Atomic uint64_t events[_MEM_EVENT_MAX];       /* this group and its subtree */
        _Atomic uint64_t events_local[_MEM_EVENT_MAX]; /* this group only */
        _Atomic int64_t kept[_MEM_STAT_MAX];           /* kept charges, by item */
        _Atomic int64_t kept_delegator[_MEM_STAT_MAX]; /* of kept, the delegator's (charge.c) */

        /* Fast path 3: moves of this group's sessions in progress, and the
         * lock that stat updates take only while there is one. */
        _Atomic int moving_account;
        /* The limits (MemLimitMask) a user set on this group while it was
         * a mirror: the importer keeps them instead of the outside
         * hierarchy's. Stored and reported only, like the mirror mark. */
        _Atomic unsigned user_limits;
        pthread_mutex_t move_lock;

        /*
         * The small fields side by side, so that the group takes no more
         * lines than it did before regions (its size is a benchmark,
         * mem_per_group: docs/performance.md).
         *
         * mirror and kernel_current: set by whoever mirrors an outside
         * hierarchy onto this group (the cgroup importer), with the usage
         * that hierarchy reports for it; the core only stores and reports
         * them. transient: set by the service for a group created
         * transient (removed once its creator is gone), and by a restore
         * of a group saved so; the core only stores it, so that the state
         * file can carry it.
         */
        _Atomic bool mirror;
        bool flush_queued;  /* in the flush in progress (core.c); flusher only */
        _Atomic bool transient;
        _Atomic bool dead;  /* removal in progress or done */
        unsigned id;        /* index of the per-thread stat slots */
        /* The counter sets in device regions, by slot (region.c): NULL
         * until the group first uses one. */
        _Atomic(MemRegionSlot *) regions;
        /* memory.pressure (pressure.c): NULL until a charge of the
         * subtree first waits for reclaim; written under the core's
         * pressure_lock, freed with the group. */
        _Atomic(MemPressure *) pressure;
        _Atomic uint64_t kernel_current; /* bytes, the last sample */
        _Atomic unsigned refs;        /* the tree holds one while linked */
        _Atomic unsigned nr_attached; /* sessions attached */
        unsigned depth;               /* root: 0 */
        /* May modify this subtree; root-owned: 0. Atomic because
         * group_set_owner() changes it while other threads decide on it. */
        _Atomic uid_t owner;
        MemCore *core;
        MemGroup *parent;
        struct cds_list_head siblings; /* in parent->children; RCU */
        struct cds_list_head children;
        struct cds_lfht_node node;     /* in core->groups, keyed by path */
        struct rcu_head rcu;
        char path[];
};

/**
 * group_create_limited() - create @path with the limits @limits names
 * (NULL: none) and owner @owner; its parent must exist. The limits are
 * set before the group is linked: nobody sees it without them, and
 * nothing is created when the create is refused.
 *
 * Return: 0; a mem_path_check() error; -ENOENT (no parent); -EEXIST;
 * -ENOSPC (the configured group count is reached); -ENOMEM.
 */
int group_create_limited(MemCore *core, const char *path, uid_t owner, const MemLimits *limits);

/**
 * group_create_child() - group_create_limited() of @path below @parent,
 * which the caller holds a reference to: no lookup of the parent, for a
 * caller that creates a whole tree top-down (a restore).
 * @ret: NULL, or where a reference to the new group goes.
 *
 * Return: as group_create_limited(); -EINVAL also when @path does not name
 * a child of @parent; -ENOENT when @parent was removed.
 */
int group_create_child(MemCore *core, MemGroup *parent, const char *path, uid_t owner,
                       const MemLimits *limits, MemGroup **ret);

/** group_create() - group_create_limited() without limits. */
static inline int group_create(MemCore *core, const char *path, uid_t owner) {
        return group_create_limited(core, path, owner, NULL);
}

/**
 * group_remove() - remove @path, like rmdir of a cgroup. Its kept charges
 * are released with it (they belong to the group); sessions' charges are
 * not, so a group with attached sessions is refused. Waits for an RCU
 * grace period: not from inside core_read_lock().
 *
 * Return: 0; -ENOENT; -EINVAL for "/"; -EBUSY while it has children or
 * attached sessions.
 */
int group_remove(MemCore *core, const char *path);

/**
 * group_lookup() - find @path. The caller is in core_read_lock(), and the
 * group stays valid until core_read_unlock().
 */
MemGroup *group_lookup(MemCore *core, const char *path);

/** group_get() - find @path and take a reference. Return: 0 or -ENOENT. */
int group_get(MemCore *core, const char *path, MemGroup **ret);
/**
 * group_tryget() - take a reference on a group found under RCU, unless its
 * last one is gone (it is on its way to being freed): css_tryget().
 */
bool group_tryget(MemGroup *g);
/** group_ref() - another reference, for a caller that holds one already. */
MemGroup *group_ref(MemGroup *g);
MemGroup *group_unref(MemGroup *g);
DEFINE_TRIVIAL_CLEANUP_FUNC(MemGroup *, group_unref);

/**
 * group_set_limits() - set the limits @l names: max first, and when max is
 * refused nothing else changes, so a refused request changes nothing.
 * Without @force a max below usage is refused (page_counter_set_max());
 * with it, it is taken (a cgroup v2 memory.max write), an oom event is
 * raised and 1 returned. Setters are serialised core-wide, as the
 * kernel's memcg_max_mutex serialises memory.max writes: two requests
 * never interleave their limits on one group. Any registered thread,
 * outside core_read_lock().
 *
 * Return: 0; 1 (forced below usage); -EBUSY (max refused: nothing set).
 */
int group_set_limits(MemGroup *g, const MemLimits *l, bool force);

/*
 * The single setters below are the primitives group_set_limits() is made
 * of; outside the core, tests and benchmarks use them.
 */

/**
 * group_set_max() - set max. Without @force it is refused with -EBUSY when
 * usage is above @bytes (page_counter_set_max()); with @force it is taken
 * anyway (a cgroup v2 memory.max write) and, if usage is above it, an oom
 * event is raised and 1 returned.
 * @bytes: UINT64_MAX or anything above MEM_COUNTER_MAX means no limit
 */
int group_set_max(MemGroup *g, uint64_t bytes, bool force);
void group_set_high(MemGroup *g, uint64_t bytes);
void group_set_low(MemGroup *g, uint64_t bytes);
void group_set_min(MemGroup *g, uint64_t bytes);
void group_reset_peak(MemGroup *g);

/**
 * group_set_mirror() - mark @g as the mirror of an outside group (or not):
 * group_read() then reports its kernel_current. Any thread.
 */
void group_set_mirror(MemGroup *g, bool mirror);
bool group_is_mirror(MemGroup *g);

/**
 * group_add_user_limits() - add @mask (MemLimitMask) to the limits of @g a
 * user owns: those an importer of the outside hierarchy keeps. Any thread;
 * a read racing with it sees the mask before or after.
 */
void group_add_user_limits(MemGroup *g, unsigned mask);
/** group_set_user_limits() - replace the mask of user-owned limits of @g (0: the outside owns all). */
void group_set_user_limits(MemGroup *g, unsigned mask);
/** group_user_limits() - the mask of user-owned limits of @g (MemLimitMask). Any thread. */
unsigned group_user_limits(MemGroup *g);

/**
 * group_set_kernel_current() - the usage the outside group @g mirrors
 * reported, in bytes, stored for group_read(). Any thread; a sample, so
 * relaxed: nothing else is ordered by it.
 */
void group_set_kernel_current(MemGroup *g, uint64_t bytes);

/**
 * group_margin() - bytes the tightest max from @g up to the root still
 * admits, UINT64_MAX when no max is set on the path. A hint for stock
 * sizing: other chargers move it at any time.
 */
uint64_t group_margin(MemGroup *g);

/**
 * group_set_owner() - delegate @g's subtree to @owner (0: to nobody). Any
 * thread may call it; a decision racing with it sees the old owner or the
 * new one, as a request made just before or just after would.
 */
void group_set_owner(MemGroup *g, uid_t owner);

/**
 * group_is_delegated_to() - is @g or one of its ancestors owned by @uid?
 * uid 0 owns nothing by delegation (root is allowed everything anyway).
 */
bool group_is_delegated_to(MemGroup *g, uid_t uid);

/** group_is_descendant() - is @g @top or below it? */
bool group_is_descendant(MemGroup *g, const MemGroup *top);

/** group_event_raise() - count @ev locally and on the group and every ancestor. */
void group_event_raise(MemGroup *g, MemEvent ev);

/**
 * group_read() - everything `show` prints about @g.
 * @reclaim_root: for effective min/low; NULL: the root
 * @exact: flush statistics first, whatever the pressure
 */
void group_read(MemCore *core, MemGroup *g, const MemGroup *reclaim_root, bool exact,
                MemGroupInfo *ret);

/**
 * group_walk() - pre-order walk of @g's subtree (@g first), in the caller's
 * core_read_lock(). @cb returns 0 to go on, > 0 to skip the children of
 * the group it was given, < 0 to stop (returned).
 */
int group_walk(MemGroup *g, int (*cb)(MemGroup *g, void *userdata), void *userdata);
