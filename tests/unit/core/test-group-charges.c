/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Charges through groups (group.h, charge.h): every charge lands on the
 * group and each ancestor or on none of them, a refusal names the group
 * that refused it, and arguments out of range charge nothing.
 *
 * Kept charges belong to the group rather than to a session: they are
 * released per item and never beyond what is kept of that item, removing
 * the group releases them from its ancestors, and a removed group takes no
 * more of them.
 */

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "charge.h"
#include "core-test.h"
#include "core.h"
#include "group.h"
#include "stats.h"

/* ---- charging along a deep path ------------------------------------------ */

static void test_deepest_tree_charges_and_uncharges_every_level(void **state) {
        MemCore *core = *state;
        unsigned depth = MEM_CORE_CONFIG_DEFAULT.max_depth;
        MemChargeResult res;
        char path[512], mid_path[512];
        MemGroup *leaf, *mid;

        for (unsigned i = 1; i <= depth; i++) {
                deep_path(path, sizeof(path), i);
                assert_int_equal(group_create(core, path, 0), 0);
        }
        deep_path(path, sizeof(path), depth + 1);
        assert_int_equal(group_create(core, path, 0), -EMLINK);
        assert_int_equal(core_group_count(core), depth + 1);

        deep_path(path, sizeof(path), depth);
        leaf = take_group(core, path);
        assert_int_equal(leaf->depth, depth);

        assert_int_equal(group_charge(core, leaf, 1 * MiB, MEM_STAT_ANON, 0, &res), 0);
        assert_null(res.refused);
        for (MemGroup *g = leaf; g; g = g->parent)
                assert_int_equal(usage_of(g), 1 * MiB);

        /* A limit halfway up refuses, names itself, and nothing stays charged. */
        deep_path(mid_path, sizeof(mid_path), depth / 2);
        mid = take_group(core, mid_path);
        assert_int_equal(group_set_max(mid, 1536 * KiB, false), 0);
        assert_int_equal(group_charge(core, leaf, 1 * MiB, MEM_STAT_ANON, 0, &res), -EDQUOT);
        assert_ptr_equal(res.refused, mid);
        assert_string_equal(res.refused->path, mid_path);
        charge_result_done(&res);
        for (MemGroup *g = leaf; g; g = g->parent)
                assert_int_equal(usage_of(g), 1 * MiB);

        group_uncharge(core, leaf, 1 * MiB, MEM_STAT_ANON);
        for (MemGroup *g = leaf; g; g = g->parent)
                assert_int_equal(usage_of(g), 0);
        group_unref(mid);
        group_unref(leaf);

        /* And the tree comes down leaf first. */
        for (unsigned i = depth; i >= 1; i--) {
                deep_path(path, sizeof(path), i);
                assert_int_equal(group_remove(core, path), 0);
        }
        assert_int_equal(core_group_count(core), 1);
}

static void test_charge_refuses_bad_item_and_oversize(void **state) {
        MemCore *core = *state;
        MemChargeResult res;
        MemGroup *a;

        assert_int_equal(group_create(core, "/a", 0), 0);
        a = take_group(core, "/a");
        assert_int_equal(group_charge(core, a, 4 * KiB, _MEM_STAT_MAX, 0, &res), -EINVAL);
        assert_int_equal(group_charge(core, a, 4 * KiB, (MemStatItem) -1, 0, NULL), -EINVAL);
        assert_int_equal(group_charge_kept(core, a, 4 * KiB, _MEM_STAT_MAX, 0, NULL), -EINVAL);
        assert_int_equal(group_uncharge_kept(core, a, 4 * KiB, _MEM_STAT_MAX), -EINVAL);
        assert_int_equal(group_charge(core, a, UINT64_MAX, MEM_STAT_ANON, 0, &res), -EOVERFLOW);
        assert_null(res.refused);
        assert_int_equal(group_charge_kept(core, a, MEM_CHARGE_MAX + 1, MEM_STAT_ANON, 0, NULL),
                         -EOVERFLOW);
        assert_int_equal(usage_of(a), 0);
        assert_int_equal(atomic_load(&a->kept[MEM_STAT_ANON]), 0);
        group_unref(a);
}

/* ---- kept charges -------------------------------------------------------- */

static void test_uncharge_kept_refuses_more_than_kept_of_the_item(void **state) {
        MemCore *core = *state;
        MemGroupInfo info;
        MemGroup *a;

        assert_int_equal(group_create(core, "/a", 0), 0);
        a = take_group(core, "/a");
        assert_int_equal(group_charge_kept(core, a, 8 * KiB, MEM_STAT_FILE, 0, NULL), 0);
        assert_int_equal(group_charge_kept(core, a, 4 * KiB, MEM_STAT_SHMEM, 0, NULL), 0);

        info = read_info(core, a, true);
        assert_int_equal(info.kept[MEM_STAT_FILE], 8 * KiB);
        assert_int_equal(info.kept[MEM_STAT_SHMEM], 4 * KiB);
        assert_int_equal(info.current, 12 * KiB);

        /* More than is kept of that item: refused, nothing released, even
         * though the group's total (12K) would cover it. */
        assert_int_equal(group_uncharge_kept(core, a, 8 * KiB + 1, MEM_STAT_FILE), -ERANGE);
        assert_int_equal(group_uncharge_kept(core, a, 1, MEM_STAT_ANON), -ERANGE);
        assert_int_equal(group_uncharge_kept(core, a, 10 * KiB, MEM_STAT_SHMEM), -ERANGE);
        info = read_info(core, a, true);
        assert_int_equal(info.current, 12 * KiB);
        assert_int_equal(info.kept[MEM_STAT_FILE], 8 * KiB);
        assert_int_equal(info.kept[MEM_STAT_SHMEM], 4 * KiB);
        assert_int_equal(info.stat[MEM_STAT_FILE], 8 * KiB);

        /* Partial and exact releases work. */
        assert_int_equal(group_uncharge_kept(core, a, 3 * KiB, MEM_STAT_FILE), 0);
        assert_int_equal(group_uncharge_kept(core, a, 5 * KiB, MEM_STAT_FILE), 0);
        assert_int_equal(group_uncharge_kept(core, a, 1, MEM_STAT_FILE), -ERANGE);
        info = read_info(core, a, true);
        assert_int_equal(info.current, 4 * KiB);
        assert_int_equal(info.kept[MEM_STAT_FILE], 0);
        assert_int_equal(info.stat[MEM_STAT_FILE], 0);
        assert_int_equal(group_uncharge_kept(core, a, 4 * KiB, MEM_STAT_SHMEM), 0);
        assert_int_equal(usage_of(a), 0);
        group_unref(a);
}

static void test_kept_charge_refused_names_refusing_ancestor(void **state) {
        MemCore *core = *state;
        MemChargeResult res;
        MemGroup *a, *b;
        unsigned base;

        assert_int_equal(group_create(core, "/a", 0), 0);
        assert_int_equal(group_create(core, "/a/b", 0), 0);
        a = take_group(core, "/a");
        b = take_group(core, "/a/b");
        assert_int_equal(group_set_max(a, 16 * KiB, false), 0);
        assert_int_equal(group_charge_kept(core, b, 16 * KiB, MEM_STAT_FILE, 0, &res), 0);
        assert_null(res.refused);
        assert_false(res.over_max);

        base = refs_of(a);
        assert_int_equal(group_charge_kept(core, b, 1, MEM_STAT_FILE, 0, &res), -EDQUOT);
        assert_non_null(res.refused);
        assert_string_equal(res.refused->path, "/a");
        /* The result holds a reference, and done drops it. */
        assert_int_equal(refs_of(a), base + 1);
        charge_result_done(&res);
        assert_null(res.refused);
        assert_int_equal(refs_of(a), base);
        /* Without a result nothing is leaked either. */
        assert_int_equal(group_charge_kept(core, b, 1, MEM_STAT_FILE, 0, NULL), -EDQUOT);
        assert_int_equal(refs_of(a), base);

        assert_int_equal(usage_of(b), 16 * KiB);
        assert_int_equal(usage_of(a), 16 * KiB);
        assert_int_equal(atomic_load(&b->kept[MEM_STAT_FILE]), 16 * KiB);
        assert_int_equal(group_uncharge_kept(core, b, 16 * KiB, MEM_STAT_FILE), 0);
        group_unref(b);
        group_unref(a);
}

static void test_remove_releases_kept_charges(void **state) {
        MemCore *core = *state;
        MemGroupInfo info;
        MemGroup *a, *b;

        assert_int_equal(group_create(core, "/a", 0), 0);
        assert_int_equal(group_create(core, "/a/b", 0), 0);
        a = take_group(core, "/a");
        b = take_group(core, "/a/b");

        /* Kept charges belong to the group: removing it releases them,
         * from its ancestors' usage and statistics alike. */
        assert_int_equal(group_charge_kept(core, b, 8 * KiB, MEM_STAT_FILE, 0, NULL), 0);
        assert_int_equal(group_charge_kept(core, b, 4 * KiB, MEM_STAT_ANON, 0, NULL), 0);
        assert_int_equal(usage_of(a), 12 * KiB);
        assert_int_equal(group_remove(core, "/a/b"), 0);
        assert_int_equal(usage_of(a), 0);
        group_read(core, a, NULL, true, &info);
        assert_int_equal(info.stat[MEM_STAT_FILE], 0);
        assert_int_equal(info.stat[MEM_STAT_ANON], 0);

        /* The removed group takes no more kept charges or uncharges. */
        assert_int_equal(group_charge_kept(core, b, 1, MEM_STAT_FILE, 0, NULL), -ENOENT);
        assert_int_equal(group_uncharge_kept(core, b, 1, MEM_STAT_FILE), -ENOENT);
        assert_int_equal(usage_of(a), 0);
        group_unref(b);
        group_unref(a);
}

static void test_kept_charge_to_removed_group_is_refused(void **state) {
        MemCore *core = *state;
        MemGroup *root, *a;

        assert_int_equal(group_create(core, "/a", 0), 0);
        root = take_group(core, "/");
        a = take_group(core, "/a");
        assert_int_equal(group_remove(core, "/a"), 0);

        /* Our reference keeps the memory valid, but the group is dead. */
        assert_int_equal(group_charge_kept(core, a, 4 * KiB, MEM_STAT_ANON, 0, NULL), -ENOENT);
        assert_int_equal(usage_of(a), 0);
        assert_int_equal(usage_of(root), 0);
        assert_int_equal(atomic_load(&a->kept[MEM_STAT_ANON]), 0);
        group_unref(a);
        group_unref(root);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                CORE_TEST(test_deepest_tree_charges_and_uncharges_every_level),
                CORE_TEST(test_charge_refuses_bad_item_and_oversize),
                CORE_TEST(test_uncharge_kept_refuses_more_than_kept_of_the_item),
                CORE_TEST(test_kept_charge_refused_names_refusing_ancestor),
                CORE_TEST(test_remove_releases_kept_charges),
                CORE_TEST(test_kept_charge_to_removed_group_is_refused),
        };

        return cmocka_run_group_tests_name("core-group-charges", tests, NULL, NULL);
}
