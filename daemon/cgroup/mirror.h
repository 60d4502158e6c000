/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * The kernel's memory cgroups, mirrored (memacctd(8), CGROUPS): import the
 * hierarchy as groups with mapped limits, sample the kernel's usage of
 * every mirrored cgroup, and find the mirror of a process's cgroup. The
 * only file of the daemon that links libcgroup; the core knows nothing of
 * cgroups (it stores a mirror mark and a number, group_set_mirror()).
 *
 * Thread-safety: every call takes the object's mutex, so the workers, the
 * bus thread and the housekeeping thread may call in at any time; each
 * must be registered with the core (they all are).
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "core/model.h"
#include "base/refusal.h"

typedef struct MemCore MemCore;

/* v1 reads "unlimited" as LONG_MAX rounded down to the page size
 * (PAGE_COUNTER_MAX * PAGE_SIZE); anything at or above 2^62 is taken as
 * no limit too, whatever the page size. */
#define CGROUP_V1_UNLIMITED_MIN (UINT64_C(1) << 62)

typedef struct CgroupMirror CgroupMirror;

/*
 * A change the mirror made to the tree (EVENT_GROUP_ADDED, _REMOVED,
 * EVENT_LIMITS_CHANGED with the limits @limits names): the service hands
 * it on to the fan-out (events_notify()). Called on the thread that made
 * the change, under the mirror's lock: it must not call back into it.
 */
typedef void (*CgroupNotifyFn)(void *userdata, EventKind kind, const char *group, unsigned limits);

typedef struct CgroupCounts {
        unsigned created, updated, unchanged;
        unsigned kept;         /* user-set limits kept against the kernel's, over all groups */
        unsigned kernel_owned; /* MemLimitMask: the limits this host's kernel exposes */
} CgroupCounts;

/*
 * One group whose user-set limits an import kept: @kept (MemLimitMask)
 * names them, @ours holds their values, @kernel the kernel's.
 */
typedef void (*CgroupKeptFn)(void *userdata, const char *group, unsigned kept, const MemLimits *ours,
                             const MemLimits *kernel);

/* Request flags of cgroup_mirror_import_with(). */
typedef enum CgroupImportFlags {
        CGROUP_IMPORT_RESET_LIMITS = 1 << 0, /* give user-set limits back to the kernel */
} CgroupImportFlags;

/**
 * cgroup_v1_to_limit() - a v1 byte value as a limit: UINT64_MAX ("max")
 * for the kernel's unlimited value and anything at or above
 * CGROUP_V1_UNLIMITED_MIN, else @bytes.
 */
uint64_t cgroup_v1_to_limit(uint64_t bytes);

/**
 * cgroup_read_limits() - the limits of the cgroup directory @dir, read
 * from its files: on v2 memory.max/high/low/min one to one ("max" is
 * UINT64_MAX); on v1 memory.limit_in_bytes as max and
 * memory.soft_limit_in_bytes as low (cgroup_v1_to_limit(), except that an
 * unlimited soft limit, "no soft limit", is low 0), high and min absent.
 * A file that is missing leaves its limit out of @ret->set. Pure file
 * reading: tests run it on fake trees. Any thread.
 * Return: 0; -EINVAL when a file holds no number; -errno of the reads.
 */
int cgroup_read_limits(const char *dir, bool v2, MemLimits *ret);

/**
 * cgroup_read_usage() - the kernel's usage of the cgroup directory @dir:
 * memory.current (v2) or memory.usage_in_bytes (v1). Any thread.
 * Return: 0; -EINVAL (not a number); -errno (-ENOENT: gone).
 */
int cgroup_read_usage(const char *dir, bool v2, uint64_t *ret);

/**
 * cgroup_mirror_new() - find the memory hierarchy and get ready to mirror it
 * onto @core, telling @notify (NULL: nobody) of the groups it creates and
 * removes and the limits it sets.
 * @userdata: what @notify is called with
 * @mount_root: the memory hierarchy's mount point, for tests on a fake
 *   tree (v2 when it holds cgroup.controllers); NULL: cgroup_init() and
 *   ask libcgroup. Call from the main thread before the others start.
 * @prefix: where mirrors go by default ([cgroup] prefix); copied
 *
 * A host without a memory hierarchy is not an error: the object is made,
 * cgroup_mirror_available() is false and imports fail with -ENOENT.
 * Return: 0 or -ENOMEM.
 */
int cgroup_mirror_new(MemCore *core, CgroupNotifyFn notify, void *userdata, const char *mount_root,
                      const char *prefix, bool auto_create, CgroupMirror **ret);
CgroupMirror *cgroup_mirror_free(CgroupMirror *cs);

/** cgroup_mirror_available() - is there a memory hierarchy to mirror? */
bool cgroup_mirror_available(CgroupMirror *cs);

/** cgroup_mirror_describe() - one line for the log: where and which version, or why none. */
const char *cgroup_mirror_describe(CgroupMirror *cs);

/** cgroup_mirror_set_config() - SIGHUP: a new [cgroup] prefix and auto-create. Return: 0, -ENOMEM. */
int cgroup_mirror_set_config(CgroupMirror *cs, const char *prefix, bool auto_create);

/**
 * cgroup_mirror_import() - mirror the cgroup @from and everything below it
 * as groups @under + cgroup path, parents first; groups above the first
 * mirror that are missing are created plainly (not counted). A cgroup
 * whose name is not a valid group name, or that the core refuses (depth,
 * group count), is skipped with its subtree and logged.
 * @from: NULL or "": "/"; @under: NULL or "": the configured prefix
 *
 * Return: the number of changes (created + updated: persistence must save
 * when > 0) with the counts in @ret; or, with @rf,
 * -EINVAL (a bad path), -ENOENT (no memory hierarchy, or no cgroup @from),
 * or another negative errno.
 */
int cgroup_mirror_import(CgroupMirror *cs, const char *from, const char *under, CgroupCounts *ret,
                       Refusal *rf);

/**
 * cgroup_mirror_import_with() - cgroup_mirror_import() with request flags and
 * the report of kept limits. The kernel owns the limits it exposes (v2:
 * max, high, low, min; v1: max and low); a limit a user set on a mirror
 * (group_user_limits()) is the user's, and an import keeps it, unless
 * @flags has CGROUP_IMPORT_RESET_LIMITS: then the masks of the imported
 * mirrors are cleared and the kernel's values taken.
 * @fn: told of every group where a user-set limit differs from the
 *   kernel's and was kept, under the object's lock (NULL: nobody)
 *
 * Return: as cgroup_mirror_import(); @ret->kept counts the kept limits, and
 * a cleared mask counts its group as updated (persistence must save).
 */
int cgroup_mirror_import_with(CgroupMirror *cs, const char *from, const char *under, unsigned flags,
                            CgroupKeptFn fn, void *userdata, CgroupCounts *ret, Refusal *rf);

/** cgroup_mirror_kernel_limits() - the limits (MemLimitMask) the kernel exposes here; 0: no hierarchy. */
unsigned cgroup_mirror_kernel_limits(CgroupMirror *cs);

/**
 * cgroup_mirror_pid_cgroup() - the memory cgroup of process @pid, as a path
 * relative to the hierarchy ("/" for the root), into @buf (@size bytes):
 * libcgroup's answer, else /proc/PID/cgroup read as placement_proc_cgroup()
 * does. Any thread.
 * Return: 0; -ESRCH (no such process), -ENOENT (no memory line),
 * -ENAMETOOLONG, another -errno.
 */
int cgroup_mirror_pid_cgroup(CgroupMirror *cs, pid_t pid, char *buf, size_t size);

/**
 * cgroup_mirror_place() - the group a session of a process in the kernel
 * cgroup @cgroup attaches to when it names none ("" or "auto") and no
 * explicit placement rule covers @cgroup (service_place() asks those
 * first): the mirror of @cgroup; else, when auto-create and @may_create
 * allow (the service decides who may have mirrors made), that mirror
 * imported (the cgroup and its ancestors, not its children; user-set
 * limits are kept, as by an import); else the mirror of @cgroup's nearest
 * mirrored ancestor (the longest mirror, by whole components, that covers
 * it), so that a process in a cgroup made after the import is accounted
 * where its parent is.
 * @ret_path: the group path, @path_size bytes
 * @ret_created: set when a mirror was created (persistence must save)
 *
 * Return: 0; or, with @rf, -ENOENT (no mirror at or above @cgroup and
 * auto-create is off, or no memory hierarchy), -ENAMETOOLONG, or an import
 * error.
 */
int cgroup_mirror_place(CgroupMirror *cs, const char *cgroup, bool may_create, char *ret_path, size_t path_size,
                        bool *ret_created, Refusal *rf);

/* One mirror, (kernel cgroup, group); a negative return stops the walk. */
typedef int (*CgroupMirrorFn)(void *userdata, const char *cgroup, const char *group);

/**
 * cgroup_mirror_list() - call @fn for each mirror whose group still
 * is one (a group removed or unmarked since is left out), in no order,
 * under the object's lock: @fn must not call back in. Any thread.
 * Return: 0 or @fn's error.
 */
int cgroup_mirror_list(CgroupMirror *cs, CgroupMirrorFn fn, void *userdata);

/**
 * cgroup_mirror_of() - the group that mirrors exactly @cgroup, into
 * @ret_group (@size bytes). Any thread.
 * Return: 0; -ENOENT (none), -ENAMETOOLONG.
 */
int cgroup_mirror_of(CgroupMirror *cs, const char *cgroup, char *ret_group, size_t size);

/**
 * cgroup_mirror_sample() - read the kernel's usage of every mirrored cgroup
 * into its group (group_set_kernel_current()). The housekeeping thread's
 * periodic work.
 */
void cgroup_mirror_sample(void *userdata);

/**
 * cgroup_mirror_unreadable() - how many mirrors' cgroups the last
 * cgroup_mirror_sample() could not read (vanished, most likely): the cheap
 * test of whether a prune has anything to do. Any thread.
 */
size_t cgroup_mirror_unreadable(CgroupMirror *cs);

/* One mirror of a vanished cgroup: @why NULL when it was removed, else why it stays. */
typedef void (*CgroupPruneFn)(void *userdata, const char *group, const char *why);

/**
 * cgroup_mirror_prune() - remove the mirrors whose kernel cgroup no longer
 * exists, deepest first, unless sessions are attached, kept charges are
 * held or groups that are not mirrors are below (each logged when its
 * reason is new, and told to @fn, NULL: nobody); a mirror group removed or unmarked by somebody else
 * is forgotten. Any thread.
 * Return: the number of groups removed (persistence must save when > 0).
 */
int cgroup_mirror_prune(CgroupMirror *cs, CgroupPruneFn fn, void *userdata);
