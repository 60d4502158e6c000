/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * cgroup-sync.c on fake trees (a temporary directory standing in for the
 * memory hierarchy's mount): the limit mapping of v1 and v2 files, and
 * import with its created / updated / unchanged counts. The real kernel
 * hierarchy is tests/cgroup/test-cgroup.sh's.
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
#include <unistd.h>
#include <cmocka.h>

#include "core/core.h"
#include "core/group.h"
#include "service/cgroup-sync.h"

/* The kernel's v1 "unlimited": LONG_MAX rounded down to a 4 KiB page. */
#define V1_UNLIMITED (UINT64_C(9223372036854775807) & ~UINT64_C(4095))

static char root[64];

static void put(const char *rel, const char *name, const char *value) {
        char path[512];
        FILE *f;

        snprintf(path, sizeof(path), "%s%s/%s", root, rel, name);
        f = fopen(path, "w");
        assert_non_null(f);
        fprintf(f, "%s\n", value);
        fclose(f);
}

static void dir(const char *rel) {
        char path[512];

        snprintf(path, sizeof(path), "%s%s", root, rel);
        assert_int_equal(mkdir(path, 0755), 0);
}

static int setup(void **state) {
        (void) state;
        snprintf(root, sizeof(root), "/tmp/memacct-cgfake.XXXXXX");
        assert_non_null(mkdtemp(root));
        return 0;
}

static int teardown(void **state) {
        char cmd[128];

        (void) state;
        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
        return system(cmd) == 0 ? 0 : -1;
}

static void v1_group(const char *rel, uint64_t limit, uint64_t soft) {
        char a[32], b[32];

        snprintf(a, sizeof(a), "%llu", (unsigned long long) limit);
        snprintf(b, sizeof(b), "%llu", (unsigned long long) soft);
        put(rel, "memory.limit_in_bytes", a);
        put(rel, "memory.soft_limit_in_bytes", b);
        put(rel, "memory.usage_in_bytes", "12288");
}

static void test_v1_unlimited_is_max(void **state) {
        (void) state;
        assert_true(cgroup_v1_to_limit(V1_UNLIMITED) == UINT64_MAX);
        assert_true(cgroup_v1_to_limit(CGROUP_V1_UNLIMITED_MIN) == UINT64_MAX);
        assert_true(cgroup_v1_to_limit(CGROUP_V1_UNLIMITED_MIN - 4096) == CGROUP_V1_UNLIMITED_MIN - 4096);
        assert_true(cgroup_v1_to_limit(1 << 20) == 1 << 20);
}

static void test_v1_limits_map_to_max_and_low(void **state) {
        MemLimits l;
        uint64_t u;

        (void) state;
        v1_group("", 256 << 20, 64 << 20);
        assert_int_equal(cgroup_read_limits(root, false, &l), 0);
        assert_true((l.set & MEM_LIMIT_MAX) && l.max == 256 << 20);
        assert_true((l.set & MEM_LIMIT_LOW) && l.low == 64 << 20);
        assert_false((l.set & MEM_LIMIT_HIGH));
        assert_false((l.set & MEM_LIMIT_MIN));
        assert_int_equal(cgroup_read_usage(root, false, &u), 0);
        assert_true(u == 12288);

        /* Unlimited: max is "max"; an unlimited soft limit is no protection. */
        v1_group("", V1_UNLIMITED, V1_UNLIMITED);
        assert_int_equal(cgroup_read_limits(root, false, &l), 0);
        assert_true(l.max == UINT64_MAX);
        assert_true((l.set & MEM_LIMIT_LOW) && l.low == 0);

        put("", "memory.limit_in_bytes", "lots");
        assert_int_equal(cgroup_read_limits(root, false, &l), -EINVAL);
}

static void test_v2_limits_map_one_to_one(void **state) {
        MemLimits l;
        uint64_t u;

        (void) state;
        put("", "memory.max", "max");
        put("", "memory.high", "1048576");
        put("", "memory.low", "4096");
        put("", "memory.min", "0");
        put("", "memory.current", "8192");
        assert_int_equal(cgroup_read_limits(root, true, &l), 0);
        assert_true((l.set & MEM_LIMIT_MAX) && l.max == UINT64_MAX);
        assert_true((l.set & MEM_LIMIT_HIGH) && l.high == 1048576);
        assert_true((l.set & MEM_LIMIT_LOW) && l.low == 4096);
        assert_true((l.set & MEM_LIMIT_MIN) && l.min == 0);
        assert_int_equal(cgroup_read_usage(root, true, &u), 0);
        assert_true(u == 8192);
}

static void test_missing_files_leave_limits_absent(void **state) {
        MemLimits l;
        uint64_t u;

        (void) state;
        /* The root of a v2 hierarchy has no memory.max. */
        assert_int_equal(cgroup_read_limits(root, true, &l), 0);
        assert_false((l.set & MEM_LIMIT_MAX) || (l.set & MEM_LIMIT_HIGH) || (l.set & MEM_LIMIT_LOW) || (l.set & MEM_LIMIT_MIN));
        assert_int_equal(cgroup_read_usage(root, true, &u), -ENOENT);
}

static void show(MemCore *core, const char *path, MemGroupInfo *info) {
        MemGroup *g = NULL;

        assert_int_equal(group_get(core, path, &g), 0);
        group_read(core, g, NULL, false, info);
        group_unref(g);
}

static void test_import_is_idempotent_and_counts(void **state) {
        MemCoreConfig cc = MEM_CORE_CONFIG_DEFAULT;
        MemCore *core = NULL;
        CgroupSync *cs = NULL;
        CgroupCounts n;
        MemGroupInfo info;
        Refusal rf;

        (void) state;
        v1_group("", V1_UNLIMITED, V1_UNLIMITED);
        dir("/a");
        v1_group("/a", 512 << 20, 128 << 20);
        dir("/a/b");
        v1_group("/a/b", 256 << 20, V1_UNLIMITED);
        dir("/bad name");
        v1_group("/bad name", V1_UNLIMITED, V1_UNLIMITED);

        assert_int_equal(core_new(&cc, &core), 0);
        assert_int_equal(core_thread_register(core), 0);
        assert_int_equal(cgroup_sync_new(core, NULL, root, "/k", false, &cs), 0);
        assert_true(cgroup_sync_available(cs));

        /* Three valid cgroups; "bad name" is not a group name and is skipped. */
        assert_int_equal(cgroup_sync_import(cs, NULL, NULL, &n, &rf), 3);
        assert_int_equal(n.created, 3);
        assert_int_equal(n.updated, 0);
        assert_int_equal(n.unchanged, 0);
        show(core, "/k/a", &info);
        assert_true(info.mirror);
        assert_true(info.max == 512 << 20);
        assert_true(info.low == 128 << 20);
        assert_true(info.kernel_current == 12288);
        show(core, "/k/a/b", &info);
        assert_true(info.max == 256 << 20);
        assert_true(info.low == 0);
        show(core, "/k", &info);
        assert_true(info.max == UINT64_MAX);

        assert_int_equal(cgroup_sync_import(cs, "/", "/k", &n, &rf), 0);
        assert_int_equal(n.created, 0);
        assert_int_equal(n.updated, 0);
        assert_int_equal(n.unchanged, 3);

        /* The kernel's limit changed: one update; usage is sampled. */
        v1_group("/a/b", 128 << 20, V1_UNLIMITED);
        put("/a/b", "memory.usage_in_bytes", "65536");
        assert_int_equal(cgroup_sync_import(cs, "/a", NULL, &n, &rf), 1);
        assert_int_equal(n.created, 0);
        assert_int_equal(n.updated, 1);
        assert_int_equal(n.unchanged, 1);
        show(core, "/k/a/b", &info);
        assert_true(info.max == 128 << 20);
        put("/a/b", "memory.usage_in_bytes", "131072");
        cgroup_sync_sample(cs);
        show(core, "/k/a/b", &info);
        assert_true(info.kernel_current == 131072);

        /* A group that is no mirror reports no kernel usage. */
        assert_int_equal(group_create(core, "/plain", 0), 0);
        show(core, "/plain", &info);
        assert_false(info.mirror);
        assert_true(info.kernel_current == 0);

        assert_int_equal(cgroup_sync_import(cs, "/nope", NULL, &n, &rf), -ENOENT);
        assert_non_null(strstr(rf.message, "/nope"));
        assert_int_equal(cgroup_sync_import(cs, "relative", NULL, &n, &rf), -EINVAL);

        cs = cgroup_sync_free(cs);
        core_thread_unregister(core);
        core = core_free(core);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_v1_unlimited_is_max),
                cmocka_unit_test_setup_teardown(test_v1_limits_map_to_max_and_low, setup, teardown),
                cmocka_unit_test_setup_teardown(test_v2_limits_map_one_to_one, setup, teardown),
                cmocka_unit_test_setup_teardown(test_missing_files_leave_limits_absent, setup, teardown),
                cmocka_unit_test_setup_teardown(test_import_is_idempotent_and_counts, setup, teardown),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
