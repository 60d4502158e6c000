/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Unit tests for memory protection in the hierarchical counter (counter.h,
 * protection.h): protected usage propagated to the parent, one level of
 * effective protection, and effective protection computed down a tree.
 *
 * Every expected number is derived in a comment from the kernel algorithms
 * the core mirrors, never read back from the code under test:
 * propagate_protected_usage(), effective_protection() and
 * page_counter_calculate_protection() of mm/page_counter.c.
 */

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "counter.h"
#include "protection.h"

#define MiB ((int64_t) 1 << 20)

static int64_t children_min(const MemCounter *c) {
        return atomic_load(&c->children_min_usage);
}

static int64_t children_low(const MemCounter *c) {
        return atomic_load(&c->children_low_usage);
}

static int64_t min64(int64_t a, int64_t b) {
        return a < b ? a : b;
}

/* ---- protected usage propagation ----------------------------------------- */

/* propagate_protected_usage() in mm/page_counter.c: on every usage or
 * setting change a counter adds the change of min(usage, min) and of
 * min(usage, low) to its parent's children_min_usage and children_low_usage. */

/* The invariant: parent->children_*_usage == sum of min(usage, setting). */
static void assert_children_protected(const MemCounter *parent, const MemCounter *const *kids,
                                      size_t n) {
        int64_t smin = 0, slow = 0;

        for (size_t i = 0; i < n; i++) {
                int64_t u = counter_read(kids[i]);

                smin += min64(u, counter_read_limit(&kids[i]->min));
                slow += min64(u, counter_read_limit(&kids[i]->low));
        }
        assert_int_equal(children_min(parent), smin);
        assert_int_equal(children_low(parent), slow);
}

static void test_protected_usage_propagates_to_parent(void **state) {
        MemCounter root, p, x, y;
        const MemCounter *kids[] = { &x, &y }, *top[] = { &p };

        (void) state;
        counter_init(&root, NULL);
        counter_init(&p, &root);
        counter_init(&x, &p);
        counter_init(&y, &p);

        counter_set_min(&x, 50);
        counter_set_low(&x, 70);
        counter_set_min(&y, 20);
        /* No usage yet: nothing is protected. */
        assert_int_equal(children_min(&p), 0);
        assert_int_equal(children_low(&p), 0);

        /* x = 30: min(30,50) = 30, min(30,70) = 30. */
        assert_int_equal(counter_try_charge(&x, NULL, 30, NULL), 0);
        assert_int_equal(children_min(&p), 30);
        assert_int_equal(children_low(&p), 30);
        assert_children_protected(&p, kids, 2);

        /* x = 100: min(100,50) = 50, min(100,70) = 70. */
        assert_int_equal(counter_try_charge(&x, NULL, 70, NULL), 0);
        assert_int_equal(children_min(&p), 50);
        assert_int_equal(children_low(&p), 70);

        /* y = 100 (forced charge path): min += min(100,20) = 20, low += 0. */
        assert_int_equal(counter_charge(&y, 100), 0);
        assert_int_equal(children_min(&p), 70);
        assert_int_equal(children_low(&p), 70);
        assert_children_protected(&p, kids, 2);

        /* x = 10: min(10,50) = 10, min(10,70) = 10; y unchanged 20 / 0. */
        counter_uncharge(&x, NULL, 90);
        assert_int_equal(children_min(&p), 10 + 20);
        assert_int_equal(children_low(&p), 10 + 0);
        assert_children_protected(&p, kids, 2);

        /* Settings change with usage fixed: y.min 5 -> 10 + 5 = 15;
         * y.low 200 -> min(100,200) = 100, so low = 10 + 100 = 110. */
        counter_set_min(&y, 5);
        assert_int_equal(children_min(&p), 15);
        counter_set_low(&y, 200);
        assert_int_equal(children_low(&p), 110);
        assert_children_protected(&p, kids, 2);

        /* A setting on the parent propagates to the root: p usage = 110. */
        assert_int_equal(children_min(&root), 0);
        counter_set_min(&p, 60);
        assert_int_equal(children_min(&root), 60);
        counter_set_low(&p, 500);
        assert_int_equal(children_low(&root), 110);
        assert_children_protected(&root, top, 1);

        /* A refused charge leaves the protected sums exactly as they were. */
        assert_int_equal(counter_set_max(&p, 110), 0);
        assert_int_equal(counter_try_charge(&x, NULL, 1, NULL), -EDQUOT);
        assert_int_equal(children_min(&p), 15);
        assert_int_equal(children_low(&p), 110);
        assert_children_protected(&p, kids, 2);
        assert_children_protected(&root, top, 1);

        /* Draining everything brings every sum back to 0. */
        counter_uncharge(&x, NULL, 10);
        counter_uncharge(&y, NULL, 100);
        assert_int_equal(children_min(&p), 0);
        assert_int_equal(children_low(&p), 0);
        assert_int_equal(children_min(&root), 0);
        assert_int_equal(children_low(&root), 0);
}

/* ---- effective_protection() ---------------------------------------------- */

/* One level of effective_protection() in mm/page_counter.c. "Rule n" in the
 * comments is the n-th of the kernel's five rules as protection.c lists them. */

static void test_effective_protection_overcommit_shares_by_used_protection(void **state) {
        (void) state;

        /* usage 100, setting 80 -> protected = 80. siblings 200 > parent_eff 120:
         * overcommit, 80 * 120 / 200 = 9600 / 200 = 48, with or without rec. */
        assert_int_equal(effective_protection(100, 300, 80, 120, 200, false), 48);
        assert_int_equal(effective_protection(100, 300, 80, 120, 200, true), 48);

        /* Setting above usage: protected = min(50, 80) = 50 -> 50 * 120 / 200 = 30. */
        assert_int_equal(effective_protection(50, 300, 80, 120, 200, false), 30);

        /* Multiply before divide: 3 * 2 / 4 = 1 (dividing first gives 3 * 0 = 0). */
        assert_int_equal(effective_protection(3, 10, 3, 2, 4, false), 1);

        /* Byte-sized values whose product passes 2^63: protected = 2^61,
         * parent_eff = 2^61, siblings = 2^62 -> 2^122 / 2^62 = 2^60. */
        assert_int_equal(effective_protection((int64_t) 1 << 61, (int64_t) 1 << 62,
                                              (int64_t) 1 << 61, (int64_t) 1 << 61,
                                              (int64_t) 1 << 62, false),
                         (int64_t) 1 << 60);

        /* No parent protection at all: everything shares 0. */
        assert_int_equal(effective_protection(100, 300, 80, 0, 80, true), 0);
}

static void test_effective_protection_undercommit_caps_at_setting(void **state) {
        (void) state;

        /* protected = min(100, 80) = 80; siblings 150 <= parent_eff 200,
         * not recursive -> 80 (rule 4: never more than the own setting). */
        assert_int_equal(effective_protection(100, 300, 80, 200, 150, false), 80);
        /* Setting above usage: protected = min(60, 80) = 60. */
        assert_int_equal(effective_protection(60, 300, 80, 200, 150, false), 60);
        /* No setting, no recursion: 0 whatever the parent has. */
        assert_int_equal(effective_protection(100, 300, 0, 200, 150, false), 0);
        /* siblings == parent_eff is not overcommit: 80. */
        assert_int_equal(effective_protection(100, 300, 80, 150, 150, false), 80);
}

static void test_effective_protection_recursive_floats_unclaimed(void **state) {
        (void) state;

        /* Rule 5: protected = 80, unclaimed = (200 - 150) * (100 - 80) / (300 - 150)
         * = 50 * 20 / 150 = 1000 / 150 = 6 -> 80 + 6 = 86. */
        assert_int_equal(effective_protection(100, 300, 80, 200, 150, true), 86);

        /* No own setting: (200 - 150) * (100 - 0) / (300 - 150) = 5000 / 150 = 33. */
        assert_int_equal(effective_protection(100, 300, 0, 200, 150, true), 33);

        /* usage == protected (60 <= 80): nothing unprotected to float to -> 60. */
        assert_int_equal(effective_protection(60, 300, 80, 200, 150, true), 60);

        /* parent_usage <= siblings: the guard skips the division -> 80. */
        assert_int_equal(effective_protection(100, 150, 80, 200, 150, true), 80);

        /* parent_eff == siblings: nothing unclaimed -> 80. */
        assert_int_equal(effective_protection(100, 300, 80, 150, 150, true), 80);
}

/* ---- counter_effective_protection() on a tree ----------------------------- */

/* page_counter_calculate_protection() in mm/page_counter.c, which
 * mem_cgroup_calculate_protection() calls for each group as reclaim walks
 * the tree top-down, keeping each level's result in the counter; the core
 * instead applies effective_protection() on the path from the reclaim root
 * down, level by level. */

/*
 * root -> A -> {B, C}, in MiB:
 *   A: min 150, low 90      B: min 30, low 100, usage 80
 *                           C: min 30, low 40,  usage 60
 * A.usage = 140, A.children_min = min(80,30) + min(60,30) = 60,
 * A.children_low = min(80,100) + min(60,40) = 80 + 40 = 120.
 */
typedef struct Tree {
        MemCounter root, a, b, c;
} Tree;

static void tree_init(Tree *t) {
        counter_init(&t->root, NULL);
        counter_init(&t->a, &t->root);
        counter_init(&t->b, &t->a);
        counter_init(&t->c, &t->a);
        counter_set_min(&t->a, 150 * MiB);
        counter_set_low(&t->a, 90 * MiB);
        counter_set_min(&t->b, 30 * MiB);
        counter_set_low(&t->b, 100 * MiB);
        counter_set_min(&t->c, 30 * MiB);
        counter_set_low(&t->c, 40 * MiB);
        assert_int_equal(counter_try_charge(&t->b, NULL, 80 * MiB, NULL), 0);
        assert_int_equal(counter_try_charge(&t->c, NULL, 60 * MiB, NULL), 0);
        assert_int_equal(counter_read(&t->a), 140 * MiB);
        assert_int_equal(children_min(&t->a), 60 * MiB);
        assert_int_equal(children_low(&t->a), 120 * MiB);
}

static void test_tree_protection_first_level_gets_raw_setting(void **state) {
        int64_t emin = -1, elow = -1;
        Tree t;

        (void) state;
        tree_init(&t);

        /* Rule 1: A is a child of the reclaim root: emin = 150 (raw, even
         * though it is above A's usage of 140), elow = 90. */
        counter_effective_protection(&t.root, &t.a, false, &emin, &elow);
        assert_int_equal(emin, 150 * MiB);
        assert_int_equal(elow, 90 * MiB);
        /* NULL means the tree's root. */
        emin = elow = -1;
        counter_effective_protection(NULL, &t.a, false, &emin, &elow);
        assert_int_equal(emin, 150 * MiB);
        assert_int_equal(elow, 90 * MiB);
}

static void test_tree_protection_second_level_capped_or_shared_by_parent(void **state) {
        int64_t emin = -1, elow = -1;
        Tree t;

        (void) state;
        tree_init(&t);

        /* min: siblings 60 <= A.emin 150, undercommit, not recursive:
         *   B = min(80,30) = 30, C = min(60,30) = 30.
         * low: siblings 120 > A.elow 90, overcommit:
         *   B = 80 * 90 / 120 = 7200 / 120 = 60, C = 40 * 90 / 120 = 3600 / 120 = 30. */
        counter_effective_protection(&t.root, &t.b, false, &emin, &elow);
        assert_int_equal(emin, 30 * MiB);
        assert_int_equal(elow, 60 * MiB);
        counter_effective_protection(&t.root, &t.c, false, &emin, &elow);
        assert_int_equal(emin, 30 * MiB);
        assert_int_equal(elow, 30 * MiB);
}

static void test_tree_protection_second_level_recursive_floats_unclaimed_min(void **state) {
        int64_t emin = -1, elow = -1;
        Tree t;

        (void) state;
        tree_init(&t);

        /* min, recursive: unclaimed = (150 - 60) * (usage - 30) / (140 - 60).
         *   B: 90 * 50 / 80 = 4500 / 80 = 56.25 -> 30 + 56.25 = 86.25 MiB,
         *   C: 90 * 30 / 80 = 2700 / 80 = 33.75 -> 30 + 33.75 = 63.75 MiB.
         * In bytes the quarters are exact: 0.25 MiB = 262144.
         * low is overcommitted, so recursion changes nothing: 60 and 30. */
        counter_effective_protection(&t.root, &t.b, true, &emin, &elow);
        assert_int_equal(emin, 86 * MiB + MiB / 4);
        assert_int_equal(elow, 60 * MiB);
        counter_effective_protection(&t.root, &t.c, true, &emin, &elow);
        assert_int_equal(emin, 63 * MiB + 3 * MiB / 4);
        assert_int_equal(elow, 30 * MiB);
}

static void test_tree_protection_reclaim_root_reads_zero(void **state) {
        int64_t emin = -1, elow = -1;
        Tree t;

        (void) state;
        tree_init(&t);

        counter_effective_protection(&t.a, &t.a, false, &emin, &elow);
        assert_int_equal(emin, 0);
        assert_int_equal(elow, 0);
        emin = elow = -1;
        counter_effective_protection(&t.root, &t.root, true, &emin, &elow);
        assert_int_equal(emin, 0);
        assert_int_equal(elow, 0);
        emin = elow = -1;
        counter_effective_protection(NULL, &t.root, false, &emin, &elow);
        assert_int_equal(emin, 0);
        assert_int_equal(elow, 0);
}

static void test_tree_protection_children_of_reclaim_root_get_raw_settings(void **state) {
        int64_t emin = -1, elow = -1;
        Tree t;

        (void) state;
        tree_init(&t);

        /* Reclaim targets A: B and C are the first level and get their raw
         * settings (B.low 100 even above B's usage of 80), not the shares
         * they get under the real root (60 and 30). */
        counter_effective_protection(&t.a, &t.b, false, &emin, &elow);
        assert_int_equal(emin, 30 * MiB);
        assert_int_equal(elow, 100 * MiB);
        counter_effective_protection(&t.a, &t.c, true, &emin, &elow);
        assert_int_equal(emin, 30 * MiB);
        assert_int_equal(elow, 40 * MiB);
}

static void test_tree_protection_zero_usage_reads_zero(void **state) {
        int64_t emin = -1, elow = -1;
        MemCounter d;
        Tree t;

        (void) state;
        tree_init(&t);
        counter_init(&d, &t.a);
        counter_set_min(&d, 10 * MiB);
        counter_set_low(&d, 10 * MiB);

        counter_effective_protection(&t.root, &d, true, &emin, &elow);
        assert_int_equal(emin, 0);
        assert_int_equal(elow, 0);
        /* Even as a first-level child (rule 1), no usage means 0. */
        emin = elow = -1;
        counter_effective_protection(&t.a, &d, false, &emin, &elow);
        assert_int_equal(emin, 0);
        assert_int_equal(elow, 0);
}

static void test_tree_protection_capped_by_parent_effective(void **state) {
        int64_t emin = -1, elow = -1;
        MemCounter root, p, q, r;

        (void) state;
        /* root -> P (min 10) -> Q (min 50) -> R (min 50), R charged 40:
         *   P.emin = 10 (rule 1);
         *   Q: protected = min(40,50) = 40, siblings = 40 > 10:
         *      40 * 10 / 40 = 10;
         *   R: protected = 40, siblings = 40 > Q.emin 10: 40 * 10 / 40 = 10.
         * Rule 2: the deep 50s are capped by P's 10. */
        counter_init(&root, NULL);
        counter_init(&p, &root);
        counter_init(&q, &p);
        counter_init(&r, &q);
        counter_set_min(&p, 10 * MiB);
        counter_set_min(&q, 50 * MiB);
        counter_set_min(&r, 50 * MiB);
        assert_int_equal(counter_try_charge(&r, NULL, 40 * MiB, NULL), 0);

        counter_effective_protection(&root, &q, false, &emin, &elow);
        assert_int_equal(emin, 10 * MiB);
        assert_int_equal(elow, 0);
        counter_effective_protection(&root, &r, true, &emin, &elow);
        assert_int_equal(emin, 10 * MiB);
        assert_int_equal(elow, 0);
        /* With Q as reclaim root, R gets its raw 50. */
        counter_effective_protection(&q, &r, false, &emin, &elow);
        assert_int_equal(emin, 50 * MiB);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_protected_usage_propagates_to_parent),
                cmocka_unit_test(test_effective_protection_overcommit_shares_by_used_protection),
                cmocka_unit_test(test_effective_protection_undercommit_caps_at_setting),
                cmocka_unit_test(test_effective_protection_recursive_floats_unclaimed),
                cmocka_unit_test(test_tree_protection_first_level_gets_raw_setting),
                cmocka_unit_test(test_tree_protection_second_level_capped_or_shared_by_parent),
                cmocka_unit_test(test_tree_protection_second_level_recursive_floats_unclaimed_min),
                cmocka_unit_test(test_tree_protection_reclaim_root_reads_zero),
                cmocka_unit_test(test_tree_protection_children_of_reclaim_root_get_raw_settings),
                cmocka_unit_test(test_tree_protection_zero_usage_reads_zero),
                cmocka_unit_test(test_tree_protection_capped_by_parent_effective),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
