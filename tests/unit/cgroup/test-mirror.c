/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * mirror.c on fake trees (a temporary directory standing in for the
 * memory hierarchy's mount): the limit mapping of v1 and v2 files, and
 * import with its created / updated / unchanged counts, and the limits a
 * user set on a mirror: kept by a re-import, given back by a reset, saved
 * and restored with the state and its journal. The real kernel
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
#include "cgroup/mirror.h"
#include "state/persist-internal.h"
#include "state/persist.h"

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
        CgroupMirror *cs = NULL;
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
        assert_int_equal(cgroup_mirror_new(core, NULL, NULL, root, "/k", false, &cs), 0);
        assert_true(cgroup_mirror_available(cs));

        /* Three valid cgroups; "bad name" is not a group name and is skipped. */
        assert_int_equal(cgroup_mirror_import(cs, NULL, NULL, &n, &rf), 3);
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

        assert_int_equal(cgroup_mirror_import(cs, "/", "/k", &n, &rf), 0);
        assert_int_equal(n.created, 0);
        assert_int_equal(n.updated, 0);
        assert_int_equal(n.unchanged, 3);

        /* The kernel's limit changed: one update; usage is sampled. */
        v1_group("/a/b", 128 << 20, V1_UNLIMITED);
        put("/a/b", "memory.usage_in_bytes", "65536");
        assert_int_equal(cgroup_mirror_import(cs, "/a", NULL, &n, &rf), 1);
        assert_int_equal(n.created, 0);
        assert_int_equal(n.updated, 1);
        assert_int_equal(n.unchanged, 1);
        show(core, "/k/a/b", &info);
        assert_true(info.max == 128 << 20);
        put("/a/b", "memory.usage_in_bytes", "131072");
        cgroup_mirror_sample(cs);
        show(core, "/k/a/b", &info);
        assert_true(info.kernel_current == 131072);

        /* A group that is no mirror reports no kernel usage. */
        assert_int_equal(group_create(core, "/plain", 0), 0);
        show(core, "/plain", &info);
        assert_false(info.mirror);
        assert_true(info.kernel_current == 0);

        assert_int_equal(cgroup_mirror_import(cs, "/nope", NULL, &n, &rf), -ENOENT);
        assert_non_null(strstr(rf.message, "/nope"));
        assert_int_equal(cgroup_mirror_import(cs, "relative", NULL, &n, &rf), -EINVAL);

        cs = cgroup_mirror_free(cs);
        core_thread_unregister(core);
        core = core_free(core);
}

/* A v2 cgroup with these limits ("max" or bytes) and 8 KiB used. */
static void v2_group(const char *rel, const char *max, const char *high, const char *low, const char *min) {
        put(rel, "memory.max", max);
        put(rel, "memory.high", high);
        put(rel, "memory.low", low);
        put(rel, "memory.min", min);
        put(rel, "memory.current", "8192");
}

typedef struct Kept {
        unsigned calls;
        char group[64];
        MemLimits ours, kernel;
} Kept;

static void on_kept(void *userdata, const char *group, unsigned kept, const MemLimits *ours,
                    const MemLimits *kernel) {
        Kept *k = userdata;

        k->calls++;
        snprintf(k->group, sizeof(k->group), "%s", group);
        assert_int_equal(kept, ours->set);
        k->ours = *ours;
        k->kernel = *kernel;
}

/* What service_set_limits() does on a mirror: set, and mark the user's. */
static void user_sets(MemCore *core, const char *path, const MemLimits *l) {
        MemGroup *g = NULL;

        assert_int_equal(group_get(core, path, &g), 0);
        assert_true(group_is_mirror(g));
        assert_true(group_set_limits(g, l, false) >= 0);
        group_add_user_limits(g, l->set);
        group_unref(g);
}

static unsigned user_mask(MemCore *core, const char *path) {
        MemGroup *g = NULL;
        unsigned m;

        assert_int_equal(group_get(core, path, &g), 0);
        m = group_user_limits(g);
        group_unref(g);
        return m;
}

static MemCore *new_core(void) {
        MemCoreConfig cc = MEM_CORE_CONFIG_DEFAULT;
        MemCore *core = NULL;

        assert_int_equal(core_new(&cc, &core), 0);
        assert_int_equal(core_thread_register(core), 0);
        return core;
}

static void free_core(MemCore *core) {
        core_thread_unregister(core);
        core_free(core);
}

static void test_user_limits_kept_on_reimport(void **state) {
        MemCore *core = new_core();
        MemLimits l = { .set = MEM_LIMIT_MAX, .max = 100 << 20 };
        CgroupMirror *cs = NULL;
        CgroupCounts n;
        MemGroupInfo info;
        Kept k = {};
        Refusal rf;

        (void) state;
        put("", "cgroup.controllers", "memory");
        v2_group("", "max", "max", "0", "0");
        dir("/x");
        v2_group("/x", "536870912", "max", "0", "0");
        assert_int_equal(cgroup_mirror_new(core, NULL, NULL, root, "/k", false, &cs), 0);
        assert_int_equal(cgroup_mirror_kernel_limits(cs), MEM_LIMIT_MAX | MEM_LIMIT_HIGH | MEM_LIMIT_LOW | MEM_LIMIT_MIN);
        assert_int_equal(cgroup_mirror_import(cs, NULL, NULL, &n, &rf), 2);
        assert_int_equal(user_mask(core, "/k/x"), 0);

        user_sets(core, "/k/x", &l);
        assert_int_equal(user_mask(core, "/k/x"), MEM_LIMIT_MAX);

        /* The kernel changes high (its own) and keeps its max: the user's max stays. */
        put("/x", "memory.high", "268435456");
        assert_int_equal(cgroup_mirror_import_with(cs, NULL, NULL, 0, on_kept, &k, &n, &rf), 1);
        assert_int_equal(n.updated, 1);
        assert_int_equal(n.unchanged, 1);
        assert_int_equal(n.kept, 1);
        assert_int_equal(n.kernel_owned, MEM_LIMIT_MAX | MEM_LIMIT_HIGH | MEM_LIMIT_LOW | MEM_LIMIT_MIN);
        show(core, "/k/x", &info);
        assert_true(info.max == 100 << 20);
        assert_true(info.high == 256 << 20);
        assert_true(info.mirror);
        assert_int_equal(k.calls, 1);
        assert_string_equal(k.group, "/k/x");
        assert_int_equal(k.ours.set, MEM_LIMIT_MAX);
        assert_true(k.ours.max == 100 << 20);
        assert_int_equal(k.kernel.set, MEM_LIMIT_MAX);
        assert_true(k.kernel.max == 512 << 20);

        /* Nothing changed: unchanged, the kept max still reported. */
        k = (Kept) {};
        assert_int_equal(cgroup_mirror_import_with(cs, NULL, NULL, 0, on_kept, &k, &n, &rf), 0);
        assert_int_equal(n.unchanged, 2);
        assert_int_equal(n.kept, 1);
        assert_int_equal(k.calls, 1);

        /* Plain imports and the mask: the kernel's equal max is no "kept" report. */
        put("/x", "memory.max", "104857600");
        k = (Kept) {};
        assert_int_equal(cgroup_mirror_import_with(cs, NULL, NULL, 0, on_kept, &k, &n, &rf), 0);
        assert_int_equal(n.kept, 0);
        assert_int_equal(k.calls, 0);
        assert_int_equal(user_mask(core, "/k/x"), MEM_LIMIT_MAX);

        /* The kernel lowers max again: still the user's. */
        put("/x", "memory.max", "52428800");
        assert_int_equal(cgroup_mirror_import(cs, NULL, NULL, &n, &rf), 0);
        show(core, "/k/x", &info);
        assert_true(info.max == 100 << 20);

        cs = cgroup_mirror_free(cs);
        free_core(core);
}

static void test_kernel_limits_follow_the_kernel(void **state) {
        MemCore *core = new_core();
        MemLimits l = { .set = MEM_LIMIT_LOW, .low = 1 << 20 };
        CgroupMirror *cs = NULL;
        CgroupCounts n;
        MemGroupInfo info;
        Refusal rf;

        (void) state;
        v1_group("", V1_UNLIMITED, V1_UNLIMITED);
        dir("/x");
        v1_group("/x", 512 << 20, 128 << 20);
        assert_int_equal(cgroup_mirror_new(core, NULL, NULL, root, "/k", false, &cs), 0);
        assert_int_equal(cgroup_mirror_kernel_limits(cs), MEM_LIMIT_MAX | MEM_LIMIT_LOW);
        assert_int_equal(cgroup_mirror_import(cs, NULL, NULL, &n, &rf), 2);
        user_sets(core, "/k/x", &l);

        /* v1: the user owns low; max is the kernel's and follows it. */
        v1_group("/x", 256 << 20, 64 << 20);
        assert_int_equal(cgroup_mirror_import(cs, NULL, NULL, &n, &rf), 1);
        assert_int_equal(n.kept, 1);
        show(core, "/k/x", &info);
        assert_true(info.max == 256 << 20);
        assert_true(info.low == 1 << 20);

        /* A limit v1 does not expose (high) is the user's either way. */
        l = (MemLimits) { .set = MEM_LIMIT_HIGH, .high = 200 << 20 };
        user_sets(core, "/k/x", &l);
        assert_int_equal(cgroup_mirror_import(cs, NULL, NULL, &n, &rf), 0);
        assert_int_equal(n.kept, 1); /* low only: the kernel has no high to differ */
        show(core, "/k/x", &info);
        assert_true(info.high == 200 << 20);

        cs = cgroup_mirror_free(cs);
        free_core(core);
}

static void test_reset_limits_gives_them_back(void **state) {
        MemCore *core = new_core();
        MemLimits l = { .set = MEM_LIMIT_MAX | MEM_LIMIT_HIGH, .max = 100 << 20, .high = 90 << 20 };
        CgroupMirror *cs = NULL;
        CgroupCounts n;
        MemGroupInfo info;
        Kept k = {};
        Refusal rf;

        (void) state;
        put("", "cgroup.controllers", "memory");
        v2_group("", "max", "max", "0", "0");
        dir("/x");
        v2_group("/x", "536870912", "max", "0", "0");
        dir("/y");
        v2_group("/y", "536870912", "max", "0", "0");
        assert_int_equal(cgroup_mirror_new(core, NULL, NULL, root, "/k", false, &cs), 0);
        assert_int_equal(cgroup_mirror_import(cs, NULL, NULL, &n, &rf), 3);
        user_sets(core, "/k/x", &l);
        user_sets(core, "/k/y", &l);

        /* Only the imported subtree is reset. */
        assert_int_equal(cgroup_mirror_import_with(cs, "/x", NULL, CGROUP_IMPORT_RESET_LIMITS, on_kept, &k, &n, &rf),
                         1);
        assert_int_equal(n.updated, 1);
        assert_int_equal(n.kept, 0);
        assert_int_equal(k.calls, 0);
        assert_int_equal(user_mask(core, "/k/x"), 0);
        assert_int_equal(user_mask(core, "/k/y"), MEM_LIMIT_MAX | MEM_LIMIT_HIGH);
        show(core, "/k/x", &info);
        assert_true(info.max == 512 << 20);
        assert_true(info.high == UINT64_MAX);
        show(core, "/k/y", &info);
        assert_true(info.max == 100 << 20);

        /* Given back: the kernel's changes now follow. */
        put("/x", "memory.max", "268435456");
        assert_int_equal(cgroup_mirror_import(cs, NULL, NULL, &n, &rf), 1);
        show(core, "/k/x", &info);
        assert_true(info.max == 256 << 20);
        assert_int_equal(n.kept, 2); /* /k/y's max and high */

        cs = cgroup_mirror_free(cs);
        free_core(core);
}

static void write_file(const char *dir_path, const char *name, const char *text, size_t n) {
        char path[256];
        FILE *f;

        snprintf(path, sizeof(path), "%s/%s", dir_path, name);
        f = fopen(path, "w");
        assert_non_null(f);
        assert_int_equal(fwrite(text, 1, n, f), n);
        fclose(f);
}

static void test_user_limits_saved_and_restored(void **state) {
        char sdir[64], cmd[128], *text = NULL, *batch = NULL, *error = NULL;
        MemLimits l = { .set = MEM_LIMIT_MAX | MEM_LIMIT_MIN, .max = 100 << 20, .min = 1 << 20 };
        MemCore *core = new_core(), *fresh;
        CgroupMirror *cs = NULL;
        const char *step = NULL, *paths[] = { "/k/y" };
        size_t size, bsize;
        CgroupCounts n;
        MemGroupInfo info;
        Refusal rf;

        (void) state;
        put("", "cgroup.controllers", "memory");
        v2_group("", "max", "max", "0", "0");
        dir("/x");
        v2_group("/x", "536870912", "max", "0", "0");
        dir("/y");
        v2_group("/y", "536870912", "max", "0", "0");
        assert_int_equal(cgroup_mirror_new(core, NULL, NULL, root, "/k", false, &cs), 0);
        assert_int_equal(cgroup_mirror_import(cs, NULL, NULL, &n, &rf), 3);
        user_sets(core, "/k/x", &l);

        /* The field, and a state without it or with a bad one. */
        assert_int_equal(persist_format(core, &text, &size), 0);
        assert_non_null(strstr(text, "group /k/x owner=0 max=104857600 high=max low=0 min=1048576 user-limits=max,min"));
        assert_null(strstr(strstr(text, "group /k/y "), "user-limits"));
        assert_int_equal(persist_check(text, size, 32, 4096, &error), 4);
        free(text);
        {
                static const char *const bad[] = { "max,max", "", "max,", "peak", "max,high,low,min,max" };

                for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
                        char line[256];
                        CheckContext ctx = {};
                        StateGroup sg = { .path = (char *) "/" };

                        snprintf(line, sizeof(line), "owner=0 max=max high=max low=0 min=0 user-limits=%s", bad[i]);
                        assert_int_equal(parse_group_fields(&ctx, 2, line, &(StateRegions) {}, &(StateUses) {}, &sg),
                                         -EBADMSG);
                        assert_non_null(strstr(ctx.error, "user-limits"));
                        free(ctx.error);
                }
                {
                        char line[] = "owner=0 max=max high=max low=0 min=0 user-limits=min,low";
                        CheckContext ctx = {};
                        StateGroup sg = { .path = (char *) "/" };

                        assert_int_equal(
                                parse_group_fields(&ctx, 2, line, &(StateRegions) {}, &(StateUses) {}, &sg), 0);
                        assert_int_equal(sg.user_limits, MEM_LIMIT_MIN | MEM_LIMIT_LOW);
                }
        }

        snprintf(sdir, sizeof(sdir), "/tmp/memacct-keep.XXXXXX");
        assert_non_null(mkdtemp(sdir));
        assert_int_equal(persist_save(core, sdir, -1, false, NULL, &step), 0);

        /* A later change, in the journal only: /k/y's high becomes the user's. */
        l = (MemLimits) { .set = MEM_LIMIT_HIGH, .high = 300 << 20 };
        user_sets(core, "/k/y", &l);
        assert_int_equal(persist_journal_batch(core, paths, 1, &batch, &bsize), 0);
        assert_non_null(strstr(batch, "user-limits=high"));
        {
                char *j = malloc(bsize + 32);

                assert_non_null(j);
                size = (size_t) sprintf(j, "memacctd-journal 1\n");
                memcpy(j + size, batch, bsize);
                write_file(sdir, "journal", j, size + bsize);
                free(j);
        }
        free(batch);

        cs = cgroup_mirror_free(cs);
        core_thread_unregister(core);
        fresh = new_core();
        assert_int_equal(persist_restore(fresh, sdir), 0);
        assert_int_equal(user_mask(fresh, "/k/x"), MEM_LIMIT_MAX | MEM_LIMIT_MIN);
        assert_int_equal(user_mask(fresh, "/k/y"), MEM_LIMIT_HIGH);
        assert_int_equal(user_mask(fresh, "/k"), 0);

        /* After the restart the mirror marks are gone; the import at start keeps the user's. */
        assert_int_equal(cgroup_mirror_new(fresh, NULL, NULL, root, "/k", false, &cs), 0);
        assert_true(cgroup_mirror_import(cs, NULL, NULL, &n, &rf) >= 0);
        assert_int_equal(n.kept, 3);
        show(fresh, "/k/x", &info);
        assert_true(info.max == 100 << 20);
        assert_true(info.min == 1 << 20);
        show(fresh, "/k/y", &info);
        assert_true(info.high == 300 << 20);
        assert_true(info.max == 512 << 20);
        cs = cgroup_mirror_free(cs);
        free_core(fresh);
        assert_int_equal(core_thread_register(core), 0);
        free_core(core);
        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", sdir);
        assert_int_equal(system(cmd), 0);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_v1_unlimited_is_max),
                cmocka_unit_test_setup_teardown(test_v1_limits_map_to_max_and_low, setup, teardown),
                cmocka_unit_test_setup_teardown(test_v2_limits_map_one_to_one, setup, teardown),
                cmocka_unit_test_setup_teardown(test_missing_files_leave_limits_absent, setup, teardown),
                cmocka_unit_test_setup_teardown(test_import_is_idempotent_and_counts, setup, teardown),
                cmocka_unit_test_setup_teardown(test_user_limits_kept_on_reimport, setup, teardown),
                cmocka_unit_test_setup_teardown(test_kernel_limits_follow_the_kernel, setup, teardown),
                cmocka_unit_test_setup_teardown(test_reset_limits_gives_them_back, setup, teardown),
                cmocka_unit_test_setup_teardown(test_user_limits_saved_and_restored, setup, teardown),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
