/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * The data model every layer speaks: the names and records of groups,
 * events, statistics, limits and client counters, and nothing that acts
 * on them. The service layer hands these to the transports, which may
 * include this header and no other of the core (the build checks it):
 * what a transport can see of the core is what it can encode.
 */

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#define MEM_NAME_MAX 255  /* bytes in one path component */
#define MEM_PATH_MAX 4096 /* bytes in a whole path, NUL excluded */

typedef enum MemPathError {
        MEM_PATH_OK,
        MEM_PATH_NOT_ABSOLUTE,   /* -EINVAL */
        MEM_PATH_EMPTY_COMPONENT, /* -EINVAL: "//" or a trailing "/" */
        MEM_PATH_DOT_COMPONENT,  /* -EINVAL: "." or ".." */
        MEM_PATH_BAD_CHAR,       /* -EINVAL: outside [A-Za-z0-9._:@-] */
        MEM_PATH_NAME_TOO_LONG,  /* -ENAMETOOLONG: a component over 255 bytes */
        MEM_PATH_TOO_LONG,       /* -ENAMETOOLONG: the path over MEM_PATH_MAX */
        MEM_PATH_TOO_DEEP,       /* -EMLINK: more components than max_depth */
        _MEM_PATH_ERROR_MAX,
} MemPathError;

/* memory.events */
typedef enum MemEvent {
        MEM_EVENT_LOW,
        MEM_EVENT_HIGH,
        MEM_EVENT_MAX,
        MEM_EVENT_OOM,
        _MEM_EVENT_MAX,
        _MEM_EVENT_INVALID = -EINVAL,
} MemEvent;

/* memory.stat: what a charge is for */
typedef enum MemStatItem {
        MEM_STAT_ANON,
        MEM_STAT_FILE,
        MEM_STAT_SHMEM,
        MEM_STAT_KERNEL,
        MEM_STAT_SOCK,
        MEM_STAT_SWAP,
        MEM_STAT_DEVICE, /* device/GPU memory the kernel cannot see */
        MEM_STAT_OTHER,  /* anything else a client wants kept apart */
        _MEM_STAT_MAX,
        _MEM_STAT_INVALID = -EINVAL,
} MemStatItem;

static inline bool mem_stat_item_ok(MemStatItem item) {
        return item >= 0 && item < _MEM_STAT_MAX;
}

/* A client's RSS counters, the kernel's MM_* counters */
typedef enum MemRss {
        MEM_RSS_FILE,  /* MM_FILEPAGES */
        MEM_RSS_ANON,  /* MM_ANONPAGES */
        MEM_RSS_SWAP,  /* MM_SWAPENTS */
        MEM_RSS_SHMEM, /* MM_SHMEMPAGES */
        _MEM_RSS_MAX,
        _MEM_RSS_INVALID = -EINVAL,
} MemRss;

const char *mem_event_to_string(MemEvent ev);
MemEvent mem_event_from_string(const char *s);
const char *mem_path_error_to_string(MemPathError e);
const char *mem_stat_item_to_string(MemStatItem item);
/** Return: the item, or -EINVAL for an unknown name. */
MemStatItem mem_stat_item_from_string(const char *s);
const char *mem_rss_to_string(MemRss m);

/**
 * mem_path_check() - validate an absolute group path.
 * @ret_reason: optional, the precise violation
 *
 * Return: the depth (0 for "/"), or -EINVAL, -ENAMETOOLONG or -EMLINK as
 * listed in MemPathError.
 */
int mem_path_check(const char *path, unsigned max_depth, MemPathError *ret_reason);

/*
 * Device memory regions (docs/regions.md): the kernel dmem controller's
 * regions, each with its own counter in every group that uses it.
 * "memory" is the built-in one, the group's own counter; a device region
 * has a name (the kernel's: text without spaces, here from
 * [A-Za-z0-9._:/@+-]) and a capacity that bounds the root.
 */
#define MEM_REGION_MAX 32      /* regions, memory included */
#define MEM_REGION_NAME_MAX 63 /* bytes in a region name */
#define MEM_REGION_MEMORY_NAME "memory"

/**
 * mem_region_name_check() - is @name a valid region name?
 * Return: 0; -EINVAL (empty, or a character outside the grammar);
 * -ENAMETOOLONG.
 */
int mem_region_name_check(const char *name);

/* One region, daemon-wide (core_region_list()). */
typedef struct MemRegionDesc {
        char name[MEM_REGION_NAME_MAX + 1];
        uint64_t capacity; /* UINT64_MAX: unlimited */
        uint64_t current;  /* charged in the whole tree */
        uint64_t peak;
        unsigned groups;   /* groups with a counter in it, the root included */
} MemRegionDesc;

/* One group's counters in one device region (group_read()). */
typedef struct MemRegionInfo {
        char name[MEM_REGION_NAME_MAX + 1];
        uint64_t capacity;
        uint64_t current, peak, max, high, low, min; /* limits: UINT64_MAX for none */
        uint64_t effective_min, effective_low;
        uint64_t failcnt;
        uint64_t events[_MEM_EVENT_MAX], events_local[_MEM_EVENT_MAX];
        uint64_t kept;
        uint64_t kept_delegator; /* of kept, the delegator's (a delegation root's) */
        /* A mirror of a kernel cgroup: its dmem.current for the region at
         * the last sample (region_set_kernel_current()); 0 otherwise. */
        uint64_t kernel_current;
} MemRegionInfo;

/* What a notice says happened: the service fans these out (service/events.h). */
typedef enum EventKind {
        EVENT_MEMORY,         /* @event of @path went up; its local count is now @count */
        EVENT_MOVED,          /* the receiving session is attached to @path now */
        EVENT_GROUP_ADDED,    /* @path was created */
        EVENT_GROUP_REMOVED,  /* @path was removed */
        EVENT_LIMITS_CHANGED, /* the limits @limits names (MemLimitMask) of @path were set */
        EVENT_RECLAIM,        /* the receiving session is asked to give back @count bytes (request @id) */
} EventKind;

/* Which limits a MemLimits sets; also what a change notification names. */
typedef enum MemLimitMask {
        MEM_LIMIT_MAX = 1 << 0,
        MEM_LIMIT_HIGH = 1 << 1,
        MEM_LIMIT_LOW = 1 << 2,
        MEM_LIMIT_MIN = 1 << 3,
} MemLimitMask;

/*
 * The limits one request, one state line or one kernel cgroup gives:
 * those named in @set, in bytes, UINT64_MAX (or anything from
 * MEM_COUNTER_MAX up) for "no limit", as memory.max reads "max".
 */
typedef struct MemLimits {
        unsigned set; /* MemLimitMask */
        uint64_t max, high, low, min;
} MemLimits;

/*
 * memory.pressure (core/pressure.h): the time charges of a group's
 * subtree spent waiting for reclaim, in the kernel's PSI shape.
 */
typedef enum MemPressureKind {
        MEM_PRESSURE_SOME, /* at least one charge of the subtree waits */
        MEM_PRESSURE_FULL, /* every session attached in the subtree waits */
        _MEM_PRESSURE_MAX,
        _MEM_PRESSURE_INVALID = -EINVAL,
} MemPressureKind;

/** mem_pressure_kind_to_string() - "some", "full"; NULL out of range. */
const char *mem_pressure_kind_to_string(MemPressureKind k);

/* One line of memory.pressure: the averages in hundredths of a percent,
 * the digits the kernel prints (avg10=63.21 is 6321), and the total. */
typedef struct MemPressureFigures {
        unsigned avg10, avg60, avg300;
        uint64_t total_usec;
} MemPressureFigures;

/* Everything `show` prints about a group (group_read()). */
typedef struct MemGroupInfo {
        uint64_t current, peak, max, high, low, min; /* limits: UINT64_MAX for none */
        uint64_t effective_min, effective_low;
        uint64_t failcnt;
        uint64_t events[_MEM_EVENT_MAX], events_local[_MEM_EVENT_MAX];
        int64_t stat[_MEM_STAT_MAX], stat_local[_MEM_STAT_MAX];
        uint64_t kept[_MEM_STAT_MAX];
        unsigned nr_children, nr_attached;
        uid_t owner;
        bool mirror;             /* group_set_mirror() */
        uint64_t kernel_current; /* the last group_set_kernel_current(); 0 when not a mirror */
        /* group_read() leaves these 0: reading them needs the time, which
         * the caller has (pressure_read()). */
        MemPressureFigures pressure[_MEM_PRESSURE_MAX];
        /* The device regions the group has a counter in, in region order;
         * only the first nr_regions entries are written. */
        unsigned nr_regions;
        MemRegionInfo regions[MEM_REGION_MAX - 1];
} MemGroupInfo;
