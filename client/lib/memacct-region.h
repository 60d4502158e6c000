/* SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef MEMACCT_REGION_H
#define MEMACCT_REGION_H

/*
 * libmemacct and device memory regions (memacct(7), DEVICE MEMORY): the
 * kernel dmem controller's regions, each with its own counters in every
 * group that uses it. Part of memacct.h, which includes it where the
 * types it uses are declared; include memacct.h, not this file.
 */

#include "memacct.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One group's counters in one device region (memacct_group_info.regions). */
typedef struct memacct_region_info {
        const char *name;       /* "nvidia/0000:3b:00.0/vidmem", "gpu0" ... */
        uint64_t capacity;      /* the region's; MEMACCT_UNLIMITED: none */
        uint64_t current;
        uint64_t peak;
        uint64_t max;           /* MEMACCT_UNLIMITED: none */
        uint64_t high;
        uint64_t low;
        uint64_t min;
        uint64_t effective_min;
        uint64_t effective_low;
        uint64_t failcnt;
        const memacct_counter *events;       /* low high max oom, hierarchical */
        size_t n_events;
        const memacct_counter *events_local; /* the same, this group only */
        size_t n_events_local;
        uint64_t kept;          /* kept charges in the region */
} memacct_region_info;

/* ---- device memory regions (memacct(7), DEVICE MEMORY) ---- */

/* The built-in region: everything that names no region is in it. */
#define MEMACCT_REGION_MEMORY "memory"

/* One region, daemon-wide (memacct_list_regions()). */
typedef struct memacct_region {
        const char *name;
        uint64_t capacity; /* MEMACCT_UNLIMITED: none */
        uint64_t current;  /* charged in the whole tree */
        uint64_t peak;
        uint32_t groups;   /* groups with counters in it, the root included */
} memacct_region;

/* A list of regions, see memacct_list_regions(). */
typedef struct memacct_regions memacct_regions;

/**
 * memacct_add_region() - register device region @name with @capacity
 * bytes (MEMACCT_UNLIMITED: none), which bounds the root. Root only. The
 * same region again is a success.
 * Return: 0; -EPERM; -EINVAL (a bad name); -EEXIST (another capacity);
 * -ENOSPC (too many regions).
 */
int memacct_add_region(memacct *m, const char *name, uint64_t capacity);

/**
 * memacct_remove_region() - unregister @name with every group's limits in
 * it. Root only. Return: 0; -EPERM; -ENOENT; -EBUSY (something is charged).
 */
int memacct_remove_region(memacct *m, const char *name);

/** memacct_list_regions() - every region, "memory" first. Return: 0 or a negative errno. */
int memacct_list_regions(memacct *m, memacct_regions **ret);
size_t memacct_regions_size(const memacct_regions *l);
/** memacct_regions_get() - region @i of @l; NULL when out of range. */
const memacct_region *memacct_regions_get(const memacct_regions *l, size_t i);
/** memacct_regions_free() - free @l; NULL is fine. Return: NULL. */
memacct_regions *memacct_regions_free(memacct_regions *l);

/**
 * memacct_charge_region() - memacct_charge() in device region @region
 * (NULL or "memory": memacct_charge() of MEMACCT_STAT_DEVICE). Flags:
 * MEMACCT_KEEP, MEMACCT_FORCE.
 * Return: as memacct_charge(); -ENOENT for an unknown region.
 */
int memacct_charge_region(memacct *m, const char *path, const char *region, uint64_t bytes, unsigned flags,
                          memacct_charge_result *ret);

/** memacct_uncharge_region() - memacct_uncharge() in @region. Flags: MEMACCT_KEEP. */
int memacct_uncharge_region(memacct *m, const char *path, const char *region, uint64_t bytes, unsigned flags);

/**
 * memacct_stock_region() - the stock item of device region @region, for
 * memacct_charge_stocked(), memacct_uncharge_stocked() and
 * memacct_stock_get(): charges in the region through the charge stock,
 * on the attached group, as memory's stat items. The same region is the
 * same item for the life of @m, across reconnections; "memory" is
 * MEMACCT_STAT_DEVICE. No round trip: an unknown region fails the first
 * charge (-ENOENT). memacct_uncharge_stocked() gives back what was
 * charged through the item, not memacct_charge_region()'s charges.
 * Return: the item (>= MEMACCT_STAT_MAX for a device region); -EINVAL;
 * -ENOSPC (31 regions have items already); -EOPNOTSUPP (a bus handle).
 */
int memacct_stock_region(memacct *m, const char *region);

/**
 * memacct_set_region_limits() - memacct_set_limits() in @region. In a
 * device region a max below usage is always taken, as a dmem.max write:
 * new charges are refused from then on.
 */
int memacct_set_region_limits(memacct *m, const char *path, const char *region, const memacct_limits *limits);

/** memacct_reset_region_peak() - memacct_reset_peak() in @region. */
int memacct_reset_region_peak(memacct *m, const char *path, const char *region);

/**
 * memacct_transfer() - move @bytes of kept charge in @region (NULL:
 * memory, anon) from group @from to group @to: @to is charged first,
 * against its limits, then @from released; a refusal changes nothing.
 * Return: 0; -EDQUOT (@to's limits, memacct_refused_path()); -ERANGE
 * (@from keeps fewer); -EPERM; -ENOENT.
 */
int memacct_transfer(memacct *m, const char *from, const char *to, const char *region, uint64_t bytes);

/* memacct_evict_valuable() answers and flag */
#define MEMACCT_EVICT_NO      0
#define MEMACCT_EVICT_YES     1
#define MEMACCT_EVICT_HIT_LOW 2 /* only low protects it: ask again with MEMACCT_IGNORE_LOW */
#define MEMACCT_IGNORE_LOW    0x10u

/**
 * memacct_evict_valuable() - may a pool manager that must make room
 * under group @limit (NULL or "": no limiting group, protection computed
 * from the root; "/": the root limits, always yes) evict memory of group
 * @candidate in @region? The kernel's dmem_cgroup_state_evict_valuable().
 * Flags: MEMACCT_IGNORE_LOW.
 * Return: MEMACCT_EVICT_*; a negative errno.
 */
int memacct_evict_valuable(memacct *m, const char *limit, const char *candidate, const char *region,
                           unsigned flags);

/**
 * memacct_subscribe_region() - memacct_subscribe() of the events in
 * @region: NULL or "memory" memory's (as memacct_subscribe()), a device
 * region's, or "*" every region's.
 */
int memacct_subscribe_region(memacct *m, const char *path, const char *region);

/**
 * memacct_event_region() - the region of the event memacct_next_event()
 * returned last on @m ("memory" for memory's); the string belongs to @m.
 * Return: 0; -ENODATA (no event returned yet).
 */
int memacct_event_region(memacct *m, const char **ret);

#ifdef __cplusplus
}
#endif

#endif /* MEMACCT_REGION_H */
