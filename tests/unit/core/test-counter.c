/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Unit tests for the hierarchical counter (counter.h), effective protection
 * (protection.h) and the memory.high throttle delay (charge.h).
 *
 * Every expected number is derived in a comment from the kernel algorithms
 * the core mirrors, never read back from the code under test: the page
 * counter's charge, limit and protected-usage walks of mm/page_counter.c,
 * effective_protection() and page_counter_calculate_protection() from the
 * same file, and calculate_high_delay() in mm/memcontrol.c.
 */

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "charge.h"
#include "counter.h"
#include "protection.h"

#define KiB ((int64_t) 1 << 10)
#define MiB ((int64_t) 1 << 20)

/* A chain top <- mid <- leaf, top being the root. */
typedef struct Chain {
        MemCounter top, mid, leaf;
} Chain;

static void chain_init(Chain *ch) {
        counter_init(&ch->top, NULL);
        counter_init(&ch->mid, &ch->top);
        counter_init(&ch->leaf, &ch->mid);
}

static int64_t failcnt(const MemCounter *c) {
        return (int64_t) atomic_load(&c->failcnt);
}

static int64_t watermark(const MemCounter *c) {
        return atomic_load(&c->watermark);
}

static int64_t children_min(const MemCounter *c) {
        return atomic_load(&c->children_min_usage);
}

static int64_t children_low(const MemCounter *c) {
        return atomic_load(&c->children_low_usage);
}

static int64_t min64(int64_t a, int64_t b) {
        return a < b ? a : b;
}

/* ---- counter_init ---------------------------------------------------- */

static void test_init_starts_empty_and_unlimited(void **state) {
        Chain ch;

        (void) state;
        chain_init(&ch);

        assert_ptr_equal(ch.leaf.parent, &ch.mid);
        assert_ptr_equal(ch.mid.parent, &ch.top);
        assert_null(ch.top.parent);
        assert_int_equal(counter_read(&ch.leaf), 0);
        assert_int_equal(counter_read_limit(&ch.leaf.max), MEM_COUNTER_MAX);
        assert_int_equal(counter_limit_to_u64(counter_read_limit(&ch.leaf.max)), UINT64_MAX);
        assert_int_equal(counter_limit_to_u64(counter_read_limit(&ch.leaf.high)), UINT64_MAX);
        assert_int_equal(counter_read_limit(&ch.leaf.min), 0);
        assert_int_equal(counter_read_limit(&ch.leaf.low), 0);
        assert_int_equal(failcnt(&ch.leaf), 0);
        assert_int_equal(watermark(&ch.leaf), 0);
}

/* ---- charge / try_charge / uncharge ----------------------------------- */

static void test_try_charge_charges_every_level(void **state) {
        MemCounter *fail = NULL;
        Chain ch;

        (void) state;
        chain_init(&ch);

        assert_int_equal(counter_try_charge(&ch.leaf, NULL, 10 * KiB, &fail), 0);
        assert_int_equal(counter_read(&ch.leaf), 10 * KiB);
        assert_int_equal(counter_read(&ch.mid), 10 * KiB);
        assert_int_equal(counter_read(&ch.top), 10 * KiB);

        /* A charge to the middle is seen by it and the top, not the leaf. */
        assert_int_equal(counter_try_charge(&ch.mid, NULL, 5 * KiB, &fail), 0);
        assert_int_equal(counter_read(&ch.leaf), 10 * KiB);
        assert_int_equal(counter_read(&ch.mid), 15 * KiB);
        assert_int_equal(counter_read(&ch.top), 15 * KiB);
        assert_null(fail);

        counter_uncharge(&ch.leaf, NULL, 4 * KiB);
        assert_int_equal(counter_read(&ch.leaf), 6 * KiB);
        assert_int_equal(counter_read(&ch.mid), 11 * KiB);
        assert_int_equal(counter_read(&ch.top), 11 * KiB);

        counter_uncharge(&ch.mid, NULL, 5 * KiB);
        counter_uncharge(&ch.leaf, NULL, 6 * KiB);
        assert_int_equal(counter_read(&ch.leaf), 0);
        assert_int_equal(counter_read(&ch.mid), 0);
        assert_int_equal(counter_read(&ch.top), 0);
}

static void test_try_charge_to_exactly_max_succeeds(void **state) {
        MemCounter *fail = NULL;
        Chain ch;

        (void) state;
        chain_init(&ch);
        assert_int_equal(counter_set_max(&ch.top, 100 * KiB), 0);

        /* 60 + 40 = 100 = max: "new > max" is false, so it is accepted. */
        assert_int_equal(counter_try_charge(&ch.leaf, NULL, 60 * KiB, &fail), 0);
        assert_int_equal(counter_try_charge(&ch.leaf, NULL, 40 * KiB, &fail), 0);
        assert_null(fail);
        assert_int_equal(counter_read(&ch.top), 100 * KiB);
        assert_int_equal(counter_read(&ch.leaf), 100 * KiB);
        assert_int_equal(failcnt(&ch.top), 0);
}

static void test_try_charge_rolls_back_on_ancestor_limit(void **state) {
        MemCounter *fail = NULL;
        Chain ch;

        (void) state;
        chain_init(&ch);
        assert_int_equal(counter_set_max(&ch.top, 100 * KiB), 0);
        assert_int_equal(counter_try_charge(&ch.leaf, NULL, 100 * KiB, &fail), 0);

        /* One byte over the top's max: refused there, leaf and mid unwound. */
        assert_int_equal(counter_try_charge(&ch.leaf, NULL, 1, &fail), -EDQUOT);
        assert_ptr_equal(fail, &ch.top);
        assert_int_equal(counter_read(&ch.leaf), 100 * KiB);
        assert_int_equal(counter_read(&ch.mid), 100 * KiB);
        assert_int_equal(counter_read(&ch.top), 100 * KiB);
        assert_int_equal(failcnt(&ch.top), 1);
        assert_int_equal(failcnt(&ch.mid), 0);
        assert_int_equal(failcnt(&ch.leaf), 0);
        /* The refusing level never takes the add, so its peak is unmoved
         * (the levels below may record it, as page_counter's do). */
        assert_int_equal(watermark(&ch.top), 100 * KiB);

        /* Each refusal counts once more. */
        assert_int_equal(counter_try_charge(&ch.mid, NULL, 7, &fail), -EDQUOT);
        assert_ptr_equal(fail, &ch.top);
        assert_int_equal(failcnt(&ch.top), 2);
        assert_int_equal(counter_read(&ch.mid), 100 * KiB);

        /* After an uncharge the same byte fits again. */
        counter_uncharge(&ch.leaf, NULL, 1);
        assert_int_equal(counter_try_charge(&ch.leaf, NULL, 1, &fail), 0);
        assert_int_equal(counter_read(&ch.top), 100 * KiB);
}

static void test_try_charge_refused_by_middle_leaves_top_untouched(void **state) {
        MemCounter *fail = NULL;
        Chain ch;

        (void) state;
        chain_init(&ch);
        assert_int_equal(counter_set_max(&ch.mid, 50 * KiB), 0);
        assert_int_equal(counter_try_charge(&ch.leaf, NULL, 20 * KiB, &fail), 0);

        /* 20 + 31 = 51 > 50 at mid; the walk stops there, the top never sees it. */
        assert_int_equal(counter_try_charge(&ch.leaf, NULL, 31 * KiB, &fail), -EDQUOT);
        assert_ptr_equal(fail, &ch.mid);
        assert_int_equal(counter_read(&ch.leaf), 20 * KiB);
        assert_int_equal(counter_read(&ch.mid), 20 * KiB);
        assert_int_equal(counter_read(&ch.top), 20 * KiB);
        assert_int_equal(watermark(&ch.top), 20 * KiB);
        assert_int_equal(failcnt(&ch.mid), 1);
        assert_int_equal(failcnt(&ch.top), 0);
        assert_int_equal(failcnt(&ch.leaf), 0);
}

static void test_try_charge_refused_by_first_level_charges_nothing(void **state) {
        MemCounter *fail = NULL;
        Chain ch;

        (void) state;
        chain_init(&ch);
        assert_int_equal(counter_set_max(&ch.leaf, 8 * KiB), 0);

        assert_int_equal(counter_try_charge(&ch.leaf, NULL, 8 * KiB + 1, &fail), -EDQUOT);
        assert_ptr_equal(fail, &ch.leaf);
        assert_int_equal(counter_read(&ch.leaf), 0);
        assert_int_equal(counter_read(&ch.mid), 0);
        assert_int_equal(counter_read(&ch.top), 0);
        assert_int_equal(failcnt(&ch.leaf), 1);
        /* ret_fail is optional. */
        assert_int_equal(counter_try_charge(&ch.leaf, NULL, 9 * KiB, NULL), -EDQUOT);
        assert_int_equal(failcnt(&ch.leaf), 2);
        assert_int_equal(counter_read(&ch.top), 0);
}

static void test_try_charge_with_stop_charges_only_below_stop(void **state) {
        MemCounter *fail = NULL;
        Chain ch;

        (void) state;
        chain_init(&ch);
        /* A top limit that would refuse: with stop == mid it is never consulted. */
        assert_int_equal(counter_set_max(&ch.top, 1 * KiB), 0);

        assert_int_equal(counter_try_charge(&ch.leaf, &ch.mid, 10 * KiB, &fail), 0);
        assert_int_equal(counter_read(&ch.leaf), 10 * KiB);
        assert_int_equal(counter_read(&ch.mid), 0);
        assert_int_equal(counter_read(&ch.top), 0);
        assert_int_equal(failcnt(&ch.top), 0);

        /* stop == top: leaf and mid, not the top. */
        assert_int_equal(counter_try_charge(&ch.leaf, &ch.top, 3 * KiB, &fail), 0);
        assert_int_equal(counter_read(&ch.leaf), 13 * KiB);
        assert_int_equal(counter_read(&ch.mid), 3 * KiB);
        assert_int_equal(counter_read(&ch.top), 0);

        /* A limit below the stop still refuses, and is reported. */
        assert_int_equal(counter_set_max(&ch.mid, 4 * KiB), 0);
        assert_int_equal(counter_try_charge(&ch.leaf, &ch.top, 2 * KiB, &fail), -EDQUOT);
        assert_ptr_equal(fail, &ch.mid);
        assert_int_equal(counter_read(&ch.leaf), 13 * KiB);
        assert_int_equal(counter_read(&ch.mid), 3 * KiB);

        /* Uncharge with the same stops gives everything back. */
        counter_uncharge(&ch.leaf, &ch.top, 3 * KiB);
        counter_uncharge(&ch.leaf, &ch.mid, 10 * KiB);
        assert_int_equal(counter_read(&ch.leaf), 0);
        assert_int_equal(counter_read(&ch.mid), 0);
        assert_int_equal(counter_read(&ch.top), 0);
}

static void test_charge_ignores_max_and_reports_overage(void **state) {
        MemCounter *fail = NULL;
        Chain ch;

        (void) state;
        chain_init(&ch);
        assert_int_equal(counter_set_max(&ch.mid, 10 * KiB), 0);

        assert_int_equal(counter_charge(&ch.leaf, 10 * KiB), 0); /* exactly max: not above */
        assert_int_equal(counter_charge(&ch.leaf, 5 * KiB), 1);  /* 15 > 10 at mid */
        assert_int_equal(counter_read(&ch.leaf), 15 * KiB);
        assert_int_equal(counter_read(&ch.mid), 15 * KiB);
        assert_int_equal(counter_read(&ch.top), 15 * KiB);
        assert_int_equal(watermark(&ch.mid), 15 * KiB);
        /* A forced charge is not a refusal. */
        assert_int_equal(failcnt(&ch.mid), 0);

        /* While above max, a try_charge is refused by mid. */
        assert_int_equal(counter_try_charge(&ch.leaf, NULL, 1, &fail), -EDQUOT);
        assert_ptr_equal(fail, &ch.mid);
}

static void test_zero_byte_charge_changes_nothing(void **state) {
        MemCounter *fail = NULL;
        Chain ch;

        (void) state;
        chain_init(&ch);
        assert_int_equal(counter_set_max(&ch.top, 4 * KiB), 0);
        assert_int_equal(counter_try_charge(&ch.leaf, NULL, 4 * KiB, &fail), 0);

        /* At max, 0 more bytes still fit (4 + 0 is not > 4). */
        assert_int_equal(counter_try_charge(&ch.leaf, NULL, 0, &fail), 0);
        assert_null(fail);
        assert_int_equal(counter_charge(&ch.leaf, 0), 0);
        counter_uncharge(&ch.leaf, NULL, 0);
        assert_int_equal(counter_read(&ch.leaf), 4 * KiB);
        assert_int_equal(counter_read(&ch.mid), 4 * KiB);
        assert_int_equal(counter_read(&ch.top), 4 * KiB);
        assert_int_equal(failcnt(&ch.top), 0);
}

static void test_oversized_charge_is_overflow_and_charges_nothing(void **state) {
        MemCounter *fail = NULL;
        Chain ch;

        (void) state;
        chain_init(&ch);
        assert_int_equal(counter_try_charge(&ch.leaf, NULL, 1 * KiB, &fail), 0);

        assert_int_equal(counter_charge(&ch.leaf, UINT64_MAX), -EOVERFLOW);
        assert_int_equal(counter_try_charge(&ch.leaf, NULL, UINT64_MAX, &fail), -EOVERFLOW);
        assert_int_equal(counter_charge(&ch.leaf, MEM_CHARGE_MAX + 1), -EOVERFLOW);
        assert_int_equal(counter_try_charge(&ch.leaf, NULL, MEM_CHARGE_MAX + 1, &fail),
                         -EOVERFLOW);
        assert_int_equal(counter_read(&ch.leaf), 1 * KiB);
        assert_int_equal(counter_read(&ch.mid), 1 * KiB);
        assert_int_equal(counter_read(&ch.top), 1 * KiB);
        assert_int_equal(watermark(&ch.top), 1 * KiB);
        assert_int_equal(failcnt(&ch.leaf) + failcnt(&ch.mid) + failcnt(&ch.top), 0);

        /* MEM_CHARGE_MAX itself is a legal charge. */
        assert_int_equal(counter_try_charge(&ch.leaf, NULL, MEM_CHARGE_MAX, &fail), 0);
        assert_int_equal(counter_read(&ch.top), (int64_t) MEM_CHARGE_MAX + 1 * KiB);
        counter_uncharge(&ch.leaf, NULL, MEM_CHARGE_MAX);
        assert_int_equal(counter_read(&ch.top), 1 * KiB);
}

static void test_charge_past_counter_max_is_overflow_and_unwinds(void **state) {
        unsigned n = (unsigned) ((uint64_t) MEM_COUNTER_MAX / MEM_CHARGE_MAX);
        Chain ch;

        (void) state;
        chain_init(&ch);

        /* 2^62 / 2^48 = 16384 charges of MEM_CHARGE_MAX fill mid (and top)
         * to exactly MEM_COUNTER_MAX, which is not above it. */
        assert_int_equal(n, 16384);
        for (unsigned i = 0; i < n; i++)
                assert_int_equal(counter_charge(&ch.mid, MEM_CHARGE_MAX), 0);
        assert_int_equal(counter_read(&ch.mid), MEM_COUNTER_MAX);

        /* One byte more via the leaf: the leaf takes it, mid would pass
         * MEM_COUNTER_MAX, so the leaf is unwound and nothing is charged. */
        assert_int_equal(counter_charge(&ch.leaf, 1), -EOVERFLOW);
        assert_int_equal(counter_read(&ch.leaf), 0);
        assert_int_equal(counter_read(&ch.mid), MEM_COUNTER_MAX);
        assert_int_equal(counter_read(&ch.top), MEM_COUNTER_MAX);
}

static void test_uncharge_beyond_usage_clamps_at_zero(void **state) {
        Chain ch;

        (void) state;
        chain_init(&ch);
        assert_int_equal(counter_charge(&ch.leaf, 10), 0);
        assert_int_equal(counter_charge(&ch.mid, 30), 0);

        /* The caller is wrong by 10 at the leaf: it clamps to 0 there; the
         * ancestors hold enough and simply drop 20. */
        counter_uncharge(&ch.leaf, NULL, 20);
        assert_int_equal(counter_read(&ch.leaf), 0);
        assert_int_equal(counter_read(&ch.mid), 20);
        assert_int_equal(counter_read(&ch.top), 20);
}

/* ---- set_max ------------------------------------------------------------ */

static void test_set_max_below_usage_is_busy(void **state) {
        Chain ch;

        (void) state;
        chain_init(&ch);
        assert_int_equal(counter_try_charge(&ch.leaf, NULL, 100, NULL), 0);

        assert_int_equal(counter_set_max(&ch.mid, 99), -EBUSY);
        assert_int_equal(counter_read_limit(&ch.mid.max), MEM_COUNTER_MAX); /* unchanged */

        assert_int_equal(counter_set_max(&ch.mid, 100), 0); /* == usage is fine */
        assert_int_equal(counter_read_limit(&ch.mid.max), 100);
        assert_int_equal(counter_set_max(&ch.mid, 50), -EBUSY);
        assert_int_equal(counter_read_limit(&ch.mid.max), 100);

        /* Raising it back to "none" always works. */
        assert_int_equal(counter_set_max(&ch.mid, counter_clamp_limit(UINT64_MAX)), 0);
        assert_int_equal(counter_limit_to_u64(counter_read_limit(&ch.mid.max)), UINT64_MAX);
}

static void test_set_max_force_below_usage_returns_one(void **state) {
        MemCounter *fail = NULL;
        Chain ch;

        (void) state;
        chain_init(&ch);
        assert_int_equal(counter_try_charge(&ch.leaf, NULL, 100, NULL), 0);

        assert_int_equal(counter_set_max_force(&ch.mid, 60), 1);
        assert_int_equal(counter_read_limit(&ch.mid.max), 60);
        assert_int_equal(counter_read(&ch.mid), 100); /* nothing is taken away */

        /* Now every try_charge through mid is refused by it. */
        assert_int_equal(counter_try_charge(&ch.leaf, NULL, 1, &fail), -EDQUOT);
        assert_ptr_equal(fail, &ch.mid);

        assert_int_equal(counter_set_max_force(&ch.mid, 100), 0); /* == usage */
        assert_int_equal(counter_set_max_force(&ch.mid, 1000), 0);
        assert_int_equal(counter_read_limit(&ch.mid.max), 1000);
}

/* ---- watermark ------------------------------------------------------------ */

static void test_watermark_tracks_peak_and_resets_to_usage(void **state) {
        Chain ch;

        (void) state;
        chain_init(&ch);

        assert_int_equal(counter_try_charge(&ch.leaf, NULL, 100, NULL), 0);
        assert_int_equal(counter_try_charge(&ch.mid, NULL, 50, NULL), 0);
        counter_uncharge(&ch.leaf, NULL, 80);
        /* leaf peaked at 100, mid and top at 150; now leaf 20, mid/top 70. */
        assert_int_equal(watermark(&ch.leaf), 100);
        assert_int_equal(watermark(&ch.mid), 150);
        assert_int_equal(watermark(&ch.top), 150);

        counter_reset_watermark(&ch.mid);
        assert_int_equal(watermark(&ch.mid), 70);
        assert_int_equal(watermark(&ch.top), 150); /* a reset is per counter */
        assert_int_equal(watermark(&ch.leaf), 100);

        assert_int_equal(counter_try_charge(&ch.leaf, NULL, 10, NULL), 0);
        assert_int_equal(watermark(&ch.mid), 80);
        assert_int_equal(watermark(&ch.leaf), 100); /* 30 < 100 */
        assert_int_equal(watermark(&ch.top), 150);
}

/* ---- limit clamping --------------------------------------------------------- */

static void test_clamp_limit_round_trips_no_limit(void **state) {
        (void) state;

        assert_int_equal(counter_clamp_limit(UINT64_MAX), MEM_COUNTER_MAX);
        assert_int_equal(counter_limit_to_u64(counter_clamp_limit(UINT64_MAX)), UINT64_MAX);
        /* Anything at or above MEM_COUNTER_MAX means "none" as well. */
        assert_int_equal(counter_clamp_limit((uint64_t) MEM_COUNTER_MAX), MEM_COUNTER_MAX);
        assert_int_equal(counter_clamp_limit((uint64_t) MEM_COUNTER_MAX + 1), MEM_COUNTER_MAX);
        assert_int_equal(counter_limit_to_u64(MEM_COUNTER_MAX), UINT64_MAX);
        /* Below it, values are exact both ways. */
        assert_int_equal(counter_clamp_limit((uint64_t) MEM_COUNTER_MAX - 1), MEM_COUNTER_MAX - 1);
        assert_int_equal(counter_limit_to_u64(MEM_COUNTER_MAX - 1), (uint64_t) MEM_COUNTER_MAX - 1);
        assert_int_equal(counter_clamp_limit(0), 0);
        assert_int_equal(counter_limit_to_u64(0), 0);
        assert_int_equal(counter_limit_to_u64(counter_clamp_limit(12345)), 12345);
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

/* ---- charge_high_delay_usec() ---------------------------------------------- */

/*
 * The kernel's calculate_high_delay() in µs instead of jiffies:
 *   overage = ((usage - high) << 20) / high
 *   penalty = overage^2 * 1000000 >> 20 >> 14
 *   penalty = penalty * max(pages, 64) / 64, pages = bytes / 4096
 *   clamp to 2 s; 0 if <= 10000 µs.
 * With high = 100 MiB, (usage - high) = k MiB:
 *   overage = k * 2^20 * 2^20 / (100 * 2^20) = floor(k * 2^20 / 100).
 */
#define HIGH (100 * MiB)

static void test_high_delay_zero_at_or_below_high(void **state) {
        (void) state;

        assert_int_equal(charge_high_delay_usec(0, HIGH, 4096), 0);
        assert_int_equal(charge_high_delay_usec(HIGH - 1, HIGH, 4096), 0);
        assert_int_equal(charge_high_delay_usec(HIGH, HIGH, 4096), 0);
        assert_int_equal(charge_high_delay_usec(HIGH, HIGH, 64 * MiB), 0);
        /* No high set (MEM_COUNTER_MAX): never a delay. */
        assert_int_equal(charge_high_delay_usec(HIGH, MEM_COUNTER_MAX, 4096), 0);
}

static void test_high_delay_below_ten_ms_is_zero(void **state) {
        (void) state;

        /* 101 MiB: overage = floor(2^20 / 100) = 10485;
         * 10485^2 = 109935225; * 10^6 = 109935225000000; >> 34 = 6399 µs
         * (the kernel's ~6 ms): at or below 10 ms, so 0. */
        assert_int_equal(charge_high_delay_usec(101 * MiB, HIGH, 4096), 0);
        /* A few bytes over: also 0. */
        assert_int_equal(charge_high_delay_usec(HIGH + 1, HIGH, 4096), 0);
}

static void test_high_delay_matches_kernel_table(void **state) {
        (void) state;

        /* 102 MiB: overage = floor(2 * 2^20 / 100) = 20971;
         * 20971^2 = 439782841; * 10^6 >> 34 = 25598 µs. */
        assert_int_equal(charge_high_delay_usec(102 * MiB, HIGH, 4096), 25598);

        /* 105 MiB: overage = floor(5 * 2^20 / 100) = 52428;
         * 52428^2 = 2748695184; * 10^6 >> 34 = 159995 µs (the kernel's ~159 ms). */
        assert_int_equal(charge_high_delay_usec(105 * MiB, HIGH, 4096), 159995);

        /* 110 MiB: overage = floor(10 * 2^20 / 100) = 104857;
         * 104857^2 = 10994990449; * 10^6 >> 34 = 639992 µs (~639 ms). */
        assert_int_equal(charge_high_delay_usec(110 * MiB, HIGH, 4096), 639992);

        /* 117 MiB: overage = floor(17 * 2^20 / 100) = 178257;
         * 178257^2 = 31775558049; * 10^6 >> 34 = 1849580 µs, still below 2 s. */
        assert_int_equal(charge_high_delay_usec(117 * MiB, HIGH, 4096), 1849580);

        /* 118 MiB: overage = floor(18 * 2^20 / 100) = 188743;
         * 188743^2 = 35623920049; * 10^6 >> 34 = 2073585 µs -> capped at 2 s. */
        assert_int_equal(charge_high_delay_usec(118 * MiB, HIGH, 4096), MEM_HIGH_DELAY_MAX_USEC);
        assert_int_equal(charge_high_delay_usec(150 * MiB, HIGH, 4096), MEM_HIGH_DELAY_MAX_USEC);
}

static void test_high_delay_scales_with_charge_size(void **state) {
        (void) state;

        /* Up to 64 pages (256 KiB) the factor is 1: same as one page. */
        assert_int_equal(charge_high_delay_usec(105 * MiB, HIGH, 0), 159995);
        assert_int_equal(charge_high_delay_usec(105 * MiB, HIGH, 64 * 4096), 159995);

        /* 128 pages: 159995 * 128 / 64 = 319990. */
        assert_int_equal(charge_high_delay_usec(105 * MiB, HIGH, 128 * 4096), 319990);

        /* 4 MiB = 1024 pages lifts the 101 MiB case over 10 ms:
         * 6399 * 1024 / 64 = 102384. */
        assert_int_equal(charge_high_delay_usec(101 * MiB, HIGH, 4 * MiB), 102384);

        /* 110 MiB with 256 pages: 639992 * 4 = 2559968 -> capped at 2 s. */
        assert_int_equal(charge_high_delay_usec(110 * MiB, HIGH, 256 * 4096),
                         MEM_HIGH_DELAY_MAX_USEC);
}

static void test_high_delay_huge_overage_is_capped(void **state) {
        (void) state;

        /* 10x high: overage = 9 * 2^20 = 9437184; overage^2 * 10^6 = 8.9e19
         * passes 2^64: the result must still be the cap, not a wrapped value. */
        assert_int_equal(charge_high_delay_usec(1000 * MiB, HIGH, 4096), MEM_HIGH_DELAY_MAX_USEC);
        /* (usage - high) << 20 itself passes 2^64 here. */
        assert_int_equal(charge_high_delay_usec(MEM_COUNTER_MAX, 1 * MiB, 4096),
                         MEM_HIGH_DELAY_MAX_USEC);
        /* high 0 (the kernel uses max(high, 1)): any usage is far over. */
        assert_int_equal(charge_high_delay_usec(1 * MiB, 0, 4096), MEM_HIGH_DELAY_MAX_USEC);
        /* Huge charge size on a small overage: capped too. */
        assert_int_equal(charge_high_delay_usec(105 * MiB, HIGH, MEM_CHARGE_MAX),
                         MEM_HIGH_DELAY_MAX_USEC);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_init_starts_empty_and_unlimited),
                cmocka_unit_test(test_try_charge_charges_every_level),
                cmocka_unit_test(test_try_charge_to_exactly_max_succeeds),
                cmocka_unit_test(test_try_charge_rolls_back_on_ancestor_limit),
                cmocka_unit_test(test_try_charge_refused_by_middle_leaves_top_untouched),
                cmocka_unit_test(test_try_charge_refused_by_first_level_charges_nothing),
                cmocka_unit_test(test_try_charge_with_stop_charges_only_below_stop),
                cmocka_unit_test(test_charge_ignores_max_and_reports_overage),
                cmocka_unit_test(test_zero_byte_charge_changes_nothing),
                cmocka_unit_test(test_oversized_charge_is_overflow_and_charges_nothing),
                cmocka_unit_test(test_charge_past_counter_max_is_overflow_and_unwinds),
                cmocka_unit_test(test_uncharge_beyond_usage_clamps_at_zero),
                cmocka_unit_test(test_set_max_below_usage_is_busy),
                cmocka_unit_test(test_set_max_force_below_usage_returns_one),
                cmocka_unit_test(test_watermark_tracks_peak_and_resets_to_usage),
                cmocka_unit_test(test_clamp_limit_round_trips_no_limit),
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
                cmocka_unit_test(test_high_delay_zero_at_or_below_high),
                cmocka_unit_test(test_high_delay_below_ten_ms_is_zero),
                cmocka_unit_test(test_high_delay_matches_kernel_table),
                cmocka_unit_test(test_high_delay_scales_with_charge_size),
                cmocka_unit_test(test_high_delay_huge_overage_is_capped),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
