/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Unit tests for groups, charges, events and statistics through a real
 * MemCore (core.h, group.h, charge.h, stats.h).
 *
 * Each test gets a fresh core from its setup, and the calling thread is
 * registered with it for the duration of the test. Event semantics follow
 * KERNEL.md C.6 (memcg_memory_event()), except that the root counts
 * hierarchical events too (group.h: the root may carry limits).
 */

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "charge.h"
#include "core-test.h"
#include "core.h"
#include "group.h"
#include "session.h"
#include "stats.h"

/* ---- fixtures ------------------------------------------------------------ */

/* Room for the root and two more groups. */
static int setup_three_groups(void **state) {
        MemCoreConfig config = MEM_CORE_CONFIG_DEFAULT;

        config.max_groups = 3;
        return setup_core_with(state, config);
}

static int setup_depth_four(void **state) {
        MemCoreConfig config = MEM_CORE_CONFIG_DEFAULT;

        config.max_depth = 4;
        return setup_core_with(state, config);
}

/* ---- group_path_check ----------------------------------------------------- */

static void assert_path(const char *path, unsigned max_depth, int expect_r,
                        MemPathError expect_reason) {
        MemPathError reason = _MEM_PATH_ERROR_MAX;

        assert_int_equal(group_path_check(path, max_depth, &reason), expect_r);
        assert_int_equal(reason, expect_reason);
        /* The reason is optional, and does not change the answer. */
        assert_int_equal(group_path_check(path, max_depth, NULL), expect_r);
        assert_non_null(mem_path_error_to_string(reason));
}

static void test_path_check_accepts_valid_paths(void **state) {
        (void) state;

        assert_path("/", 32, 0, MEM_PATH_OK);
        assert_path("/a", 32, 1, MEM_PATH_OK);
        assert_path("/system.slice/db.service", 32, 2, MEM_PATH_OK);
        /* Every allowed character class, and names that only look like dots. */
        assert_path("/AZaz09._:@-", 32, 1, MEM_PATH_OK);
        assert_path("/.../.a/a./..b", 32, 4, MEM_PATH_OK);
}

static void test_path_check_refuses_relative_path(void **state) {
        (void) state;

        assert_path("", 32, -EINVAL, MEM_PATH_NOT_ABSOLUTE);
        assert_path("a", 32, -EINVAL, MEM_PATH_NOT_ABSOLUTE);
        assert_path("a/b", 32, -EINVAL, MEM_PATH_NOT_ABSOLUTE);
        assert_path(" /a", 32, -EINVAL, MEM_PATH_NOT_ABSOLUTE);
}

static void test_path_check_refuses_empty_component(void **state) {
        (void) state;

        assert_path("//", 32, -EINVAL, MEM_PATH_EMPTY_COMPONENT);
        assert_path("/a//b", 32, -EINVAL, MEM_PATH_EMPTY_COMPONENT);
        assert_path("/a/", 32, -EINVAL, MEM_PATH_EMPTY_COMPONENT);
        assert_path("/a/b/", 32, -EINVAL, MEM_PATH_EMPTY_COMPONENT);
}

static void test_path_check_refuses_dot_components(void **state) {
        (void) state;

        assert_path("/.", 32, -EINVAL, MEM_PATH_DOT_COMPONENT);
        assert_path("/..", 32, -EINVAL, MEM_PATH_DOT_COMPONENT);
        assert_path("/a/./b", 32, -EINVAL, MEM_PATH_DOT_COMPONENT);
        assert_path("/a/..", 32, -EINVAL, MEM_PATH_DOT_COMPONENT);
}

static void test_path_check_refuses_bad_characters(void **state) {
        (void) state;

        assert_path("/a b", 32, -EINVAL, MEM_PATH_BAD_CHAR);
        assert_path("/a*", 32, -EINVAL, MEM_PATH_BAD_CHAR);
        assert_path("/a\tb", 32, -EINVAL, MEM_PATH_BAD_CHAR);
        assert_path("/a/b\\c", 32, -EINVAL, MEM_PATH_BAD_CHAR);
        assert_path("/caf\xc3\xa9", 32, -EINVAL, MEM_PATH_BAD_CHAR);
        assert_path("/a\nb", 32, -EINVAL, MEM_PATH_BAD_CHAR);
}

static void test_path_check_limits_component_to_255_bytes(void **state) {
        char path[1 + 256 + 1];

        (void) state;

        path[0] = '/';
        memset(path + 1, 'n', 255);
        path[256] = 0;
        assert_int_equal(strlen(path), 1 + MEM_NAME_MAX);
        assert_path(path, 32, 1, MEM_PATH_OK);

        path[256] = 'n';
        path[257] = 0;
        assert_path(path, 32, -ENAMETOOLONG, MEM_PATH_NAME_TOO_LONG);
}

static void test_path_check_limits_whole_path(void **state) {
        char path[MEM_PATH_MAX + 2];
        size_t n = 0;

        (void) state;

        /* 16 components of "/" + 255 bytes: 16 * 256 = 4096 = MEM_PATH_MAX. */
        for (unsigned i = 0; i < 16; i++) {
                path[n++] = '/';
                memset(path + n, (int) ('a' + i), 255);
                n += 255;
        }
        path[n] = 0;
        assert_int_equal(strlen(path), MEM_PATH_MAX);
        assert_path(path, 32, 16, MEM_PATH_OK);

        /* 15 such components (3840) + "/" + 254 (4095) + "/a" = 4097 bytes,
         * 17 components: within depth 32 and each name short enough. */
        n = 15 * 256;
        path[n++] = '/';
        memset(path + n, 'z', 254);
        n += 254;
        path[n++] = '/';
        path[n++] = 'a';
        path[n] = 0;
        assert_int_equal(strlen(path), MEM_PATH_MAX + 1);
        assert_path(path, 32, -ENAMETOOLONG, MEM_PATH_TOO_LONG);
}

static void test_path_check_limits_depth(void **state) {
        char path[256];

        (void) state;

        assert_path("/a/b/c", 3, 3, MEM_PATH_OK);
        assert_path("/a/b/c/d", 3, -EMLINK, MEM_PATH_TOO_DEEP);
        assert_path("/a", 1, 1, MEM_PATH_OK);
        assert_path("/a/b", 1, -EMLINK, MEM_PATH_TOO_DEEP);

        deep_path(path, sizeof(path), 32);
        assert_path(path, 32, 32, MEM_PATH_OK);
        deep_path(path, sizeof(path), 33);
        assert_path(path, 32, -EMLINK, MEM_PATH_TOO_DEEP);
}

/* ---- create / remove / lookup --------------------------------------------- */

static void test_create_needs_existing_parent(void **state) {
        MemCore *core = *state;

        assert_int_equal(group_create(core, "/a/b", 0), -ENOENT);
        assert_int_equal(core_group_count(core), 1);
        assert_int_equal(group_create(core, "/a", 0), 0);
        assert_int_equal(group_create(core, "/a/b", 0), 0);
        assert_int_equal(group_create(core, "/a/b/c/d", 0), -ENOENT);
        assert_int_equal(core_group_count(core), 3);
}

static void test_create_refuses_existing_path(void **state) {
        MemCore *core = *state;

        assert_int_equal(group_create(core, "/", 0), -EEXIST);
        assert_int_equal(group_create(core, "/a", 0), 0);
        assert_int_equal(group_create(core, "/a", 0), -EEXIST);
        assert_int_equal(core_group_count(core), 2);
}

static void test_create_refuses_invalid_path(void **state) {
        MemCore *core = *state;

        assert_int_equal(group_create(core, "a", 0), -EINVAL);
        assert_int_equal(group_create(core, "/a/", 0), -EINVAL);
        assert_int_equal(group_create(core, "/..", 0), -EINVAL);
        assert_int_equal(group_create(core, "/a b", 0), -EINVAL);
        assert_int_equal(core_group_count(core), 1);
}

static void test_create_refuses_past_max_groups(void **state) {
        MemCore *core = *state;

        /* max_groups = 3 and the root counts: two more fit, the third not. */
        assert_int_equal(core_group_count(core), 1);
        assert_int_equal(group_create(core, "/a", 0), 0);
        assert_int_equal(group_create(core, "/b", 0), 0);
        assert_int_equal(group_create(core, "/c", 0), -ENOSPC);
        assert_int_equal(group_create(core, "/a/c", 0), -ENOSPC);
        assert_int_equal(core_group_count(core), 3);
}

static void test_create_after_remove_counts_only_live_groups(void **state) {
        MemCore *core = *state;
        MemGroup *b;

        assert_int_equal(group_create(core, "/a", 0), 0);
        assert_int_equal(group_create(core, "/b", 0), 0);
        /* Someone (a reader, a D-Bus object) still holds a reference to /b
         * when it is removed: the group is gone from the tree, only its
         * memory waits for the last reference. */
        b = take_group(core, "/b");
        assert_int_equal(group_remove(core, "/b"), 0);
        assert_int_equal(core_group_count(core), 2);

        /* Two groups live out of three: the count is not reached. */
        assert_int_equal(group_create(core, "/c", 0), 0);
        assert_int_equal(core_group_count(core), 3);
        group_unref(b);
}

static void test_create_deeper_than_max_depth_is_refused(void **state) {
        MemCore *core = *state;

        /* max_depth = 4: exactly four levels are fine, the fifth is not. */
        assert_int_equal(group_create(core, "/a", 0), 0);
        assert_int_equal(group_create(core, "/a/b", 0), 0);
        assert_int_equal(group_create(core, "/a/b/c", 0), 0);
        assert_int_equal(group_create(core, "/a/b/c/d", 0), 0);
        assert_int_equal(group_create(core, "/a/b/c/d/e", 0), -EMLINK);
        assert_int_equal(core_group_count(core), 5);
}

static void test_lookup_finds_created_groups(void **state) {
        MemCore *core = *state;
        MemGroup *g;

        assert_int_equal(group_create(core, "/a", 1000), 0);
        assert_int_equal(group_create(core, "/a/b", 1000), 0);

        core_read_lock();
        g = group_lookup(core, "/");
        assert_non_null(g);
        assert_null(g->parent);
        assert_int_equal(g->depth, 0);
        g = group_lookup(core, "/a/b");
        assert_non_null(g);
        assert_string_equal(g->path, "/a/b");
        assert_int_equal(g->depth, 2);
        assert_int_equal(g->owner, 1000);
        assert_non_null(g->parent);
        assert_string_equal(g->parent->path, "/a");
        assert_ptr_equal(g->counter.parent, &g->parent->counter);
        assert_null(group_lookup(core, "/b"));
        assert_null(group_lookup(core, "/a/"));
        assert_null(group_lookup(core, "/a/b/c"));
        core_read_unlock();
}

static void test_get_takes_reference_and_unref_drops_it(void **state) {
        MemCore *core = *state;
        MemGroup *a, *a2, *missing = NULL;
        unsigned base;

        assert_int_equal(group_create(core, "/a", 0), 0);
        assert_int_equal(group_get(core, "/nope", &missing), -ENOENT);
        assert_null(missing);

        a = take_group(core, "/a");
        base = refs_of(a);
        a2 = take_group(core, "/a");
        assert_ptr_equal(a, a2);
        assert_int_equal(refs_of(a), base + 1);
        assert_null(group_unref(a2));
        assert_int_equal(refs_of(a), base);
        assert_ptr_equal(group_ref(a), a);
        assert_int_equal(refs_of(a), base + 1);
        group_unref(a);
        group_unref(a);
        assert_null(group_unref(NULL));
}

static void test_remove_refuses_root_missing_and_parents(void **state) {
        MemCore *core = *state;

        assert_int_equal(group_remove(core, "/"), -EINVAL);
        assert_int_equal(group_remove(core, "/nope"), -ENOENT);
        assert_int_equal(group_create(core, "/a", 0), 0);
        assert_int_equal(group_create(core, "/a/b", 0), 0);
        assert_int_equal(group_remove(core, "/a"), -EBUSY);
        assert_int_equal(core_group_count(core), 3);

        assert_int_equal(group_remove(core, "/a/b"), 0);
        assert_int_equal(group_remove(core, "/a/b"), -ENOENT);
        assert_int_equal(group_remove(core, "/a"), 0);
        assert_int_equal(core_group_count(core), 1);
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

static void test_remove_refuses_group_with_session(void **state) {
        MemCore *core = *state;
        MemSession *s;
        MemGroup *b;

        assert_int_equal(group_create(core, "/a", 0), 0);
        assert_int_equal(group_create(core, "/a/b", 0), 0);
        b = take_group(core, "/a/b");
        assert_int_equal(session_new(core, 1, 0, 0, &s), 0);
        assert_int_equal(session_attach(s, b), 0);
        assert_int_equal(session_charge(s, 4 * KiB, MEM_STAT_ANON, 0, NULL), 0);
        assert_int_equal(group_remove(core, "/a/b"), -EBUSY);

        /* The refused removal left it alive and chargeable. */
        assert_false(atomic_load(&b->dead));
        assert_int_equal(group_charge_kept(core, b, 1, MEM_STAT_FILE, 0, NULL), 0);
        assert_int_equal(usage_of(b), 4 * KiB + 1);

        session_free(s);
        assert_int_equal(usage_of(b), 1);
        assert_int_equal(group_remove(core, "/a/b"), 0);
        group_unref(b);
}

static void test_removed_path_can_be_recreated_fresh(void **state) {
        MemCore *core = *state;
        MemGroupInfo info;
        MemGroup *a;

        assert_int_equal(group_create(core, "/a", 0), 0);
        a = take_group(core, "/a");
        assert_int_equal(group_set_max(a, 1 * MiB, false), 0);
        assert_int_equal(group_charge(core, a, 64 * KiB, MEM_STAT_ANON, 0, NULL), 0);
        group_uncharge(core, a, 64 * KiB, MEM_STAT_ANON);
        group_unref(a);

        assert_int_equal(group_remove(core, "/a"), 0);
        core_read_lock();
        assert_null(group_lookup(core, "/a"));
        core_read_unlock();

        assert_int_equal(group_create(core, "/a", 0), 0);
        a = take_group(core, "/a");
        info = read_info(core, a, true);
        assert_int_equal(info.current, 0);
        assert_int_equal(info.peak, 0);
        assert_int_equal(info.max, UINT64_MAX);
        assert_int_equal(info.stat[MEM_STAT_ANON], 0);
        assert_int_equal(info.stat_local[MEM_STAT_ANON], 0);
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

/* ---- charging along a deep path ----------------------------------------- */

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

/* ---- kept charges ---------------------------------------------------------- */

static void test_uncharge_kept_refuses_underflow(void **state) {
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

/* ---- events ------------------------------------------------------------------ */

static void test_refusal_raises_max_and_oom_on_refusing_group(void **state) {
        MemCore *core = *state;
        MemGroupInfo ir, ia, ib;
        MemChargeResult res;
        MemGroup *root, *a, *b;

        assert_int_equal(group_create(core, "/a", 0), 0);
        assert_int_equal(group_create(core, "/a/b", 0), 0);
        root = take_group(core, "/");
        a = take_group(core, "/a");
        b = take_group(core, "/a/b");
        assert_int_equal(group_set_max(a, 10 * KiB, false), 0);
        assert_int_equal(group_charge(core, b, 8 * KiB, MEM_STAT_ANON, 0, &res), 0);

        assert_int_equal(group_charge(core, b, 4 * KiB, MEM_STAT_ANON, 0, &res), -EDQUOT);
        assert_ptr_equal(res.refused, a);
        charge_result_done(&res);

        ia = read_info(core, a, false);
        ib = read_info(core, b, false);
        ir = read_info(core, root, false);
        /* The refusing group: local and hierarchical. */
        assert_int_equal(ia.events_local[MEM_EVENT_MAX], 1);
        assert_int_equal(ia.events_local[MEM_EVENT_OOM], 1);
        assert_int_equal(ia.events[MEM_EVENT_MAX], 1);
        assert_int_equal(ia.events[MEM_EVENT_OOM], 1);
        assert_int_equal(ia.failcnt, 1);
        /* Its ancestors: hierarchical only. */
        assert_int_equal(ir.events[MEM_EVENT_MAX], 1);
        assert_int_equal(ir.events[MEM_EVENT_OOM], 1);
        assert_int_equal(ir.events_local[MEM_EVENT_MAX], 0);
        assert_int_equal(ir.events_local[MEM_EVENT_OOM], 0);
        assert_int_equal(ir.failcnt, 0);
        /* The charged child is below the refusal: nothing at all. */
        assert_int_equal(ib.events_local[MEM_EVENT_MAX], 0);
        assert_int_equal(ib.events_local[MEM_EVENT_OOM], 0);
        assert_int_equal(ib.events[MEM_EVENT_MAX], 0);
        assert_int_equal(ib.events[MEM_EVENT_OOM], 0);
        assert_int_equal(ib.failcnt, 0);
        /* No other event moved. */
        assert_int_equal(ia.events[MEM_EVENT_HIGH], 0);
        assert_int_equal(ia.events[MEM_EVENT_LOW], 0);

        /* A retried refusal (NO_OOM) counts max only. */
        assert_int_equal(group_charge(core, b, 4 * KiB, MEM_STAT_ANON, MEM_CHARGE_NO_OOM, &res),
                         -EDQUOT);
        assert_ptr_equal(res.refused, a);
        charge_result_done(&res);
        ia = read_info(core, a, false);
        ir = read_info(core, root, false);
        assert_int_equal(ia.events_local[MEM_EVENT_MAX], 2);
        assert_int_equal(ia.events_local[MEM_EVENT_OOM], 1);
        assert_int_equal(ir.events[MEM_EVENT_MAX], 2);
        assert_int_equal(ir.events[MEM_EVENT_OOM], 1);
        assert_int_equal(ia.failcnt, 2);

        assert_int_equal(usage_of(a), 8 * KiB);
        group_uncharge(core, b, 8 * KiB, MEM_STAT_ANON);
        group_unref(b);
        group_unref(a);
        group_unref(root);
}

static void test_charge_above_high_raises_high_and_throttles(void **state) {
        MemCore *core = *state;
        MemGroupInfo ir, ia, ib;
        MemChargeResult res;
        MemGroup *root, *a, *b;

        assert_int_equal(group_create(core, "/a", 0), 0);
        assert_int_equal(group_create(core, "/a/b", 0), 0);
        root = take_group(core, "/");
        a = take_group(core, "/a");
        b = take_group(core, "/a/b");

        /* 105 MiB - 256 KiB with no high yet: no event, no hint. */
        assert_int_equal(group_charge(core, b, 105 * MiB - 256 * KiB, MEM_STAT_ANON, 0, &res), 0);
        assert_int_equal(res.over_high, 0);
        assert_int_equal(res.throttle_usec, 0);

        /* high 100 MiB on /a, then 256 KiB (64 pages, factor 1) more: /a ends
         * at 105 MiB, 5 MiB over. Penalty as in test-counter.c:
         * overage = floor(5 * 2^20 / 100) = 52428; 52428^2 * 10^6 >> 34 = 159995. */
        group_set_high(a, 100 * MiB);
        assert_int_equal(group_charge(core, b, 256 * KiB, MEM_STAT_ANON, 0, &res), 0);
        assert_null(res.refused);
        assert_false(res.over_max);
        assert_int_equal(res.over_high, 5 * MiB);
        assert_int_equal(res.throttle_usec, 159995);
        assert_int_equal(res.throttle_usec,
                         charge_high_delay_usec(105 * MiB, 100 * MiB, 256 * KiB));

        ia = read_info(core, a, false);
        ib = read_info(core, b, false);
        ir = read_info(core, root, false);
        assert_int_equal(ia.high, 100 * MiB);
        assert_int_equal(ia.events_local[MEM_EVENT_HIGH], 1);
        assert_int_equal(ia.events[MEM_EVENT_HIGH], 1);
        assert_int_equal(ir.events[MEM_EVENT_HIGH], 1);
        assert_int_equal(ir.events_local[MEM_EVENT_HIGH], 0);
        assert_int_equal(ib.events_local[MEM_EVENT_HIGH], 0);
        assert_int_equal(ib.events[MEM_EVENT_HIGH], 0);
        /* high never refuses: no max event, no failcnt. */
        assert_int_equal(ia.events[MEM_EVENT_MAX], 0);
        assert_int_equal(ia.failcnt, 0);

        /* A second charge while still above counts again; one below, not. */
        assert_int_equal(group_charge(core, b, 4 * KiB, MEM_STAT_ANON, 0, &res), 0);
        assert_int_equal(res.over_high, 5 * MiB + 4 * KiB);
        ia = read_info(core, a, false);
        assert_int_equal(ia.events_local[MEM_EVENT_HIGH], 2);
        group_uncharge(core, b, 6 * MiB, MEM_STAT_ANON);
        assert_int_equal(group_charge(core, b, 4 * KiB, MEM_STAT_ANON, 0, &res), 0);
        assert_int_equal(res.over_high, 0);
        assert_int_equal(res.throttle_usec, 0);
        ia = read_info(core, a, false);
        assert_int_equal(ia.events_local[MEM_EVENT_HIGH], 2);

        group_uncharge(core, b, usage_of(b), MEM_STAT_ANON);
        group_unref(b);
        group_unref(a);
        group_unref(root);
}

static void test_over_high_reports_worst_ancestor(void **state) {
        MemCore *core = *state;
        MemChargeResult res;
        MemGroupInfo ir, ia, ib;
        MemGroup *root, *a, *b;

        assert_int_equal(group_create(core, "/a", 0), 0);
        assert_int_equal(group_create(core, "/a/b", 0), 0);
        root = take_group(core, "/");
        a = take_group(core, "/a");
        b = take_group(core, "/a/b");
        group_set_high(b, 10 * KiB);
        group_set_high(a, 4 * KiB);

        /* 12 KiB into b: b is 2 KiB over, a 8 KiB over; both count high. */
        assert_int_equal(group_charge(core, b, 12 * KiB, MEM_STAT_ANON, 0, &res), 0);
        assert_int_equal(res.over_high, 8 * KiB);
        ia = read_info(core, a, false);
        ib = read_info(core, b, false);
        ir = read_info(core, root, false);
        assert_int_equal(ib.events_local[MEM_EVENT_HIGH], 1);
        assert_int_equal(ib.events[MEM_EVENT_HIGH], 1);
        assert_int_equal(ia.events_local[MEM_EVENT_HIGH], 1);
        assert_int_equal(ia.events[MEM_EVENT_HIGH], 2);
        assert_int_equal(ir.events[MEM_EVENT_HIGH], 2);

        group_uncharge(core, b, 12 * KiB, MEM_STAT_ANON);
        group_unref(b);
        group_unref(a);
        group_unref(root);
}

static void test_forced_max_below_usage_raises_oom(void **state) {
        MemCore *core = *state;
        MemGroupInfo ia, ir;
        MemGroup *root, *a;

        assert_int_equal(group_create(core, "/a", 0), 0);
        root = take_group(core, "/");
        a = take_group(core, "/a");
        assert_int_equal(group_charge(core, a, 8 * KiB, MEM_STAT_ANON, 0, NULL), 0);

        /* Not forced: refused, limit unchanged, no event. */
        assert_int_equal(group_set_max(a, 4 * KiB, false), -EBUSY);
        ia = read_info(core, a, false);
        assert_int_equal(ia.max, UINT64_MAX);
        assert_int_equal(ia.events[MEM_EVENT_OOM], 0);

        /* Forced: taken, 1, and an oom event (local + up). */
        assert_int_equal(group_set_max(a, 4 * KiB, true), 1);
        ia = read_info(core, a, false);
        ir = read_info(core, root, false);
        assert_int_equal(ia.max, 4 * KiB);
        assert_int_equal(ia.current, 8 * KiB);
        assert_int_equal(ia.events_local[MEM_EVENT_OOM], 1);
        assert_int_equal(ia.events[MEM_EVENT_OOM], 1);
        assert_int_equal(ir.events[MEM_EVENT_OOM], 1);
        assert_int_equal(ir.events_local[MEM_EVENT_OOM], 0);

        /* Forced but not below usage: 0, no new event. */
        assert_int_equal(group_set_max(a, 8 * KiB, true), 0);
        ia = read_info(core, a, false);
        assert_int_equal(ia.max, 8 * KiB);
        assert_int_equal(ia.events_local[MEM_EVENT_OOM], 1);

        /* "No limit" again. */
        assert_int_equal(group_set_max(a, UINT64_MAX, false), 0);
        ia = read_info(core, a, false);
        assert_int_equal(ia.max, UINT64_MAX);

        group_uncharge(core, a, 8 * KiB, MEM_STAT_ANON);
        group_unref(a);
        group_unref(root);
}

static void test_forced_charge_over_max_succeeds_and_says_so(void **state) {
        MemCore *core = *state;
        MemChargeResult res;
        MemGroupInfo ia, ib;
        MemGroup *a, *b;

        assert_int_equal(group_create(core, "/a", 0), 0);
        assert_int_equal(group_create(core, "/a/b", 0), 0);
        a = take_group(core, "/a");
        b = take_group(core, "/a/b");
        assert_int_equal(group_set_max(a, 8 * KiB, false), 0);

        /* Within max: a forced charge is an ordinary one. */
        assert_int_equal(group_charge(core, b, 8 * KiB, MEM_STAT_ANON, MEM_CHARGE_FORCE, &res), 0);
        assert_false(res.over_max);
        assert_null(res.refused);

        /* Past max: charged anyway, and the caller is told. */
        assert_int_equal(group_charge(core, b, 4 * KiB, MEM_STAT_ANON, MEM_CHARGE_FORCE, &res), 0);
        assert_true(res.over_max);
        assert_null(res.refused);
        ia = read_info(core, a, true);
        ib = read_info(core, b, true);
        assert_int_equal(ia.current, 12 * KiB);
        assert_int_equal(ib.current, 12 * KiB);
        assert_int_equal(ia.peak, 12 * KiB);
        assert_int_equal(ia.failcnt, 0);
        assert_int_equal(ia.stat[MEM_STAT_ANON], 12 * KiB);
        /* Not an oom: nothing was refused. */
        assert_int_equal(ia.events[MEM_EVENT_OOM], 0);

        /* An unforced charge is now refused by a. */
        assert_int_equal(group_charge(core, b, 1, MEM_STAT_ANON, 0, &res), -EDQUOT);
        assert_ptr_equal(res.refused, a);
        charge_result_done(&res);

        group_uncharge(core, b, 12 * KiB, MEM_STAT_ANON);
        group_unref(b);
        group_unref(a);
}

/* ---- group_read ------------------------------------------------------------------ */

static void test_read_reports_defaults_for_new_group(void **state) {
        MemCore *core = *state;
        MemGroupInfo info;
        MemGroup *a;

        assert_int_equal(group_create(core, "/a", 4242), 0);
        a = take_group(core, "/a");
        info = read_info(core, a, false);
        assert_int_equal(info.current, 0);
        assert_int_equal(info.peak, 0);
        assert_int_equal(info.max, UINT64_MAX);
        assert_int_equal(info.high, UINT64_MAX);
        assert_int_equal(info.low, 0);
        assert_int_equal(info.min, 0);
        assert_int_equal(info.effective_min, 0);
        assert_int_equal(info.effective_low, 0);
        assert_int_equal(info.failcnt, 0);
        assert_int_equal(info.nr_children, 0);
        assert_int_equal(info.nr_attached, 0);
        assert_int_equal(info.owner, 4242);
        for (int i = 0; i < _MEM_EVENT_MAX; i++) {
                assert_int_equal(info.events[i], 0);
                assert_int_equal(info.events_local[i], 0);
        }
        for (int i = 0; i < _MEM_STAT_MAX; i++) {
                assert_int_equal(info.stat[i], 0);
                assert_int_equal(info.stat_local[i], 0);
                assert_int_equal(info.kept[i], 0);
        }
}

static void test_read_reports_settings_usage_and_children(void **state) {
        MemCore *core = *state;
        MemGroupInfo info;
        MemGroup *a;

        assert_int_equal(group_create(core, "/a", 0), 0);
        assert_int_equal(group_create(core, "/a/x", 0), 0);
        assert_int_equal(group_create(core, "/a/y", 0), 0);
        a = take_group(core, "/a");
        assert_int_equal(group_set_max(a, 64 * MiB, false), 0);
        group_set_high(a, 48 * MiB);
        group_set_low(a, 16 * MiB);
        group_set_min(a, 8 * MiB);
        assert_int_equal(group_charge(core, a, 12 * MiB, MEM_STAT_OTHER, 0, NULL), 0);

        info = read_info(core, a, false);
        assert_int_equal(info.current, 12 * MiB);
        assert_int_equal(info.peak, 12 * MiB);
        assert_int_equal(info.max, 64 * MiB);
        assert_int_equal(info.high, 48 * MiB);
        assert_int_equal(info.low, 16 * MiB);
        assert_int_equal(info.min, 8 * MiB);
        /* First level under the root: raw settings (rule 1). */
        assert_int_equal(info.effective_min, 8 * MiB);
        assert_int_equal(info.effective_low, 16 * MiB);
        assert_int_equal(info.nr_children, 2);

        /* Limits given as "none" read back as UINT64_MAX. */
        group_set_high(a, UINT64_MAX);
        group_set_low(a, UINT64_MAX);
        assert_int_equal(group_set_max(a, (uint64_t) MEM_COUNTER_MAX + 1, false), 0);
        info = read_info(core, a, false);
        assert_int_equal(info.high, UINT64_MAX);
        assert_int_equal(info.low, UINT64_MAX);
        assert_int_equal(info.max, UINT64_MAX);

        group_uncharge(core, a, 12 * MiB, MEM_STAT_OTHER);
        group_unref(a);
}

static void test_reset_peak_restarts_from_current(void **state) {
        MemCore *core = *state;
        MemGroupInfo ia, ir;
        MemGroup *root, *a;

        assert_int_equal(group_create(core, "/a", 0), 0);
        root = take_group(core, "/");
        a = take_group(core, "/a");
        assert_int_equal(group_charge(core, a, 8 * KiB, MEM_STAT_ANON, 0, NULL), 0);
        group_uncharge(core, a, 6 * KiB, MEM_STAT_ANON);
        ia = read_info(core, a, false);
        assert_int_equal(ia.peak, 8 * KiB);
        assert_int_equal(ia.current, 2 * KiB);

        group_reset_peak(a);
        ia = read_info(core, a, false);
        ir = read_info(core, root, false);
        assert_int_equal(ia.peak, 2 * KiB);
        assert_int_equal(ir.peak, 8 * KiB); /* per group */

        assert_int_equal(group_charge(core, a, 1 * KiB, MEM_STAT_ANON, 0, NULL), 0);
        ia = read_info(core, a, false);
        assert_int_equal(ia.peak, 3 * KiB);

        group_uncharge(core, a, 3 * KiB, MEM_STAT_ANON);
        group_unref(a);
        group_unref(root);
}

/* ---- statistics ------------------------------------------------------------------- */

static void test_stats_go_to_their_item_hierarchically(void **state) {
        MemCore *core = *state;
        MemGroupInfo ir, ia, ib, ic;
        MemGroup *root, *a, *b, *c;
        int64_t sum;

        assert_int_equal(group_create(core, "/a", 0), 0);
        assert_int_equal(group_create(core, "/a/b", 0), 0);
        assert_int_equal(group_create(core, "/a/c", 0), 0);
        root = take_group(core, "/");
        a = take_group(core, "/a");
        b = take_group(core, "/a/b");
        c = take_group(core, "/a/c");

        assert_int_equal(group_charge(core, b, 8 * KiB, MEM_STAT_ANON, 0, NULL), 0);
        assert_int_equal(group_charge(core, b, 12 * KiB, MEM_STAT_FILE, 0, NULL), 0);
        assert_int_equal(group_charge(core, c, 4 * KiB, MEM_STAT_SHMEM, 0, NULL), 0);
        assert_int_equal(group_charge(core, c, 4 * KiB, MEM_STAT_ANON, 0, NULL), 0);
        assert_int_equal(group_charge_kept(core, a, 16 * KiB, MEM_STAT_DEVICE, 0, NULL), 0);

        core_stats_flush(core, true);
        ir = read_info(core, root, false);
        ia = read_info(core, a, false);
        ib = read_info(core, b, false);
        ic = read_info(core, c, false);

        /* b: its own charges, local == hierarchical. */
        assert_int_equal(ib.stat[MEM_STAT_ANON], 8 * KiB);
        assert_int_equal(ib.stat[MEM_STAT_FILE], 12 * KiB);
        assert_int_equal(ib.stat[MEM_STAT_SHMEM], 0);
        assert_int_equal(ib.stat_local[MEM_STAT_ANON], 8 * KiB);
        assert_int_equal(ib.stat_local[MEM_STAT_FILE], 12 * KiB);
        assert_int_equal(ic.stat[MEM_STAT_SHMEM], 4 * KiB);
        assert_int_equal(ic.stat[MEM_STAT_ANON], 4 * KiB);
        assert_int_equal(ic.stat[MEM_STAT_FILE], 0);

        /* a: subtree sums 8 + 4 anon, 12 file, 4 shmem, 16 device;
         * locally only its own device bytes. */
        assert_int_equal(ia.stat[MEM_STAT_ANON], 12 * KiB);
        assert_int_equal(ia.stat[MEM_STAT_FILE], 12 * KiB);
        assert_int_equal(ia.stat[MEM_STAT_SHMEM], 4 * KiB);
        assert_int_equal(ia.stat[MEM_STAT_DEVICE], 16 * KiB);
        assert_int_equal(ia.stat_local[MEM_STAT_ANON], 0);
        assert_int_equal(ia.stat_local[MEM_STAT_FILE], 0);
        assert_int_equal(ia.stat_local[MEM_STAT_SHMEM], 0);
        assert_int_equal(ia.stat_local[MEM_STAT_DEVICE], 16 * KiB);
        assert_int_equal(ia.stat[MEM_STAT_KERNEL] + ia.stat[MEM_STAT_SOCK] +
                                 ia.stat[MEM_STAT_SWAP] + ia.stat[MEM_STAT_OTHER],
                         0);

        /* The root sees all of it and holds none locally. */
        assert_int_equal(ir.stat[MEM_STAT_ANON], 12 * KiB);
        assert_int_equal(ir.stat[MEM_STAT_DEVICE], 16 * KiB);
        assert_int_equal(ir.stat_local[MEM_STAT_ANON], 0);
        assert_int_equal(ir.stat_local[MEM_STAT_DEVICE], 0);

        /* Every charge carries an item, so the items sum to current. */
        sum = 0;
        for (int i = 0; i < _MEM_STAT_MAX; i++)
                sum += ia.stat[i];
        assert_int_equal(sum, (int64_t) ia.current);
        assert_int_equal(ia.current, (8 + 12 + 4 + 4 + 16) * KiB);
        sum = 0;
        for (int i = 0; i < _MEM_STAT_MAX; i++)
                sum += ir.stat[i];
        assert_int_equal(sum, (int64_t) ir.current);

        /* Uncharges come off the same items, exact reads see it at once. */
        group_uncharge(core, b, 8 * KiB, MEM_STAT_ANON);
        assert_int_equal(group_uncharge_kept(core, a, 16 * KiB, MEM_STAT_DEVICE), 0);
        ia = read_info(core, a, true);
        ib = read_info(core, b, false);
        assert_int_equal(ib.stat[MEM_STAT_ANON], 0);
        assert_int_equal(ia.stat[MEM_STAT_ANON], 4 * KiB);
        assert_int_equal(ia.stat[MEM_STAT_DEVICE], 0);
        assert_int_equal(ia.stat_local[MEM_STAT_DEVICE], 0);

        group_uncharge(core, b, 12 * KiB, MEM_STAT_FILE);
        group_uncharge(core, c, 4 * KiB, MEM_STAT_SHMEM);
        group_uncharge(core, c, 4 * KiB, MEM_STAT_ANON);
        group_unref(c);
        group_unref(b);
        group_unref(a);
        group_unref(root);
}

static void test_stats_exact_read_flushes_pending_updates(void **state) {
        MemCore *core = *state;
        MemGroupInfo info;
        MemGroup *a;

        assert_int_equal(group_create(core, "/a", 0), 0);
        a = take_group(core, "/a");

        /* One 4 KiB update is one unit, far below a batch (64): no flush is
         * due, so a relaxed read still shows the last flush (nothing). */
        assert_int_equal(group_charge(core, a, 4 * KiB, MEM_STAT_SOCK, 0, NULL), 0);
        assert_false(stats_flush_due(&core->stats));
        info = read_info(core, a, false);
        assert_int_equal(info.current, 4 * KiB); /* the counter is always current */
        assert_int_equal(info.stat[MEM_STAT_SOCK], 0);

        /* An exact read folds it in. */
        info = read_info(core, a, true);
        assert_int_equal(info.stat[MEM_STAT_SOCK], 4 * KiB);
        assert_int_equal(info.stat_local[MEM_STAT_SOCK], 4 * KiB);

        /* Enough units to pass the threshold (more than a batch per
         * registered thread) make an ordinary read flush on its own:
         * 3 * 64 units of 4 KiB, in 64-unit charges. */
        for (int i = 0; i < 3; i++)
                assert_int_equal(group_charge(core, a, 64 * 4 * KiB, MEM_STAT_SWAP, 0, NULL), 0);
        assert_true(stats_flush_due(&core->stats));
        info = read_info(core, a, false);
        assert_int_equal(info.stat[MEM_STAT_SWAP], 3 * 64 * 4 * KiB);

        group_uncharge(core, a, 3 * 64 * 4 * KiB, MEM_STAT_SWAP);
        group_uncharge(core, a, 4 * KiB, MEM_STAT_SOCK);
        group_unref(a);
}

static void test_stat_item_names_round_trip(void **state) {
        (void) state;

        for (MemStatItem i = 0; i < _MEM_STAT_MAX; i++) {
                const char *s = mem_stat_item_to_string(i);

                assert_non_null(s);
                assert_int_equal(mem_stat_item_from_string(s), i);
        }
        /* Names the memory.stat format uses. */
        assert_string_equal(mem_stat_item_to_string(MEM_STAT_ANON), "anon");
        assert_string_equal(mem_stat_item_to_string(MEM_STAT_FILE), "file");
        assert_int_equal(mem_stat_item_from_string("shmem"), MEM_STAT_SHMEM);

        assert_int_equal(mem_stat_item_from_string("bogus"), -EINVAL);
        assert_int_equal(mem_stat_item_from_string(""), -EINVAL);
        assert_int_equal(mem_stat_item_from_string("ANON"), -EINVAL);
        assert_int_equal(mem_stat_item_from_string("anon "), -EINVAL);
        assert_null(mem_stat_item_to_string(_MEM_STAT_MAX));
        assert_null(mem_stat_item_to_string(_MEM_STAT_INVALID));

        for (MemEvent e = 0; e < _MEM_EVENT_MAX; e++)
                assert_int_equal(mem_event_from_string(mem_event_to_string(e)), e);
        assert_int_equal(mem_event_from_string("oom_kill"), -EINVAL);
}

/* ---- group_walk ------------------------------------------------------------------- */

typedef struct Walk {
        char seen[16][32];
        unsigned n;
        const char *skip;  /* return 1 here */
        const char *stop;  /* return -ECANCELED here */
} Walk;

static int walk_cb(MemGroup *g, void *userdata) {
        Walk *w = userdata;

        assert_true(w->n < ELEMENTSOF(w->seen));
        snprintf(w->seen[w->n++], sizeof(w->seen[0]), "%s", g->path);
        if (w->skip && strcmp(g->path, w->skip) == 0)
                return 1;
        if (w->stop && strcmp(g->path, w->stop) == 0)
                return -ECANCELED;
        return 0;
}

static void assert_walk(const Walk *w, const char *const *expect, unsigned n) {
        assert_int_equal(w->n, n);
        for (unsigned i = 0; i < n; i++)
                assert_string_equal(w->seen[i], expect[i]);
}

static void test_walk_is_pre_order_and_can_skip_or_stop(void **state) {
        static const char *const all[] = { "/", "/a", "/a/x", "/a/x/deep", "/a/y", "/b" };
        static const char *const skipped[] = { "/", "/a", "/b" };
        static const char *const stopped[] = { "/", "/a", "/a/x" };
        static const char *const sub[] = { "/a/x", "/a/x/deep" };
        MemCore *core = *state;
        Walk w;

        assert_int_equal(group_create(core, "/a", 0), 0);
        assert_int_equal(group_create(core, "/a/x", 0), 0);
        assert_int_equal(group_create(core, "/a/y", 0), 0);
        assert_int_equal(group_create(core, "/a/x/deep", 0), 0);
        assert_int_equal(group_create(core, "/b", 0), 0);

        core_read_lock();
        w = (Walk) {};
        assert_int_equal(group_walk(group_lookup(core, "/"), walk_cb, &w), 0);
        assert_walk(&w, all, ELEMENTSOF(all));

        w = (Walk) { .skip = "/a" };
        assert_int_equal(group_walk(group_lookup(core, "/"), walk_cb, &w), 0);
        assert_walk(&w, skipped, ELEMENTSOF(skipped));

        w = (Walk) { .stop = "/a/x" };
        assert_int_equal(group_walk(group_lookup(core, "/"), walk_cb, &w), -ECANCELED);
        assert_walk(&w, stopped, ELEMENTSOF(stopped));

        /* A subtree walk starts at its group and stays inside. */
        w = (Walk) {};
        assert_int_equal(group_walk(group_lookup(core, "/a/x"), walk_cb, &w), 0);
        assert_walk(&w, sub, ELEMENTSOF(sub));

        /* Skipping the start visits only it. */
        w = (Walk) { .skip = "/a" };
        assert_int_equal(group_walk(group_lookup(core, "/a"), walk_cb, &w), 0);
        assert_int_equal(w.n, 1);
        core_read_unlock();
}

/* ---- effective protection through the core -------------------------------------- */

static void test_recursive_protection_switch_changes_effective_low(void **state) {
        MemCore *core = *state;
        MemGroupInfo ia, ib, ic;
        MemGroup *a, *b, *c;

        /* / -> A (low 50) -> B (low 0, usage 60), C (low 20, usage 20), MiB.
         * A.usage = 80, A.children_low = min(60,0) + min(20,20) = 20. */
        assert_int_equal(group_create(core, "/A", 0), 0);
        assert_int_equal(group_create(core, "/A/B", 0), 0);
        assert_int_equal(group_create(core, "/A/C", 0), 0);
        a = take_group(core, "/A");
        b = take_group(core, "/A/B");
        c = take_group(core, "/A/C");
        group_set_low(a, 50 * MiB);
        group_set_low(c, 20 * MiB);
        assert_int_equal(group_charge(core, b, 60 * MiB, MEM_STAT_ANON, 0, NULL), 0);
        assert_int_equal(group_charge(core, c, 20 * MiB, MEM_STAT_ANON, 0, NULL), 0);

        /* Off: siblings 20 <= A.elow 50, undercommit; B = min(60,0) = 0,
         * C = min(20,20) = 20. A itself is first level: 50. */
        core_set_recursive_protection(core, false);
        ia = read_info(core, a, false);
        ib = read_info(core, b, false);
        ic = read_info(core, c, false);
        assert_int_equal(ia.effective_low, 50 * MiB);
        assert_int_equal(ib.effective_low, 0);
        assert_int_equal(ic.effective_low, 20 * MiB);

        /* On: B gets (50 - 20) * (60 - 0) / (80 - 20) = 30 * 60 / 60 = 30;
         * C has no unprotected usage (20 == protected): stays 20. */
        core_set_recursive_protection(core, true);
        ib = read_info(core, b, false);
        ic = read_info(core, c, false);
        assert_int_equal(ib.effective_low, 30 * MiB);
        assert_int_equal(ic.effective_low, 20 * MiB);
        assert_int_equal(ib.effective_min, 0);

        /* With A as the reclaim root, B is first level: its raw 0. */
        group_read(core, b, a, false, &ib);
        assert_int_equal(ib.effective_low, 0);
        group_read(core, a, a, false, &ia);
        assert_int_equal(ia.effective_low, 0);

        core_set_recursive_protection(core, false);
        ib = read_info(core, b, false);
        assert_int_equal(ib.effective_low, 0);

        group_uncharge(core, b, 60 * MiB, MEM_STAT_ANON);
        group_uncharge(core, c, 20 * MiB, MEM_STAT_ANON);
        group_unref(c);
        group_unref(b);
        group_unref(a);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_path_check_accepts_valid_paths),
                cmocka_unit_test(test_path_check_refuses_relative_path),
                cmocka_unit_test(test_path_check_refuses_empty_component),
                cmocka_unit_test(test_path_check_refuses_dot_components),
                cmocka_unit_test(test_path_check_refuses_bad_characters),
                cmocka_unit_test(test_path_check_limits_component_to_255_bytes),
                cmocka_unit_test(test_path_check_limits_whole_path),
                cmocka_unit_test(test_path_check_limits_depth),
                CORE_TEST(test_create_needs_existing_parent),
                CORE_TEST(test_create_refuses_existing_path),
                CORE_TEST(test_create_refuses_invalid_path),
                cmocka_unit_test_setup_teardown(test_create_refuses_past_max_groups,
                                                setup_three_groups, teardown_core),
                cmocka_unit_test_setup_teardown(test_create_after_remove_counts_only_live_groups,
                                                setup_three_groups, teardown_core),
                cmocka_unit_test_setup_teardown(test_create_deeper_than_max_depth_is_refused,
                                                setup_depth_four, teardown_core),
                CORE_TEST(test_lookup_finds_created_groups),
                CORE_TEST(test_get_takes_reference_and_unref_drops_it),
                CORE_TEST(test_remove_refuses_root_missing_and_parents),
                CORE_TEST(test_remove_releases_kept_charges),
                CORE_TEST(test_remove_refuses_group_with_session),
                CORE_TEST(test_removed_path_can_be_recreated_fresh),
                CORE_TEST(test_kept_charge_to_removed_group_is_refused),
                CORE_TEST(test_deepest_tree_charges_and_uncharges_every_level),
                CORE_TEST(test_charge_refuses_bad_item_and_oversize),
                CORE_TEST(test_uncharge_kept_refuses_underflow),
                CORE_TEST(test_kept_charge_refused_names_refusing_ancestor),
                CORE_TEST(test_refusal_raises_max_and_oom_on_refusing_group),
                CORE_TEST(test_charge_above_high_raises_high_and_throttles),
                CORE_TEST(test_over_high_reports_worst_ancestor),
                CORE_TEST(test_forced_max_below_usage_raises_oom),
                CORE_TEST(test_forced_charge_over_max_succeeds_and_says_so),
                CORE_TEST(test_read_reports_defaults_for_new_group),
                CORE_TEST(test_read_reports_settings_usage_and_children),
                CORE_TEST(test_reset_peak_restarts_from_current),
                CORE_TEST(test_stats_go_to_their_item_hierarchically),
                CORE_TEST(test_stats_exact_read_flushes_pending_updates),
                CORE_TEST(test_stat_item_names_round_trip),
                CORE_TEST(test_walk_is_pre_order_and_can_skip_or_stop),
                CORE_TEST(test_recursive_protection_switch_changes_effective_low),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
