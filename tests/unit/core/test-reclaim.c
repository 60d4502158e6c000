/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Reclaim planning (daemon/core/reclaim.c) against the kernel's own
 * check of it, tools/testing/selftests/cgroup/test_memcontrol.c,
 * test_memcg_min and test_memcg_low, with its tolerances (values_close()),
 * and against the rules each figure follows.
 *
 * The selftest's tree: A (max 200M), A/B (min or low 50M), B's children
 * C, D, E, F with min (low) 75M, 25M, 0 and 500M. C, D and E hold 50M of
 * page cache each, F nothing; then A/G allocates 148M, so 98M must go.
 * The kernel leaves C near 29M, D near 21M, E near 0 (not checked by the
 * selftest), F empty, B near 50M. G's process then exits, and A/G
 * allocates 170M: with min it is refused and B stays near 50M; with low
 * it succeeds, B goes near 30M, and C and D (only) count low events.
 */

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#define MAX(a, b) ((a) > (b) ? (a) : (b))

#include <cmocka.h>

#include "core-test.h"
#include "reclaim.h"
#include "region.h"
#include "session.h"

#define MB(x) ((int64_t) (x) << 20)

enum { A, B, C, D, E, F, G, N };

/* The selftest's values_close(): |a - b| within err % of a + b. */
static bool values_close(int64_t a, int64_t b, int err) {
        return llabs(a - b) <= (a + b) / 100 * err;
}

/* The tree after the setup, protection in min (@low false) or low. */
static void selftest_tree(ReclaimNode v[N], bool low) {
        static const int parent[N] = { [A] = -1, [B] = A, [C] = B, [D] = B, [E] = B, [F] = B, [G] = A };
        static const int64_t prot[N] = { [B] = MB(50), [C] = MB(75), [D] = MB(25), [E] = 0, [F] = MB(500) };

        for (int i = 0; i < N; i++)
                v[i] = (ReclaimNode) {
                        .parent = parent[i],
                        .min = low ? 0 : prot[i],
                        .low = low ? prot[i] : 0,
                };
        for (int i = C; i <= E; i++)
                v[i].usage = v[i].reclaimable = MB(50);
        v[B].usage = MB(150);
        /* G's 148M arrive as the reclaim goes; A holds B's 150M now. */
        v[A].usage = MB(150);
}

/* Plan for A's max of 200M against G's charge of @charge; give the takes back. */
static void selftest_charge(ReclaimNode v[N], int64_t charge, ReclaimOutcome *out) {
        int64_t taken[N] = {};

        assert_int_equal(reclaim_plan(v, N, MAX(v[A].usage + charge - MB(200), 0), true, out), 0);
        for (int i = 0; i < N; i++)
                for (int j = i; j >= 0; j = v[j].parent)
                        taken[j] += v[i].take;
        for (int i = 0; i < N; i++) {
                v[i].reclaimable -= v[i].take;
                v[i].usage -= taken[i];
        }
}

static void print_tree(const char *what, const ReclaimNode v[N]) {
        print_message("%s: B %.1fM C %.1fM D %.1fM E %.1fM F %.1fM\n", what, v[B].usage / 1048576.0,
                      v[C].usage / 1048576.0, v[D].usage / 1048576.0, v[E].usage / 1048576.0,
                      v[F].usage / 1048576.0);
}

/* The first allocation, as the selftest checks it; its low events in @low_events. */
static void selftest_first(ReclaimNode v[N], bool low, bool low_events[N]) {
        ReclaimOutcome out;

        selftest_tree(v, low);
        selftest_charge(v, MB(148), &out);
        assert_true(out.planned >= MB(98));
        print_tree(low ? "low, after 148M" : "min, after 148M", v);
        assert_true(values_close(v[B].usage, MB(50), 3));
        assert_true(values_close(v[C].usage, MB(29), 15));
        assert_true(values_close(v[D].usage, MB(21), 20));
        assert_true(v[E].usage < MB(2));
        assert_int_equal(v[F].usage, 0);
        for (int i = 0; i < N; i++)
                low_events[i] = v[i].low_event;
        /* G's process exits: its 148M go. */
        v[A].usage = v[B].usage;
}

static void test_memcg_min(void **state) {
        bool low_events[N];
        ReclaimNode v[N];
        ReclaimOutcome out;
        int64_t need;

        (void) state;
        selftest_first(v, false, low_events);
        for (int i = 0; i < N; i++)
                assert_false(low_events[i]);
        /* A further 170M: min is never reclaimed, so it cannot fit. */
        need = v[A].usage + MB(170) - MB(200);
        selftest_charge(v, MB(170), &out);
        print_tree("min, after 170M", v);
        assert_true(out.planned < need);
        assert_false(out.low_pass);
        assert_true(values_close(v[B].usage, MB(50), 3));
        for (int i = 0; i < N; i++)
                assert_false(v[i].low_event);
}

static void test_memcg_low(void **state) {
        bool low_events[N];
        ReclaimNode v[N];
        ReclaimOutcome out;

        (void) state;
        selftest_first(v, true, low_events);
        /* A further 170M: low gives way when nothing else is left. */
        selftest_charge(v, MB(170), &out);
        print_tree("low, after 170M", v);
        assert_true(out.planned >= MB(20));
        assert_true(out.low_pass);
        assert_true(values_close(v[B].usage, MB(30), 9));
        for (int i = 0; i < N; i++)
                low_events[i] |= v[i].low_event;
        assert_true(low_events[C]);
        assert_true(low_events[D]);
        assert_false(low_events[E]);
        assert_false(low_events[F]);
}

/* Without protection the split is proportional to what each holds. */
static void test_unprotected_split_is_proportional(void **state) {
        ReclaimNode v[3] = {
                { .parent = -1, .usage = MB(300) },
                { .parent = 0, .usage = MB(200), .reclaimable = MB(200) },
                { .parent = 0, .usage = MB(100), .reclaimable = MB(100) },
        };
        ReclaimOutcome out;

        (void) state;
        assert_int_equal(reclaim_plan(v, 3, MB(90), true, &out), 0);
        assert_true(out.planned >= MB(90) && out.planned < MB(91));
        assert_true(values_close(v[1].take, MB(60), 3));
        assert_true(values_close(v[2].take, MB(30), 3));
}

/* The target's own protection never counts; a child's min always does. */
static void test_target_protection_ignored_child_min_kept(void **state) {
        ReclaimNode v[3] = {
                { .parent = -1, .usage = MB(100), .min = MB(100), .low = MB(100), .reclaimable = MB(40) },
                { .parent = 0, .usage = MB(60), .min = MB(60), .reclaimable = MB(60) },
        };
        ReclaimOutcome out;

        (void) state;
        assert_int_equal(reclaim_plan(v, 2, MB(50), true, &out), 0);
        assert_int_equal(v[0].take, MB(40));
        assert_int_equal(v[1].take, 0);
        assert_int_equal(out.planned, MB(40));
}

/* Only what holders can give is planned, however much is needed. */
static void test_never_more_than_reclaimable(void **state) {
        ReclaimNode v[2] = {
                { .parent = -1, .usage = MB(10) },
                { .parent = 0, .usage = MB(10), .reclaimable = MB(3) },
        };
        ReclaimOutcome out;

        (void) state;
        assert_int_equal(reclaim_plan(v, 2, MB(8), true, &out), 0);
        assert_int_equal(v[1].take, MB(3));
        assert_int_equal(out.planned, MB(3));
        assert_int_equal(reclaim_plan(v, 2, 0, true, &out), 0);
        assert_int_equal(out.planned, 0);
}

static void test_bad_trees_refused(void **state) {
        ReclaimNode v[2] = {
                { .parent = -1, .usage = MB(10) },
                { .parent = 0, .usage = MB(10), .reclaimable = MB(3) },
        };
        ReclaimOutcome out;

        (void) state;
        assert_int_equal(reclaim_plan(v, 0, MB(1), true, &out), -EINVAL);
        v[1].parent = 1;
        assert_int_equal(reclaim_plan(v, 2, MB(1), true, &out), -EINVAL);
        v[1].parent = 0;
        v[1].reclaimable = MB(11);
        assert_int_equal(reclaim_plan(v, 2, MB(1), true, &out), -EINVAL);
        v[1].reclaimable = MB(1);
        v[0].parent = 0;
        assert_int_equal(reclaim_plan(v, 2, MB(1), true, &out), -EINVAL);
        v[0].parent = -1;
        assert_int_equal(reclaim_plan(v, 2, -1, true, &out), -EINVAL);
}

/*
 * The snapshot of a live tree: the selftest's tree in a core, C, D and E
 * holding their 50M through sessions, and a sibling subtree with
 * protected usage that holds nothing reclaimable (folded, not listed).
 */
static void test_snapshot_of_the_selftest_tree(void **state) {
        MemCore *core = *state;
        static const char *const paths[] = { "/A", "/A/B", "/A/B/C", "/A/B/D", "/A/B/E", "/A/B/F", "/A/G", "/A/B/H" };
        static const int64_t mins[] = { 0, MB(50), MB(75), MB(25), 0, MB(500), 0, MB(10) };
        MemGroup *g[ELEMENTSOF(paths)];
        MemSession *s[3];
        ReclaimHolder h[3];
        ReclaimNode *v = NULL;
        ReclaimOutcome out;
        bool recursive;
        size_t n;

        for (size_t i = 0; i < ELEMENTSOF(paths); i++) {
                MemLimits l = { .set = MEM_LIMIT_MIN | MEM_LIMIT_MAX, .min = (uint64_t) mins[i], .max = UINT64_MAX };

                g[i] = make_group(core, paths[i]);
                if (i == 0)
                        l.max = (uint64_t) MB(200);
                assert_int_equal(group_set_limits(g[i], &l, false), 0);
        }
        for (int i = 0; i < 3; i++) {
                assert_int_equal(session_new(core, 100 + i, 0, 0, &s[i]), 0);
                assert_int_equal(session_attach(s[i], g[2 + i]), 0);
                assert_int_equal(session_charge(s[i], (uint64_t) MB(50), MEM_STAT_FILE, 0, NULL), 0);
                h[i] = (ReclaimHolder) { .group = g[2 + i], .bytes = MB(50) };
        }
        /* H holds 8M, protected, with no reclaimable holder. */
        assert_int_equal(core_charge_kept(core, g[7], (uint64_t) MB(8), MEM_STAT_ANON, 0, NULL), 0);

        assert_int_equal(reclaim_snapshot(core, g[0], MEM_REGION_MEMORY, h, 3, &v, &n, &recursive), 0);
        /* A, B, C, D, E: F, G and H hold nothing reclaimable. */
        assert_int_equal(n, 5);
        assert_int_equal(h[0].node, 2);
        assert_int_equal(h[2].node, 4);
        assert_int_equal(v[0].usage, MB(158));
        assert_int_equal(v[1].usage, MB(158));
        assert_int_equal(v[1].min, MB(50));
        assert_int_equal(v[2].reclaimable, MB(50));
        /* H's protected 8M stay in B's sum of its children's. */
        assert_int_equal(v[1].other_children_min, MB(8));
        assert_int_equal(v[0].other_children_min, 0);
        assert_int_equal(reclaim_need(g[0], MEM_REGION_MEMORY, (uint64_t) MB(148)), MB(106));
        assert_int_equal(reclaim_plan(v, n, reclaim_need(g[0], MEM_REGION_MEMORY, (uint64_t) MB(148)), recursive,
                                      &out), 0);
        assert_true(out.planned >= MB(106));
        assert_int_equal(v[0].take + v[1].take, 0);
        assert_true(v[2].take > 0 && v[3].take > 0 && v[4].take > v[2].take);
        free(v);

        /* Only the target's subtree: a holder elsewhere is left out. */
        assert_int_equal(reclaim_snapshot(core, g[3], MEM_REGION_MEMORY, h, 3, &v, &n, &recursive), 0);
        assert_int_equal(n, 1);
        assert_int_equal(h[0].node, -1);
        assert_int_equal(h[1].node, 0);
        assert_int_equal(v[0].reclaimable, MB(50));
        free(v);
        assert_int_equal(reclaim_snapshot(core, g[0], 12345, h, 3, &v, &n, &recursive), -ENOENT);

        assert_int_equal(group_uncharge_kept(core, g[7], (uint64_t) MB(8), MEM_STAT_ANON), 0);
        for (int i = 0; i < 3; i++)
                session_free(s[i]);
        for (size_t i = 0; i < ELEMENTSOF(paths); i++)
                group_unref(g[i]);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                CORE_TEST(test_snapshot_of_the_selftest_tree),
                cmocka_unit_test(test_memcg_min),
                cmocka_unit_test(test_memcg_low),
                cmocka_unit_test(test_unprotected_split_is_proportional),
                cmocka_unit_test(test_target_protection_ignored_child_min_kept),
                cmocka_unit_test(test_never_more_than_reclaimable),
                cmocka_unit_test(test_bad_trees_refused),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
