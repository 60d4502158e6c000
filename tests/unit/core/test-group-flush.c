/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Flushes proportional to work (stats.c, core.c): a flush folds the groups
 * updated since the last one and their ancestors, and nothing else, yet
 * every total comes out exact: across threads, across a removal that
 * leaves a residue in the parent, across an id reused by a new group, and
 * when a thread noted more groups than its ring holds (a whole walk then).
 */

#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <cmocka.h>

#include "charge.h"
#include "core-test.h"
#include "core.h"
#include "group.h"
#include "stats.h"

static uint64_t folded(MemCore *core) {
        return atomic_load(&core->stats.folded);
}

/* The folds of one forced flush. */
static uint64_t flush_folds(MemCore *core) {
        uint64_t before = folded(core);

        core_stats_flush(core, true);
        return folded(core) - before;
}

static int64_t total_of(MemCore *core, const char *path, MemStatItem item) {
        MemGroup *g = take_group(core, path);
        MemGroupInfo info = read_info(core, g, false);

        group_unref(g);
        return info.stat[item];
}

/* /a/x0../a/x<n-1> and /b/y0../b/y<n-1>. */
static void make_forest(MemCore *core, unsigned n) {
        char path[32];

        group_unref(make_group(core, "/a"));
        group_unref(make_group(core, "/b"));
        for (unsigned i = 0; i < n; i++) {
                snprintf(path, sizeof(path), "/a/x%u", i);
                group_unref(make_group(core, path));
                snprintf(path, sizeof(path), "/b/y%u", i);
                group_unref(make_group(core, path));
        }
}

static void kept(MemCore *core, const char *path, int64_t bytes, MemStatItem item) {
        MemGroup *g = take_group(core, path);

        if (bytes >= 0)
                assert_int_equal(group_charge_kept(core, g, (uint64_t) bytes, item, 0, NULL), 0);
        else
                assert_int_equal(group_uncharge_kept(core, g, (uint64_t) -bytes, item), 0);
        group_unref(g);
}

static void test_flush_folds_the_updated_groups_and_their_ancestors(void **state) {
        MemCore *core = *state;

        make_forest(core, 100);
        (void) flush_folds(core);
        /* Nothing changed: nothing to fold. */
        assert_int_equal(flush_folds(core), 0);

        kept(core, "/a/x5", 8 * PAGE, MEM_STAT_ANON);
        kept(core, "/a/x9", PAGE, MEM_STAT_FILE);
        kept(core, "/b/y7", 2 * PAGE, MEM_STAT_ANON);
        /* x5, x9, /a, y7, /b and the root: 6 of 203. */
        assert_int_equal(flush_folds(core), 6);
        assert_int_equal(total_of(core, "/a/x5", MEM_STAT_ANON), 8 * PAGE);
        assert_int_equal(total_of(core, "/a", MEM_STAT_ANON), 8 * PAGE);
        assert_int_equal(total_of(core, "/a", MEM_STAT_FILE), PAGE);
        assert_int_equal(total_of(core, "/b", MEM_STAT_ANON), 2 * PAGE);
        assert_int_equal(total_of(core, "/", MEM_STAT_ANON), 10 * PAGE);
        assert_int_equal(total_of(core, "/a/x6", MEM_STAT_ANON), 0);
        assert_int_equal(flush_folds(core), 0);
        assert_int_equal(total_of(core, "/", MEM_STAT_ANON), 10 * PAGE);

        kept(core, "/a/x5", -8 * PAGE, MEM_STAT_ANON);
        kept(core, "/a/x9", -PAGE, MEM_STAT_FILE);
        kept(core, "/b/y7", -2 * PAGE, MEM_STAT_ANON);
        assert_int_equal(flush_folds(core), 6);
        assert_int_equal(total_of(core, "/", MEM_STAT_ANON), 0);
        assert_int_equal(total_of(core, "/", MEM_STAT_FILE), 0);
}

typedef struct Other {
        MemCore *core;
        const char *path;
        int r;
} Other;

/* A second registered thread charges @path: its own slots and ring. */
static void *other_main(void *arg) {
        Other *o = arg;
        MemGroup *g = find_group(o->core, o->path);

        o->r = core_thread_register(o->core);
        if (o->r == 0 && g)
                o->r = group_charge_kept(o->core, g, 3 * PAGE, MEM_STAT_SHMEM, 0, NULL);
        if (g)
                group_unref(g);
        if (o->r == 0)
                core_thread_unregister(o->core);
        return NULL;
}

static void test_flush_takes_every_thread_s_updates(void **state) {
        MemCore *core = *state;
        Other o = { .core = core, .path = "/b/y3" };
        pthread_t t;

        make_forest(core, 10);
        (void) flush_folds(core);
        kept(core, "/a/x1", PAGE, MEM_STAT_SHMEM);
        assert_int_equal(pthread_create(&t, NULL, other_main, &o), 0);
        assert_int_equal(pthread_join(t, NULL), 0);
        assert_int_equal(o.r, 0);
        /* x1, /a, y3, /b, root. */
        assert_int_equal(flush_folds(core), 5);
        assert_int_equal(total_of(core, "/", MEM_STAT_SHMEM), 4 * PAGE);
        assert_int_equal(total_of(core, "/b/y3", MEM_STAT_SHMEM), 3 * PAGE);
        kept(core, "/b/y3", -3 * PAGE, MEM_STAT_SHMEM);
        kept(core, "/a/x1", -PAGE, MEM_STAT_SHMEM);
        core_stats_flush(core, true);
        assert_int_equal(total_of(core, "/", MEM_STAT_SHMEM), 0);
}

static void test_flush_after_removal_and_id_reuse(void **state) {
        MemCore *core = *state;
        MemGroup *g;

        make_forest(core, 4);
        kept(core, "/a/x1", 16 * PAGE, MEM_STAT_DEVICE);
        core_stats_flush(core, true);
        assert_int_equal(total_of(core, "/a", MEM_STAT_DEVICE), 16 * PAGE);

        /* Unflushed: the uncharge sits in x1's slots when it goes; the
         * removal folds it into /a, which nothing updates afterwards. */
        kept(core, "/a/x1", -16 * PAGE, MEM_STAT_DEVICE);
        assert_int_equal(group_remove(core, "/a/x1"), 0);
        core_stats_flush(core, true);
        assert_int_equal(total_of(core, "/a", MEM_STAT_DEVICE), 0);
        assert_int_equal(total_of(core, "/", MEM_STAT_DEVICE), 0);

        /* Removal with the group's own charge still unflushed, then a new
         * group that takes the freed id, charged before any flush. */
        kept(core, "/a/x2", 2 * PAGE, MEM_STAT_DEVICE);
        assert_int_equal(group_remove(core, "/a/x2"), 0);
        g = make_group(core, "/a/new");
        assert_int_equal(group_charge_kept(core, g, 5 * PAGE, MEM_STAT_DEVICE, 0, NULL), 0);
        core_stats_flush(core, true);
        assert_int_equal(total_of(core, "/a/new", MEM_STAT_DEVICE), 5 * PAGE);
        assert_int_equal(read_info(core, g, false).stat_local[MEM_STAT_DEVICE], 5 * PAGE);
        assert_int_equal(total_of(core, "/a", MEM_STAT_DEVICE), 5 * PAGE);
        assert_int_equal(total_of(core, "/", MEM_STAT_DEVICE), 5 * PAGE);
        assert_int_equal(group_uncharge_kept(core, g, 5 * PAGE, MEM_STAT_DEVICE), 0);
        group_unref(g);
        core_stats_flush(core, true);
        assert_int_equal(total_of(core, "/", MEM_STAT_DEVICE), 0);
}

static void test_flush_past_a_full_ring_walks_every_group(void **state) {
        MemCore *core = *state;
        const unsigned n = MEM_STAT_RING / 2 + 50; /* 2n + 3 groups updated, above the ring */
        char path[32];

        make_forest(core, n);
        core_stats_flush(core, true);
        for (unsigned i = 0; i < n; i++) {
                snprintf(path, sizeof(path), "/a/x%u", i);
                kept(core, path, PAGE, MEM_STAT_OTHER);
                snprintf(path, sizeof(path), "/b/y%u", i);
                kept(core, path, 2 * PAGE, MEM_STAT_OTHER);
        }
        /* Every group, the idle ones too: the walk of the whole tree. */
        assert_int_equal(flush_folds(core), 2 * n + 3);
        assert_int_equal(total_of(core, "/a", MEM_STAT_OTHER), (int64_t) n * PAGE);
        assert_int_equal(total_of(core, "/b", MEM_STAT_OTHER), (int64_t) n * 2 * PAGE);
        assert_int_equal(total_of(core, "/b/y0", MEM_STAT_OTHER), 2 * PAGE);
        snprintf(path, sizeof(path), "/a/x%u", n - 1);
        assert_int_equal(total_of(core, path, MEM_STAT_OTHER), PAGE);

        /* The ring is empty again: the next flush is a small one. */
        kept(core, "/a/x0", -PAGE, MEM_STAT_OTHER);
        assert_int_equal(flush_folds(core), 3);
        assert_int_equal(total_of(core, "/", MEM_STAT_OTHER), (int64_t) (3 * n - 1) * PAGE);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                CORE_TEST(test_flush_folds_the_updated_groups_and_their_ancestors),
                CORE_TEST(test_flush_takes_every_thread_s_updates),
                CORE_TEST(test_flush_after_removal_and_id_reuse),
                CORE_TEST(test_flush_past_a_full_ring_walks_every_group),
        };

        return cmocka_run_group_tests_name("core-group-flush", tests, NULL, NULL);
}
