/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Kernel cgroup mirror: the kernel's own dmem controller
 *
 * Where the host has the dmem controller (Linux 6.14+, cgroup v2), its
 * regions and each cgroup's use of them are mirrored as memory is: the
 * root's dmem.capacity registers our regions, each mirrored cgroup's
 * dmem.max, dmem.low and dmem.min become the group's limits in them (the
 * kernel owns a mirror's limits, as it owns memory's), and each sample
 * reads dmem.current beside our own usage (docs/regions.md).
 *
 * The files hold one line per region, "NAME VALUE" with VALUE bytes or
 * "max" (kernel/cgroup/dmem.c, dmemcg_limit_show()). They come from the
 * kernel, but they are parsed as any outside input: bounded, every line
 * checked, and a file with one bad line is not used at all.
 */

#include <errno.h>
#include <limits.h>
#include <mntent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/log.h"
#include "cgroup/mirror-internal.h"
#include "core/region.h"
#include "macro.h"

/* A dmem file: one line per region, and there are at most MEM_REGION_MAX. */
#define DMEM_FILE_MAX (MEM_REGION_MAX * (MEM_REGION_NAME_MAX + 24) + 1)

int cgroup_dmem_parse(const char *text, size_t size, CgroupDmemFn fn, void *userdata) {
        const char *p = text, *end = text + size;
        unsigned lines = 0;

        while (p < end) {
                const char *nl = memchr(p, '\n', (size_t) (end - p)), *eol = nl ? nl : end;
                char name[MEM_REGION_NAME_MAX + 1], value[24];
                const char *sp = memchr(p, ' ', (size_t) (eol - p));
                uint64_t v;
                int r;

                if (eol == p) { /* an empty line: only the last, after the final newline */
                        p = eol + 1;
                        continue;
                }
                if (++lines > MEM_REGION_MAX || !sp || (size_t) (sp - p) > MEM_REGION_NAME_MAX ||
                    (size_t) (eol - sp - 1) >= sizeof(value) || eol - sp - 1 == 0)
                        return -EINVAL;
                memcpy(name, p, (size_t) (sp - p));
                name[sp - p] = 0;
                memcpy(value, sp + 1, (size_t) (eol - sp - 1));
                value[eol - sp - 1] = 0;
                if (mem_region_name_check(name) < 0)
                        return -EINVAL;
                if (strcmp(value, "max") == 0)
                        v = UINT64_MAX;
                else {
                        char *e;

                        if (value[0] < '0' || value[0] > '9')
                                return -EINVAL;
                        errno = 0;
                        v = strtoull(value, &e, 10);
                        if (errno || *e)
                                return -EINVAL;
                }
                r = fn(userdata, name, v);
                if (r < 0)
                        return r;
                p = eol + (nl ? 1 : 0);
        }
        return 0;
}

/* Read the dmem file @name of @cgroup into @buf; -EFBIG when it may not
 * all have fit. */
static int read_dmem_file(CgroupMirror *cs, const char *cgroup, const char *name, char *buf, size_t *ret_len) {
        char dir[PATH_MAX];
        size_t n;
        int r;

        if ((size_t) snprintf(dir, sizeof(dir), "%s%s", cs->dmem, strcmp(cgroup, "/") == 0 ? "" : cgroup) >=
            sizeof(dir))
                return -ENAMETOOLONG;
        r = cgroup_read_file(dir, name, buf, DMEM_FILE_MAX);
        if (r < 0)
                return r;
        n = strlen(buf);
        if (n >= DMEM_FILE_MAX - 1)
                return -EFBIG;
        *ret_len = n;
        return 0;
}

/* Where the dmem files are: the memory hierarchy when it is v2 and has
 * them, else (a v1 memory hierarchy beside a cgroup2 mount) a cgroup2
 * mount whose root has dmem.capacity. Not looked for on a test's tree. */
void cgroup_dmem_find(CgroupMirror *cs, bool test_tree) {
        char probe[PATH_MAX];
        struct mntent *me;
        struct stat st;
        FILE *f;

        if (cs->mount && cs->v2) {
                snprintf(probe, sizeof(probe), "%s/dmem.capacity", cs->mount);
                if (stat(probe, &st) == 0)
                        cs->dmem = strdup(cs->mount);
                return;
        }
        if (test_tree)
                return;
        f = setmntent("/proc/self/mounts", "re");
        if (!f)
                return;
        while (!cs->dmem && (me = getmntent(f))) {
                if (strcmp(me->mnt_type, "cgroup2") != 0)
                        continue;
                snprintf(probe, sizeof(probe), "%s/dmem.capacity", me->mnt_dir);
                if (stat(probe, &st) == 0)
                        cs->dmem = strdup(me->mnt_dir);
        }
        endmntent(f);
}

static int add_region(void *userdata, const char *name, uint64_t capacity) {
        CgroupMirror *cs = userdata;
        int r = core_region_add(cs->core, name, capacity);

        /* Registered by an administrator with another capacity: theirs
         * stands; the kernel's is said once per import. */
        if (r == -EEXIST)
                log_warning("dmem region %s: the kernel's capacity %llu differs from the registered one; "
                            "kept the registered one", name, (unsigned long long) capacity);
        else if (r < 0)
                log_warning("dmem region %s: not mirrored: %s", name, cgroup_errno_text(r));
        return 0;
}

int cgroup_dmem_import_regions(CgroupMirror *cs) {
        char buf[DMEM_FILE_MAX];
        size_t n;
        int r;

        if (!cs->dmem)
                return 0;
        r = read_dmem_file(cs, "/", "dmem.capacity", buf, &n);
        if (r < 0)
                return r;
        return cgroup_dmem_parse(buf, n, add_region, cs);
}

typedef struct LimitRun {
        CgroupMirror *cs;
        MemGroup *g;
        MemLimitMask bit;
        unsigned changed;
} LimitRun;

static int take_limit(void *userdata, const char *name, uint64_t v) {
        LimitRun *run = userdata;
        int key = core_region_lookup(run->cs->core, name);
        MemLimits l = { .set = run->bit, .max = v, .low = v, .min = v }, now;

        if (key <= 0)
                return 0; /* not mirrored (see add_region()) */
        /* A cgroup that never used the region reads "max" and 0: nothing
         * to create counters for. */
        if (!region_limits(run->cs->core, run->g, key, &now)) {
                if ((run->bit == MEM_LIMIT_MAX && v == UINT64_MAX) || (run->bit != MEM_LIMIT_MAX && v == 0))
                        return 0;
        } else if ((run->bit == MEM_LIMIT_MAX && now.max == v) || (run->bit == MEM_LIMIT_LOW && now.low == v) ||
                   (run->bit == MEM_LIMIT_MIN && now.min == v))
                return 0;
        /* The root's max is the capacity, registered above. */
        if (!run->g->parent && run->bit == MEM_LIMIT_MAX)
                return 0;
        /* The kernel's word is final on a mirror: a max below our usage
         * is taken, as a dmem.max write is. */
        if (region_set_limits(run->cs->core, run->g, key, &l, true) >= 0) {
                run->changed |= run->bit;
                mirror_notify(run->cs, EVENT_LIMITS_CHANGED, run->g->path, run->bit);
        }
        return 0;
}

int cgroup_dmem_import_one(CgroupMirror *cs, const char *cgroup, MemGroup *g) {
        static const struct {
                const char *file;
                MemLimitMask bit;
        } files[] = {
                { "dmem.max", MEM_LIMIT_MAX },
                { "dmem.low", MEM_LIMIT_LOW },
                { "dmem.min", MEM_LIMIT_MIN },
        };
        char buf[DMEM_FILE_MAX];
        LimitRun run = { .cs = cs, .g = g };
        size_t n;

        if (!cs->dmem)
                return 0;
        for (size_t i = 0; i < ELEMENTSOF(files); i++) {
                int r = read_dmem_file(cs, cgroup, files[i].file, buf, &n);

                run.bit = files[i].bit;
                /* The root has no limit files, and a cgroup whose parent
                 * does not enable dmem for it has none either. */
                if (r == -ENOENT)
                        continue;
                if (r >= 0)
                        r = cgroup_dmem_parse(buf, n, take_limit, &run);
                if (r < 0)
                        return r;
        }
        cgroup_dmem_sample_one(cs, cgroup, g);
        return run.changed ? 1 : 0;
}

typedef struct SampleRun {
        MemCore *core;
        MemGroup *g;
} SampleRun;

static int take_current(void *userdata, const char *name, uint64_t v) {
        SampleRun *run = userdata;
        int key = core_region_lookup(run->core, name);

        if (key > 0 && v != UINT64_MAX)
                (void) region_set_kernel_current(run->core, run->g, key, v);
        return 0;
}

int cgroup_dmem_sample_one(CgroupMirror *cs, const char *cgroup, MemGroup *g) {
        char buf[DMEM_FILE_MAX];
        SampleRun run = { .core = cs->core, .g = g };
        size_t n;
        int r;

        if (!cs->dmem)
                return 0;
        r = read_dmem_file(cs, cgroup, "dmem.current", buf, &n);
        if (r >= 0)
                r = cgroup_dmem_parse(buf, n, take_current, &run);
        return r;
}
