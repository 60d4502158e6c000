/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Sparse flushes racing the updates they fold (stats.c, "Flushes
 * proportional to work" in docs/kernel.md).
 *
 * Two updaters charge and uncharge kept bytes of one item on random groups
 * of a two-level tree, more groups than a ring holds, so that some flushes
 * are sparse and some walk everything; a third thread forces flushes all
 * the while. Once the updaters are joined, one more flush must show, in
 * every group, a total equal to the group's usage: an update that raced a
 * flush and was neither folded by it nor noted for the next one would
 * leave some group short.
 *
 * Worker threads never call cmocka: they CHECK, and the main thread fails
 * the test after joining them.
 */

#include <pthread.h>
#include <sched.h>
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

#define TOPS 50
#define LEAVES 110 /* per top: 5,551 groups with the root, above MEM_STAT_RING */
#define NUPDATERS 2
#define RUN_USEC 1500000

typedef struct FlushTest {
        MemCore *core;
        MemGroup *groups[TOPS * (LEAVES + 1)];
        unsigned ngroups;
        uint64_t seed;
        _Atomic unsigned running;
        _Atomic unsigned long flushes;
} FlushTest;

typedef struct Updater {
        pthread_t thread;
        FlushTest *t;
        unsigned idx;
        int64_t held[TOPS * (LEAVES + 1)]; /* kept bytes of this thread, per group */
} Updater;

static void *updater_main(void *arg) {
        Updater *u = arg;
        FlushTest *t = u->t;
        uint64_t seed = t->seed + u->idx, deadline = now_usec() + RUN_USEC;
        int r = core_thread_register(t->core);

        CHECK(r == 0, "core_thread_register: %d", r);
        for (unsigned long i = 0; r == 0; i++) {
                uint64_t x = rnd(&seed);
                /* Mostly a few hot groups (sparse flushes), sometimes any. */
                unsigned k = (unsigned) (x % 8 == 0 ? (x >> 8) % t->ngroups : (x >> 8) % 64);
                uint64_t bytes = PAGE * (1 + (x >> 40) % 3);

                if (i % 256 == 0 && now_usec() >= deadline)
                        break;
                if (u->held[k] >= (int64_t) bytes && (x >> 20) % 2) {
                        r = group_uncharge_kept(t->core, t->groups[k], bytes, MEM_STAT_ANON);
                        CHECK(r == 0, "group_uncharge_kept: %d", r);
                        u->held[k] -= (int64_t) bytes;
                } else {
                        r = group_charge_kept(t->core, t->groups[k], bytes, MEM_STAT_ANON, 0, NULL);
                        CHECK(r == 0, "group_charge_kept: %d", r);
                        u->held[k] += (int64_t) bytes;
                }
        }
        atomic_fetch_sub(&t->running, 1);
        if (r == 0)
                core_thread_unregister(t->core);
        return NULL;
}

static void *flusher_main(void *arg) {
        FlushTest *t = arg;
        int r = core_thread_register(t->core);

        CHECK(r == 0, "core_thread_register: %d", r);
        while (r == 0 && atomic_load(&t->running) > 0) {
                core_stats_flush(t->core, true);
                atomic_fetch_add(&t->flushes, 1);
                sched_yield();
        }
        if (r == 0)
                core_thread_unregister(t->core);
        return NULL;
}

static void test_sparse_flushes_racing_updates_lose_nothing(void **state) {
        static Updater u[NUPDATERS];
        static FlushTest t;
        MemCore *core = *state;
        MemGroup *root;
        pthread_t flusher;
        char path[32];
        uint64_t folds;

        t = (FlushTest) { .core = core, .seed = seed_base() };
        print_message("seed %llu\n", (unsigned long long) t.seed);
        for (unsigned i = 0; i < TOPS; i++) {
                snprintf(path, sizeof(path), "/t%u", i);
                t.groups[t.ngroups++] = make_group(core, path);
                for (unsigned j = 0; j < LEAVES; j++) {
                        snprintf(path, sizeof(path), "/t%u/l%u", i, j);
                        t.groups[t.ngroups++] = make_group(core, path);
                }
        }
        core_stats_flush(core, true);
        folds = atomic_load(&core->stats.folded);

        atomic_store(&t.running, NUPDATERS);
        for (unsigned i = 0; i < NUPDATERS; i++) {
                u[i] = (Updater) { .t = &t, .idx = i };
                assert_int_equal(pthread_create(&u[i].thread, NULL, updater_main, &u[i]), 0);
        }
        assert_int_equal(pthread_create(&flusher, NULL, flusher_main, &t), 0);
        for (unsigned i = 0; i < NUPDATERS; i++)
                assert_int_equal(pthread_join(u[i].thread, NULL), 0);
        assert_int_equal(pthread_join(flusher, NULL), 0);
        assert_no_failures();
        print_message("%lu flushes folded %llu groups (%u groups)\n", atomic_load(&t.flushes),
                      (unsigned long long) (atomic_load(&core->stats.folded) - folds), t.ngroups);
        assert_true(atomic_load(&t.flushes) > 0);

        core_stats_flush(core, true);
        for (unsigned k = 0; k < t.ngroups; k++) {
                MemGroupInfo info = read_info(core, t.groups[k], false);
                int64_t mine = u[0].held[k] + u[1].held[k];

                assert_int_equal(info.stat_local[MEM_STAT_ANON], mine);
                assert_int_equal(info.stat[MEM_STAT_ANON], (int64_t) info.current);
        }
        for (unsigned k = 0; k < t.ngroups; k++) {
                int64_t mine = u[0].held[k] + u[1].held[k];

                if (mine > 0)
                        assert_int_equal(group_uncharge_kept(core, t.groups[k], (uint64_t) mine, MEM_STAT_ANON), 0);
                group_unref(t.groups[k]);
        }
        core_stats_flush(core, true);
        root = take_group(core, "/");
        assert_int_equal(read_info(core, root, false).stat[MEM_STAT_ANON], 0);
        group_unref(root);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                CORE_TEST(test_sparse_flushes_racing_updates_lose_nothing),
        };

        return cmocka_run_group_tests_name("core-concurrency-flush", tests, NULL, NULL);
}
