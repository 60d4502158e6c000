/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Per-item statistics of groups (stats.h): every charge carries an item,
 * which counts on the group itself (stat_local) and on the group and its
 * ancestors (stat), so a group's items sum to its usage. Updates are
 * batched per thread and folded in by a flush: an exact read flushes, an
 * ordinary one only once enough updates are pending.
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

/* ---- statistics ---------------------------------------------------------- */

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

static void test_stat_item_and_event_names_round_trip(void **state) {
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

int main(void) {
        const struct CMUnitTest tests[] = {
                CORE_TEST(test_stats_go_to_their_item_hierarchically),
                CORE_TEST(test_stats_exact_read_flushes_pending_updates),
                CORE_TEST(test_stat_item_and_event_names_round_trip),
        };

        return cmocka_run_group_tests_name("core-group-stats", tests, NULL, NULL);
}
