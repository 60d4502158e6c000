/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * What the files of the kernel cgroup mirror share: mirror.c (the
 * mirror: import, sample, prune), mirror-place.c (where an Attach "auto"
 * lands, and the mirrors listed as rules) and cgroup-files.c (the files of
 * one cgroup directory). Invariants of the object: mirror.c's
 * opening paragraph.
 */

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>

#include "cgroup/mirror.h"
#include "core/group.h"

typedef struct Mirror {
        char *group;
        char *cgroup; /* relative to the mount, "/" for the root */
        /* Why the last prune kept it (a string constant), NULL: never kept;
         * so that a prune every sample logs a kept mirror once, not each time. */
        const char *kept_why;
} Mirror;

struct CgroupMirror {
        MemCore *core;
        CgroupNotifyFn notify; /* NULL: nobody is told */
        void *notify_userdata;
        pthread_mutex_t lock;
        char *mount;  /* the memory hierarchy; NULL: none */
        char *dmem;   /* the hierarchy with the dmem controller (mirror-dmem.c); NULL: none */
        bool v2;
        bool libcgroup; /* cgroup_init() succeeded */
        char *prefix;
        bool auto_create;
        char describe[512];
        Mirror *mirrors;
        size_t nmirrors;
        size_t unreadable; /* mirrors whose cgroup the last sample could not read */
};

/* What one import asks and gathers, passed down to every import_one(). */
typedef struct ImportRun {
        unsigned flags; /* CgroupImportFlags */
        CgroupKeptFn fn;
        void *userdata;
        unsigned kept; /* limits kept so far */
} ImportRun;

/** cgroup_mirror_path() - the group mirroring @cgroup: @under + @cgroup, into @buf. Return: 0, -ENAMETOOLONG. */
int cgroup_mirror_path(const char *under, const char *cgroup, char *buf, size_t size);

/** cgroup_make_parents() - create the missing groups above @path, plainly. Caller holds cs->lock. Return: 0 or -errno. */
int cgroup_make_parents(CgroupMirror *cs, const char *path);

/** cgroup_errno_text() - the words of an import's -errno @r (a string constant). */
const char *cgroup_errno_text(int r);

/**
 * cgroup_import_one() - mirror one cgroup as @group. The kernel's limits
 * are taken but for those a user set on the mirror (group_user_limits()),
 * which are kept and reported to @run. Caller holds cs->lock.
 * Return: 0 unchanged, 1 updated, 2 created, or a negative errno (the
 * cgroup is skipped).
 */
int cgroup_import_one(CgroupMirror *cs, ImportRun *run, const char *cgroup, const char *group);

/**
 * cgroup_read_file() - read @dir/@name into @buf (@size bytes, NUL-terminated). Any thread.
 * Return: 0; -ENAMETOOLONG; -errno of open() or read().
 */
int cgroup_read_file(const char *dir, const char *name, char *buf, size_t size);

/* Tell whoever listens of a change to the tree (cgroup_mirror_new()'s @notify). */
static inline void mirror_notify(CgroupMirror *cs, EventKind kind, const char *group, unsigned limits) {
        if (cs->notify)
                cs->notify(cs->notify_userdata, kind, group, limits);
}

/* ---- the kernel's dmem controller (mirror-dmem.c) ---- */

/* One line of a dmem file: @value in bytes, UINT64_MAX for "max". Return: 0, or < 0 to stop with it. */
typedef int (*CgroupDmemFn)(void *userdata, const char *region, uint64_t value);

/**
 * cgroup_dmem_parse() - the @size bytes of a dmem file's @text, each line
 * "REGION VALUE", to @fn. Any thread.
 * Return: 0; -EINVAL (a bad line: @fn may have seen the lines before it);
 * @fn's error.
 */
int cgroup_dmem_parse(const char *text, size_t size, CgroupDmemFn fn, void *userdata);

/** cgroup_dmem_find() - set cs->dmem where the host has the controller; @test_tree: the memory tree only. */
void cgroup_dmem_find(CgroupMirror *cs, bool test_tree);

/** cgroup_dmem_import_regions() - register the regions of the root's dmem.capacity. Caller holds cs->lock. */
int cgroup_dmem_import_regions(CgroupMirror *cs);

/**
 * cgroup_dmem_import_one() - take @cgroup's dmem.max, dmem.low and
 * dmem.min as @g's limits, and sample its dmem.current. Caller holds
 * cs->lock. Return: 1 when a limit changed, 0, or a negative errno.
 */
int cgroup_dmem_import_one(CgroupMirror *cs, const char *cgroup, MemGroup *g);

/** cgroup_dmem_sample_one() - @cgroup's dmem.current into @g's regions (region_set_kernel_current()). */
int cgroup_dmem_sample_one(CgroupMirror *cs, const char *cgroup, MemGroup *g);
