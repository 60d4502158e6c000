/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * mirror-dmem.c on fake trees: the kernel's dmem controller mirrored as
 * device regions. A temporary directory stands in for a cgroup v2 mount
 * with the dmem controller, its files written as kernel/cgroup/dmem.c
 * shows them: one "REGION VALUE" line per region, VALUE bytes or "max";
 * dmem.capacity on the root only, dmem.max/low/min below it.
 *
 * This host has no dmem controller (tests/cgroup's real-host check says
 * SKIP); these trees are the mirror's test.
 */

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <cmocka.h>

#include "cgroup/mirror-internal.h"
#include "cgroup/mirror.h"
#include "core/core.h"
#include "core/group.h"
#include "core/region.h"

#define VRAM "drm/0000:03:00.0/vram0"
#define VIDMEM "nvidia/0000:3b:00.0/vidmem"

static char root[64];

static void put(const char *rel, const char *name, const char *value) {
        char path[512];
        FILE *f;

        snprintf(path, sizeof(path), "%s%s/%s", root, rel, name);
        f = fopen(path, "w");
        assert_non_null(f);
        fputs(value, f);
        fclose(f);
}

static void dir(const char *rel) {
        char path[512];

        snprintf(path, sizeof(path), "%s%s", root, rel);
        assert_int_equal(mkdir(path, 0755), 0);
}

static int setup(void **state) {
        (void) state;
        snprintf(root, sizeof(root), "/tmp/memacct-dmemfake.XXXXXX");
        assert_non_null(mkdtemp(root));
        return 0;
}

static int teardown(void **state) {
        char cmd[128];

        (void) state;
        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
        return system(cmd) == 0 ? 0 : -1;
}

/* ---- the file grammar ---------------------------------------------------- */

typedef struct Lines {
        unsigned n;
        char names[4][MEM_REGION_NAME_MAX + 1];
        uint64_t values[4];
} Lines;

static int collect(void *userdata, const char *region, uint64_t value) {
        Lines *l = userdata;

        if (l->n == 4)
                return -E2BIG;
        snprintf(l->names[l->n], sizeof(l->names[l->n]), "%s", region);
        l->values[l->n++] = value;
        return 0;
}

static int parse(const char *text, Lines *l) {
        *l = (Lines) {};
        return cgroup_dmem_parse(text, strlen(text), collect, l);
}

static void test_dmem_files_parse_as_the_kernel_writes_them(void **state) {
        Lines l;

        (void) state;
        assert_int_equal(parse(VRAM " 8514437120\n" VIDMEM " max\n", &l), 0);
        assert_int_equal(l.n, 2);
        assert_string_equal(l.names[0], VRAM);
        assert_true(l.values[0] == UINT64_C(8514437120));
        assert_string_equal(l.names[1], VIDMEM);
        assert_true(l.values[1] == UINT64_MAX);
        /* An empty file (no region registered) and a missing final newline. */
        assert_int_equal(parse("", &l), 0);
        assert_int_equal(l.n, 0);
        assert_int_equal(parse("gpu0 0", &l), 0);
        assert_int_equal(l.n, 1);

        /* Anything else is not a dmem file: the whole file is refused. */
        assert_int_equal(parse("gpu0\n", &l), -EINVAL);          /* no value */
        assert_int_equal(parse("gpu0 \n", &l), -EINVAL);         /* empty value */
        assert_int_equal(parse("gpu0 12k\n", &l), -EINVAL);      /* the kernel writes bytes */
        assert_int_equal(parse("gpu0 -1\n", &l), -EINVAL);
        assert_int_equal(parse("gpu0  1\n", &l), -EINVAL);       /* two spaces */
        assert_int_equal(parse("gpu0\t1\n", &l), -EINVAL);
        assert_int_equal(parse("gpu=0 1\n", &l), -EINVAL);       /* not a region name */
        assert_int_equal(parse("gpu0 99999999999999999999\n", &l), -EINVAL);
        assert_int_equal(parse("gpu0 1\n\ngpu1 2\n", &l), 0);   /* blank lines carry nothing */
        assert_int_equal(l.n, 2);
}

/* ---- the mirror ---------------------------------------------------------- */

static MemRegionInfo region_of(MemCore *core, const char *path, const char *name) {
        MemRegionInfo none = { .max = UINT64_MAX };
        MemGroupInfo info;
        MemGroup *g = NULL;

        assert_int_equal(group_get(core, path, &g), 0);
        group_read(core, g, NULL, false, &info);
        group_unref(g);
        for (unsigned i = 0; i < info.nr_regions; i++)
                if (strcmp(info.regions[i].name, name) == 0)
                        return info.regions[i];
        return none;
}

static void tree(void) {
        put("", "cgroup.controllers", "memory dmem\n");
        put("", "dmem.capacity", VRAM " 8514437120\n" VIDMEM " 85899345920\n");
        put("", "dmem.current", VRAM " 1048576\n" VIDMEM " 0\n");
        dir("/job");
        put("/job", "memory.max", "max\n");
        put("/job", "memory.current", "8192\n");
        put("/job", "dmem.max", VRAM " 4294967296\n" VIDMEM " max\n");
        put("/job", "dmem.low", VRAM " 0\n" VIDMEM " 1073741824\n");
        put("/job", "dmem.min", VRAM " 0\n" VIDMEM " 0\n");
        put("/job", "dmem.current", VRAM " 1048576\n" VIDMEM " 0\n");
}

static void test_import_mirrors_regions_limits_and_usage(void **state) {
        MemCoreConfig cc = MEM_CORE_CONFIG_DEFAULT;
        MemRegionDesc list[MEM_REGION_MAX];
        MemCore *core = NULL;
        CgroupMirror *cs = NULL;
        CgroupCounts n;
        MemRegionInfo ri;
        Refusal rf;
        MemGroup *g = NULL;

        (void) state;
        tree();
        assert_int_equal(core_new(&cc, &core), 0);
        assert_int_equal(core_thread_register(core), 0);
        assert_int_equal(cgroup_mirror_new(core, NULL, NULL, root, "/k", false, &cs), 0);
        assert_non_null(strstr(cgroup_mirror_describe(cs), "dmem at"));
        assert_int_equal(cgroup_mirror_import(cs, NULL, NULL, &n, &rf), 2);

        /* The root's capacities are the regions. */
        assert_int_equal(core_region_list(core, list, MEM_REGION_MAX), 3);
        assert_string_equal(list[1].name, VRAM);
        assert_true(list[1].capacity == UINT64_C(8514437120));
        assert_string_equal(list[2].name, VIDMEM);

        /* The job's limits, as the kernel's files say; what is at its
         * default creates nothing. */
        ri = region_of(core, "/k/job", VRAM);
        assert_true(ri.max == UINT64_C(4294967296));
        assert_true(ri.kernel_current == 1048576);
        assert_true(ri.current == 0); /* nothing charged through us */
        ri = region_of(core, "/k/job", VIDMEM);
        assert_true(ri.max == UINT64_MAX);
        assert_true(ri.low == UINT64_C(1073741824));

        /* Unchanged: unchanged. A limit written in the kernel: updated. */
        assert_int_equal(cgroup_mirror_import(cs, NULL, NULL, &n, &rf), 0);
        put("/job", "dmem.max", VRAM " 2147483648\n" VIDMEM " max\n");
        assert_int_equal(cgroup_mirror_import(cs, NULL, NULL, &n, &rf), 1);
        assert_true(region_of(core, "/k/job", VRAM).max == UINT64_C(2147483648));

        /* A sample follows dmem.current. */
        put("/job", "dmem.current", VRAM " 3145728\n" VIDMEM " 4096\n");
        cgroup_mirror_sample(cs);
        assert_true(region_of(core, "/k/job", VRAM).kernel_current == 3145728);
        assert_true(region_of(core, "/k/job", VIDMEM).kernel_current == 4096);

        /* A bad file is not used at all: the last good values stay. */
        put("/job", "dmem.current", VRAM " lots\n");
        cgroup_mirror_sample(cs);
        assert_true(region_of(core, "/k/job", VRAM).kernel_current == 3145728);

        /* Our own charges are beside the kernel's figure, bounded by the
         * mirrored max. */
        assert_int_equal(group_get(core, "/k/job", &g), 0);
        assert_int_equal(region_charge_kept(core, g, core_region_lookup(core, VRAM), UINT64_C(2147483648), 0,
                                            NULL),
                         0);
        assert_int_equal(region_charge_kept(core, g, core_region_lookup(core, VRAM), 4096, 0, NULL), -EDQUOT);
        assert_int_equal(region_uncharge_kept_as(core, g, core_region_lookup(core, VRAM), UINT64_C(2147483648),
                                                 false),
                         0);
        group_unref(g);

        cgroup_mirror_free(cs);
        core_thread_unregister(core);
        core_free(core);
}

static void test_no_dmem_controller_no_regions(void **state) {
        MemCoreConfig cc = MEM_CORE_CONFIG_DEFAULT;
        MemRegionDesc list[MEM_REGION_MAX];
        MemCore *core = NULL;
        CgroupMirror *cs = NULL;
        CgroupCounts n;
        Refusal rf;

        (void) state;
        put("", "cgroup.controllers", "memory\n");
        dir("/job");
        put("/job", "memory.max", "max\n");
        assert_int_equal(core_new(&cc, &core), 0);
        assert_int_equal(core_thread_register(core), 0);
        assert_int_equal(cgroup_mirror_new(core, NULL, NULL, root, "/k", false, &cs), 0);
        assert_null(strstr(cgroup_mirror_describe(cs), "dmem at"));
        assert_int_equal(cgroup_mirror_import(cs, NULL, NULL, &n, &rf), 2);
        assert_int_equal(core_region_list(core, list, MEM_REGION_MAX), 1);
        cgroup_mirror_free(cs);
        core_thread_unregister(core);
        core_free(core);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_dmem_files_parse_as_the_kernel_writes_them),
                cmocka_unit_test_setup_teardown(test_import_mirrors_regions_limits_and_usage, setup, teardown),
                cmocka_unit_test_setup_teardown(test_no_dmem_controller_no_regions, setup, teardown),
        };

        return cmocka_run_group_tests_name("cgroup-mirror-dmem", tests, NULL, NULL);
}
