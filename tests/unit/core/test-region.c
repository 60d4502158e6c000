/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Device memory regions (region.h): the kernel dmem controller's regions
 * (kernel/cgroup/dmem.c) with memory's full set on every counter.
 *
 * What dmem does is the reference: a region has a capacity that bounds
 * the root; a cgroup's pool in it is created on first use with every
 * ancestor's (get_cg_pool_locked()); protection is computed recursively
 * (dmem_cgroup_calculate_protection() passes recursive_protection =
 * true); dmem_cgroup_state_evict_valuable() answers whose memory a pool
 * manager may take. Expected numbers are worked out in comments from
 * those functions and effective_protection() of mm/page_counter.c.
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
#include "region.h"
#include "session.h"

/* The info of @g in @key, read through group_read() as every interface does. */
static MemRegionInfo region_info(MemCore *core, MemGroup *g, const char *name) {
        MemGroupInfo info = read_info(core, g, false);
        MemRegionInfo none = { .max = UINT64_MAX, .high = UINT64_MAX };

        for (unsigned i = 0; i < info.nr_regions; i++)
                if (strcmp(info.regions[i].name, name) == 0)
                        return info.regions[i];
        return none;
}

static bool has_counters(MemGroup *g, int key) {
        return region_state(g, region_slot(key)) != NULL;
}

/* ---- names and the registry ---------------------------------------------- */

static void test_region_names_follow_the_grammar(void **state) {
        char long_name[MEM_REGION_NAME_MAX + 2];

        (void) state;
        assert_int_equal(mem_region_name_check("drm/0000:03:00.0/vram0"), 0);
        assert_int_equal(mem_region_name_check("nvidia/0000:3b:00.0/vidmem"), 0);
        assert_int_equal(mem_region_name_check("gpu0"), 0);
        assert_int_equal(mem_region_name_check("ttm+vram@1"), 0);
        /* The kernel's files put a space between name and value. */
        assert_int_equal(mem_region_name_check("gpu 0"), -EINVAL);
        assert_int_equal(mem_region_name_check("gpu\t0"), -EINVAL);
        assert_int_equal(mem_region_name_check("gpu=0"), -EINVAL);
        assert_int_equal(mem_region_name_check(""), -EINVAL);
        assert_int_equal(mem_region_name_check(NULL), -EINVAL);
        memset(long_name, 'a', sizeof(long_name) - 1);
        long_name[sizeof(long_name) - 1] = 0;
        assert_int_equal(mem_region_name_check(long_name), -ENAMETOOLONG);
        long_name[MEM_REGION_NAME_MAX] = 0;
        assert_int_equal(mem_region_name_check(long_name), 0);
}

static void test_region_add_lookup_list_remove(void **state) {
        MemCore *core = *state;
        MemRegionDesc list[MEM_REGION_MAX];
        char name[MEM_REGION_NAME_MAX + 1];
        int key, again;

        assert_int_equal(core_region_add(core, "memory", 1 * MiB), -EINVAL);
        assert_int_equal(core_region_add(core, "bad name", 1 * MiB), -EINVAL);
        key = core_region_add(core, "gpu0", 8 * MiB);
        assert_true(key > 0);
        /* The same region again is the same one; another capacity is not. */
        again = core_region_add(core, "gpu0", 8 * MiB);
        assert_int_equal(again, key);
        assert_int_equal(core_region_add(core, "gpu0", 16 * MiB), -EEXIST);
        assert_int_equal(core_region_lookup(core, "gpu0"), key);
        assert_int_equal(core_region_lookup(core, NULL), MEM_REGION_MEMORY);
        assert_int_equal(core_region_lookup(core, ""), MEM_REGION_MEMORY);
        assert_int_equal(core_region_lookup(core, "memory"), MEM_REGION_MEMORY);
        assert_int_equal(core_region_lookup(core, "gpu1"), -ENOENT);
        assert_int_equal(core_region_name(core, key, name), 0);
        assert_string_equal(name, "gpu0");

        assert_int_equal(core_region_list(core, list, MEM_REGION_MAX), 2);
        assert_string_equal(list[0].name, "memory");
        assert_string_equal(list[1].name, "gpu0");
        assert_int_equal(list[1].capacity, 8 * MiB);
        assert_int_equal(list[1].groups, 1); /* the root's counters bound it */

        assert_int_equal(core_region_remove(core, "memory"), -EINVAL);
        assert_int_equal(core_region_remove(core, "gpu1"), -ENOENT);
        assert_int_equal(core_region_remove(core, "gpu0"), 0);
        assert_int_equal(core_region_lookup(core, "gpu0"), -ENOENT);
        assert_int_equal(core_region_name(core, key, name), -ENOENT);
        /* Registered again in the same slot, it is another region: the
         * old key names nothing. */
        again = core_region_add(core, "gpu0", 8 * MiB);
        assert_true(again > 0);
        assert_int_not_equal(again, key);
        assert_int_equal(region_slot(again), region_slot(key));
        assert_int_equal(core_region_name(core, key, name), -ENOENT);
}

static void test_region_count_is_bounded(void **state) {
        MemCore *core = *state;
        char name[32];

        for (int i = 1; i < MEM_REGION_MAX; i++) {
                snprintf(name, sizeof(name), "r%d", i);
                assert_true(core_region_add(core, name, UINT64_MAX) > 0);
        }
        assert_int_equal(core_region_add(core, "one-too-many", UINT64_MAX), -ENOSPC);
        assert_int_equal(core_region_remove(core, "r7"), 0);
        assert_true(core_region_add(core, "one-too-many", UINT64_MAX) > 0);
}

/* ---- counters ------------------------------------------------------------ */

static void test_counters_are_created_on_first_use_with_ancestors(void **state) {
        MemCore *core = *state;
        MemGroup *a = make_group(core, "/a"), *b = make_group(core, "/a/b"), *c = make_group(core, "/c");
        int key = core_region_add(core, "gpu0", UINT64_MAX);
        MemGroupInfo info;

        /* A group that uses no region pays one pointer, still NULL. */
        assert_null(atomic_load(&a->regions));
        assert_null(atomic_load(&c->regions));
        info = read_info(core, b, false);
        assert_int_equal(info.nr_regions, 0);

        assert_int_equal(region_charge_kept(core, b, key, 4 * KiB, 0, NULL), 0);
        assert_true(has_counters(b, key));
        assert_true(has_counters(a, key));
        assert_true(has_counters(core->root, key));
        assert_null(atomic_load(&c->regions));
        assert_int_equal(region_info(core, a, "gpu0").current, 4 * KiB);
        assert_int_equal(region_info(core, b, "gpu0").kept, 4 * KiB);
        /* Memory is another counter. */
        assert_int_equal(read_info(core, b, false).current, 0);

        /* A limit creates them too, as a dmem.max write does. */
        assert_int_equal(region_set_limits(core, c, key,
                                           &(MemLimits) { .set = MEM_LIMIT_LOW, .low = 1 * MiB }, false),
                         0);
        assert_true(has_counters(c, key));
        /* The list counts them: the root, a, b and c. */
        {
                MemRegionDesc list[MEM_REGION_MAX];

                assert_int_equal(core_region_list(core, list, MEM_REGION_MAX), 2);
                assert_int_equal(list[1].groups, 4);
        }
        assert_int_equal(region_info(core, c, "gpu0").low, 1 * MiB);
        assert_int_equal(region_uncharge_kept_as(core, b, key, 4 * KiB, false), 0);
        group_unref(a);
        group_unref(b);
        group_unref(c);
}

static void test_capacity_bounds_the_root_only(void **state) {
        MemCore *core = *state;
        MemGroup *a = make_group(core, "/a");
        int key = core_region_add(core, "gpu0", 1 * MiB);
        MemChargeResult res;
        MemRegionInfo ir;

        assert_int_equal(region_charge_kept(core, a, key, 1 * MiB, 0, NULL), 0);
        assert_int_equal(region_charge_kept(core, a, key, PAGE, 0, &res), -EDQUOT);
        assert_ptr_equal(res.refused, core->root);
        charge_result_done(&res);
        ir = region_info(core, core->root, "gpu0");
        assert_int_equal(ir.capacity, 1 * MiB);
        assert_int_equal(ir.max, 1 * MiB);
        assert_int_equal(ir.failcnt, 1);
        assert_int_equal(ir.events_local[MEM_EVENT_MAX], 1);
        assert_int_equal(ir.events_local[MEM_EVENT_OOM], 1);
        /* Memory does not see the region's limits, nor its events. */
        assert_int_equal(group_charge_kept(core, a, 4 * MiB, MEM_STAT_ANON, 0, NULL), 0);
        assert_int_equal(read_info(core, core->root, false).events[MEM_EVENT_MAX], 0);
        /* The root's max is the capacity: not a limit to set. */
        assert_int_equal(region_set_limits(core, core->root, key,
                                           &(MemLimits) { .set = MEM_LIMIT_MAX, .max = 2 * MiB }, true),
                         -EINVAL);
        assert_int_equal(region_set_limits(core, core->root, key,
                                           &(MemLimits) { .set = MEM_LIMIT_HIGH, .high = MiB / 2 }, false),
                         0);
        assert_int_equal(region_uncharge_kept_as(core, a, key, 1 * MiB, false), 0);
        assert_int_equal(group_uncharge_kept(core, a, 4 * MiB, MEM_STAT_ANON), 0);
        group_unref(a);
}

static void test_region_limits_events_and_peak(void **state) {
        MemCore *core = *state;
        MemGroup *a = make_group(core, "/a"), *b = make_group(core, "/a/b");
        int key = core_region_add(core, "vram", UINT64_MAX);
        MemChargeResult res;
        MemRegionInfo ia, ib;

        assert_int_equal(region_set_limits(core, a, key,
                                           &(MemLimits) { .set = MEM_LIMIT_MAX | MEM_LIMIT_HIGH,
                                                          .max = 8 * MiB, .high = 4 * MiB },
                                           false),
                         0);
        assert_int_equal(region_charge_kept(core, b, key, 6 * MiB, 0, &res), 0);
        /* Above a's high: a high event there, and the throttle hint of
         * calculate_high_delay(). */
        assert_int_equal(res.over_high, 2 * MiB);
        assert_int_equal(res.throttle_usec, charge_high_delay_usec(6 * MiB, 4 * MiB, 6 * MiB));
        charge_result_done(&res);
        assert_int_equal(region_charge_kept(core, b, key, 4 * MiB, 0, &res), -EDQUOT);
        assert_ptr_equal(res.refused, a);
        charge_result_done(&res);
        ia = region_info(core, a, "vram");
        ib = region_info(core, b, "vram");
        assert_int_equal(ia.events_local[MEM_EVENT_HIGH], 1);
        assert_int_equal(ia.events_local[MEM_EVENT_MAX], 1);
        assert_int_equal(ia.events_local[MEM_EVENT_OOM], 1);
        assert_int_equal(ib.events_local[MEM_EVENT_MAX], 0);
        assert_int_equal(region_info(core, core->root, "vram").events[MEM_EVENT_MAX], 1);
        assert_int_equal(ia.peak, 6 * MiB);

        /* A max below usage is taken, as a dmem.max write, and says oom. */
        assert_int_equal(region_set_limits(core, a, key, &(MemLimits) { .set = MEM_LIMIT_MAX, .max = 2 * MiB },
                                           true),
                         1);
        assert_int_equal(region_info(core, a, "vram").max, 2 * MiB);
        assert_int_equal(region_info(core, a, "vram").events_local[MEM_EVENT_OOM], 2);
        assert_int_equal(region_charge_kept(core, b, key, PAGE, 0, NULL), -EDQUOT);

        /* The peak restarts from usage. */
        assert_int_equal(region_uncharge_kept_as(core, b, key, 5 * MiB, false), 0);
        assert_int_equal(region_reset_peak(core, a, key), 0);
        assert_int_equal(region_info(core, a, "vram").peak, 1 * MiB);
        assert_int_equal(region_uncharge_kept_as(core, b, key, 2 * MiB, false), -ERANGE);
        assert_int_equal(region_uncharge_kept_as(core, b, key, 1 * MiB, false), 0);
        group_unref(a);
        group_unref(b);
}

static void test_removal_releases_kept_and_waits_for_charges(void **state) {
        MemCore *core = *state;
        MemGroup *a = make_group(core, "/a");
        int key = core_region_add(core, "gpu0", UINT64_MAX);

        assert_int_equal(region_charge_kept(core, a, key, 3 * MiB, 0, NULL), 0);
        /* A region with something charged stays. */
        assert_int_equal(core_region_remove(core, "gpu0"), -EBUSY);
        assert_int_equal(core_region_lookup(core, "gpu0"), key);
        /* A removed group's kept charges go with it (group_remove()). */
        assert_int_equal(group_remove(core, "/a"), 0);
        assert_int_equal(region_info(core, core->root, "gpu0").current, 0);
        {
                MemRegionDesc list[MEM_REGION_MAX];

                /* Its counters went with it: the root's are left. */
                assert_int_equal(core_region_list(core, list, MEM_REGION_MAX), 2);
                assert_int_equal(list[1].groups, 1);
        }
        /* A reference outlives the removal: a read through it finds no
         * counters, which the region's removal below could free. */
        assert_int_equal(read_info(core, a, false).nr_regions, 0);
        assert_int_equal(core_region_remove(core, "gpu0"), 0);
        assert_false(has_counters(core->root, key));
        /* Charges with the stale key are refused; nothing is created. */
        assert_int_equal(region_charge_kept(core, core->root, key, PAGE, 0, NULL), -ENOENT);
        group_unref(a);
}

/* ---- sessions and moves -------------------------------------------------- */

static void test_session_region_charges_move_and_end(void **state) {
        MemCore *core = *state;
        MemGroup *a = make_group(core, "/a"), *b = make_group(core, "/b");
        int key = core_region_add(core, "gpu0", UINT64_MAX);
        MemChargeResult res;
        MemSession *s;

        assert_int_equal(session_new(core, 4242, 1000, 1000, &s), 0);
        assert_int_equal(session_attach(s, a), 0);
        assert_int_equal(session_charge_region(s, key, 2 * MiB, 0, NULL), 0);
        assert_int_equal(session_charge(s, 1 * MiB, MEM_STAT_ANON, 0, NULL), 0);
        assert_int_equal(session_held_region(s, key), 2 * MiB);
        assert_int_equal(session_uncharge_region(s, key, 4 * MiB), -ERANGE);
        assert_int_equal(session_charge_region(s, MEM_REGION_MEMORY, PAGE, 0, NULL), -EINVAL);

        /* A move that b's region max refuses moves nothing, memory neither. */
        assert_int_equal(region_set_limits(core, b, key, &(MemLimits) { .set = MEM_LIMIT_MAX, .max = 1 * MiB },
                                           false),
                         0);
        assert_int_equal(session_move(s, b, &res), -EDQUOT);
        assert_ptr_equal(res.refused, b);
        charge_result_done(&res);
        assert_int_equal(region_info(core, a, "gpu0").current, 2 * MiB);
        assert_int_equal(region_info(core, b, "gpu0").current, 0);
        assert_int_equal(usage_of(a), 1 * MiB);
        assert_int_equal(usage_of(b), 0);

        /* Room made: both counters move. */
        assert_int_equal(region_set_limits(core, b, key, &(MemLimits) { .set = MEM_LIMIT_MAX, .max = 4 * MiB },
                                           false),
                         0);
        assert_int_equal(session_move(s, b, NULL), 0);
        assert_int_equal(region_info(core, a, "gpu0").current, 0);
        assert_int_equal(region_info(core, b, "gpu0").current, 2 * MiB);
        assert_int_equal(usage_of(b), 1 * MiB);
        assert_int_equal(region_info(core, core->root, "gpu0").current, 2 * MiB);

        /* The session ends: everything it held goes, in every region. */
        session_free(s);
        assert_int_equal(region_info(core, b, "gpu0").current, 0);
        assert_int_equal(region_info(core, core->root, "gpu0").current, 0);
        assert_int_equal(usage_of(core->root), 0);
        assert_int_equal(core_region_remove(core, "gpu0"), 0);
        group_unref(a);
        group_unref(b);
}

/* ---- protection and the eviction question -------------------------------- */

/*
 * The tree of the eviction cases, all in one region:
 *
 *   /A                   (nothing set)
 *   /A/B    min 20M low 80M
 *   /A/B/C  10M charged
 *   /A/B/D  min 30M, 50M charged
 *   /A/F    min 100M, 5M charged
 *   /E      5M charged (outside A)
 *   /G      nothing in the region
 *
 * Usage: C 10, D 50, B 60, F 5, A 65, E 5, G none.
 */
typedef struct EvictCase {
        const char *limit; /* NULL: no limiting group (the root is used) */
        const char *test;
        bool ignore_low;
        int expected;
} EvictCase;

static void test_evict_valuable_follows_dmem(void **state) {
        MemCore *core = *state;
        int key = core_region_add(core, "vram", UINT64_MAX);
        const char *paths[] = { "/A", "/A/B", "/A/B/C", "/A/B/D", "/A/F", "/E", "/G" };
        const EvictCase cases[] = {
                /* The limiting group itself: always. */
                { "/A", "/A", false, MEM_EVICT_YES },
                /* The root limits: always (!parent_dmemcs()). */
                { "/", "/A/B/D", false, MEM_EVICT_YES },
                /* Outside the limiting group's subtree: never. */
                { "/A", "/E", false, MEM_EVICT_NO },
                { "/A/B", "/A", false, MEM_EVICT_NO },
                /* B is a child of the limit: its own settings, emin 20M,
                 * elow 80M; 60M used <= 80M: only low protects it. */
                { "/A", "/A/B", false, MEM_EVICT_HIT_LOW },
                { "/A", "/A/B", true, MEM_EVICT_YES },
                /* F: emin = its min 100M >= 5M used: never. */
                { "/A", "/A/F", false, MEM_EVICT_NO },
                { "/A", "/A/F", true, MEM_EVICT_NO },
                /* D: min 30M of B's 20M, shared with C's 0 (B's children
                 * protect 30M > 20M): emin = 30 * 20 / 30 = 20M < 50M.
                 * elow, recursively: D sets no low, so it gets B's
                 * unclaimed 80M in proportion to its unprotected usage,
                 * 80 * 50 / 60 = 66.7M >= 50M: hit_low. (Without
                 * recursive protection it would be 0: yes.) */
                { "/A", "/A/B/D", false, MEM_EVICT_HIT_LOW },
                { "/A", "/A/B/D", true, MEM_EVICT_YES },
                /* C: emin 0 (30M claimed against 20M), elow 80 * 10 / 60 =
                 * 13.3M >= 10M: hit_low. */
                { "/A", "/A/B/C", false, MEM_EVICT_HIT_LOW },
                /* Limited at B, C and D are B's children: their own
                 * settings. C sets none: 10M > 0: yes; D: min 30M < 50M,
                 * low 0: yes. */
                { "/A/B", "/A/B/C", false, MEM_EVICT_YES },
                { "/A/B", "/A/B/D", false, MEM_EVICT_YES },
                /* No limiting group: the root's view. A sets nothing, so B
                 * (its 20M min claimed against A's 0) is unprotected. */
                { NULL, "/A/B", false, MEM_EVICT_YES },
                /* Nothing charged in the region: nothing to take. */
                { "/", "/G", false, MEM_EVICT_YES },
                { NULL, "/G", false, MEM_EVICT_NO },
        };
        MemGroup *g[ELEMENTSOF(paths)];

        for (size_t i = 0; i < ELEMENTSOF(paths); i++)
                g[i] = make_group(core, paths[i]);
        assert_int_equal(region_set_limits(core, g[1], key,
                                           &(MemLimits) { .set = MEM_LIMIT_MIN | MEM_LIMIT_LOW, .min = 20 * MiB,
                                                          .low = 80 * MiB },
                                           false),
                         0);
        assert_int_equal(region_set_limits(core, g[3], key,
                                           &(MemLimits) { .set = MEM_LIMIT_MIN, .min = 30 * MiB }, false),
                         0);
        assert_int_equal(region_set_limits(core, g[4], key,
                                           &(MemLimits) { .set = MEM_LIMIT_MIN, .min = 100 * MiB }, false),
                         0);
        assert_int_equal(region_charge_kept(core, g[2], key, 10 * MiB, 0, NULL), 0);
        assert_int_equal(region_charge_kept(core, g[3], key, 50 * MiB, 0, NULL), 0);
        assert_int_equal(region_charge_kept(core, g[4], key, 5 * MiB, 0, NULL), 0);
        assert_int_equal(region_charge_kept(core, g[5], key, 5 * MiB, 0, NULL), 0);

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                _cleanup_(group_unrefp) MemGroup *limit = NULL, *test = take_group(core, cases[i].test);
                int r;

                if (cases[i].limit)
                        limit = take_group(core, cases[i].limit);
                r = region_evict_valuable(core, limit, test, key, cases[i].ignore_low);
                if (r != cases[i].expected)
                        fail_msg("case %zu (limit %s, test %s%s): %d, expected %d", i,
                                 cases[i].limit ? cases[i].limit : "none", cases[i].test,
                                 cases[i].ignore_low ? ", ignore_low" : "", r, cases[i].expected);
        }

        /* The same protection in what a read reports (relative to the
         * root: A's children see A's zero protection). */
        assert_int_equal(region_info(core, g[4], "vram").effective_min, 0);
        assert_int_equal(region_evict_valuable(core, NULL, g[0], key + MEM_REGION_MAX, false), -ENOENT);
        for (size_t i = 0; i < ELEMENTSOF(paths); i++)
                group_unref(g[i]);
}

/* ---- events reach the hook with their region ------------------------------ */

static int hook_region = -100;
static MemEvent hook_event;

static void record_hook(MemGroup *g, int region, MemEvent ev, uint64_t local, void *userdata) {
        (void) g;
        (void) local;
        (void) userdata;
        hook_region = region;
        hook_event = ev;
}

static void test_events_carry_their_region(void **state) {
        MemCore *core = *state;
        MemGroup *a = make_group(core, "/a");
        int key = core_region_add(core, "gpu0", 1 * MiB);

        core_set_event_hook(core, record_hook, NULL);
        assert_int_equal(region_charge_kept(core, a, key, 2 * MiB, MEM_CHARGE_NO_OOM, NULL), -EDQUOT);
        assert_int_equal(hook_region, key);
        assert_int_equal(hook_event, MEM_EVENT_MAX);
        assert_int_equal(group_set_max(a, 0, true), 0);
        assert_int_equal(group_charge_kept(core, a, PAGE, MEM_STAT_ANON, MEM_CHARGE_NO_OOM, NULL), -EDQUOT);
        assert_int_equal(hook_region, MEM_REGION_MEMORY);
        core_set_event_hook(core, NULL, NULL);
        group_unref(a);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_region_names_follow_the_grammar),
                CORE_TEST(test_region_add_lookup_list_remove),
                CORE_TEST(test_region_count_is_bounded),
                CORE_TEST(test_counters_are_created_on_first_use_with_ancestors),
                CORE_TEST(test_capacity_bounds_the_root_only),
                CORE_TEST(test_region_limits_events_and_peak),
                CORE_TEST(test_removal_releases_kept_and_waits_for_charges),
                CORE_TEST(test_session_region_charges_move_and_end),
                CORE_TEST(test_evict_valuable_follows_dmem),
                CORE_TEST(test_events_carry_their_region),
        };

        return cmocka_run_group_tests_name("core-region", tests, NULL, NULL);
}
