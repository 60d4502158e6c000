/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The group tree through a real MemCore: creating, looking up, referencing,
 * removing and walking groups (group.h).
 *
 * A group is created below an existing parent, within max_groups (the root
 * included, removed groups not) and max_depth. A removal takes a leaf that
 * no session is attached to; references held elsewhere keep its memory, not
 * its place in the tree, so the path can be created afresh at once. Each
 * test gets a fresh core, with the calling thread registered in it.
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

/* ---- create / lookup / reference ----------------------------------------- */

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
        /* Full, a taken path is still "exists", as mkdir(2) says. */
        assert_int_equal(group_create(core, "/a", 0), -EEXIST);
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

/* The restore's create: below a parent it holds, never another's child, never below a removed one. */
static void test_create_child_below_a_held_parent(void **state) {
        MemCore *core = *state;
        MemGroup *root = take_group(core, "/"), *a = NULL, *b = NULL, *x = NULL;

        assert_int_equal(group_create_child(core, root, "/a", 7, NULL, &a), 0);
        assert_ptr_equal(a->parent, root);
        assert_int_equal(a->depth, 1);
        assert_int_equal(a->owner, 7);
        assert_int_equal(group_create_child(core, a, "/a/b", 7, NULL, &b), 0);
        assert_ptr_equal(b->parent, a);
        core_read_lock();
        assert_ptr_equal(group_lookup(core, "/a/b"), b);
        core_read_unlock();
        /* Not a child of /a: another's, a sibling sharing a prefix, /a itself, a grandchild. */
        assert_int_equal(group_create_child(core, a, "/c/b", 0, NULL, NULL), -EINVAL);
        assert_int_equal(group_create_child(core, a, "/ab", 0, NULL, NULL), -EINVAL);
        assert_int_equal(group_create_child(core, a, "/a", 0, NULL, NULL), -EINVAL);
        assert_int_equal(group_create_child(core, a, "/a/b/c", 0, NULL, NULL), -EINVAL);
        assert_int_equal(group_create_child(core, root, "/a/b/c", 0, NULL, NULL), -EINVAL);
        assert_int_equal(group_create_child(core, a, "/a/b", 0, NULL, NULL), -EEXIST);
        assert_int_equal(group_create_child(core, a, "/a/b c", 0, NULL, NULL), -EINVAL);
        assert_int_equal(core_group_count(core), 3);

        /* A parent removed while held: nothing is created below it. */
        assert_int_equal(group_create_child(core, root, "/x", 0, NULL, &x), 0);
        assert_int_equal(group_remove(core, "/x"), 0);
        assert_int_equal(group_create_child(core, x, "/x/y", 0, NULL, NULL), -ENOENT);
        assert_int_equal(core_group_count(core), 3);
        group_unref(x);
        group_unref(b);
        group_unref(a);
        group_unref(root);
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

static void test_lookup_finds_created_groups_with_parent_depth_and_owner(void **state) {
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

/* ---- remove -------------------------------------------------------------- */

static void test_remove_refuses_root_missing_and_non_leaf_groups(void **state) {
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

static void test_remove_refused_by_session_leaves_group_chargeable(void **state) {
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

/* ---- group_walk ---------------------------------------------------------- */

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

int main(void) {
        const struct CMUnitTest tests[] = {
                CORE_TEST(test_create_needs_existing_parent),
                CORE_TEST(test_create_refuses_existing_path),
                CORE_TEST(test_create_refuses_invalid_path),
                cmocka_unit_test_setup_teardown(test_create_refuses_past_max_groups,
                                                setup_three_groups, teardown_core),
                cmocka_unit_test_setup_teardown(test_create_after_remove_counts_only_live_groups,
                                                setup_three_groups, teardown_core),
                cmocka_unit_test_setup_teardown(test_create_deeper_than_max_depth_is_refused,
                                                setup_depth_four, teardown_core),
                CORE_TEST(test_create_child_below_a_held_parent),
                CORE_TEST(test_lookup_finds_created_groups_with_parent_depth_and_owner),
                CORE_TEST(test_get_takes_reference_and_unref_drops_it),
                CORE_TEST(test_remove_refuses_root_missing_and_non_leaf_groups),
                CORE_TEST(test_remove_refused_by_session_leaves_group_chargeable),
                CORE_TEST(test_removed_path_can_be_recreated_fresh),
                CORE_TEST(test_walk_is_pre_order_and_can_skip_or_stop),
        };

        return cmocka_run_group_tests_name("core-group-tree", tests, NULL, NULL);
}
