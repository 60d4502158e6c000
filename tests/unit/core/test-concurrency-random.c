/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Random operations from several threads at once, each thread keeping its
 * own exact record of every charge that succeeded: the core has to agree
 * with the records to the byte.
 *
 * Phase 1 changes everything at once, the tree and the limits included;
 * phase 2 fixes both and stops the workers at a barrier every few hundred
 * operations, so that a checker can compare the core with the records while
 * nothing moves, and checks between barriers that usage passes max by no
 * more than the charges in flight. The operations are in random-ops.c.
 *
 * Worker threads never call cmocka: a broken invariant is recorded (CHECK)
 * and the main thread fails the test after joining them. Per-thread records
 * are read by other threads only across a join or a barrier, so they need
 * no atomics.
 */

#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "core-test.h"
#include "core.h"
#include "counter.h"
#include "group.h"
#include "random-ops.h"
#include "session.h"
#include "stats.h"

/* ---- the invariants ------------------------------------------------------ */

/*
 * Everything the records say must hold, checked while no worker runs (after
 * a join or inside the phase-2 barrier): usage and stats equal the sum of
 * the live charges in each subtree, kept bytes per item, no usage above
 * its max, nothing negative, and each client's exact RSS.
 */
static void verify_exact(Stress *st, const char *when) {
        int64_t local[NPOOL][_MEM_STAT_MAX] = {}, total[NPOOL][_MEM_STAT_MAX] = {};
        int64_t kept[NPOOL][_MEM_STAT_MAX] = {};
        MemGroup *groups[NPOOL];

        for (unsigned i = 0; i < NWORKERS; i++) {
                Worker *w = &st->w[i];

                for (int p = 0; p < NPOOL; p++)
                        for (int it = 0; it < _MEM_STAT_MAX; it++) {
                                kept[p][it] += w->kept[p][it];
                                local[p][it] += w->kept[p][it];
                        }
                for (int k = 0; k < NSESS; k++)
                        if (w->sess[k].path >= 0)
                                for (int it = 0; it < _MEM_STAT_MAX; it++)
                                        local[w->sess[k].path][it] += w->sess[k].held[it];
        }
        for (int p = 0; p < NPOOL; p++)
                for (int q = p; q >= 0; q = pool_parent[q])
                        for (int it = 0; it < _MEM_STAT_MAX; it++)
                                total[q][it] += local[p][it];

        for (int p = 0; p < NPOOL; p++) {
                MemGroupInfo info;
                int64_t sum = 0;

                for (int it = 0; it < _MEM_STAT_MAX; it++)
                        sum += total[p][it];
                groups[p] = find_group(st->core, pool[p]);
                if (!groups[p]) {
                        CHECK(sum == 0, "%s: %s is gone but %lld are charged in it", when,
                              pool[p], (long long) sum);
                        continue;
                }
                CHECK(counter_read(&groups[p]->counter) >= 0, "%s: %s usage negative", when,
                      pool[p]);
                group_read(st->core, groups[p], NULL, false, &info);
                CHECK(info.current == (uint64_t) sum, "%s: %s usage %llu, live charges %lld",
                      when, pool[p], (unsigned long long) info.current, (long long) sum);
                CHECK(info.max == UINT64_MAX || info.current <= info.max,
                      "%s: %s usage %llu above max %llu", when, pool[p],
                      (unsigned long long) info.current, (unsigned long long) info.max);
                for (int it = 0; it < _MEM_STAT_MAX; it++)
                        CHECK(info.kept[it] == (uint64_t) kept[p][it],
                              "%s: %s kept[%d] %llu, records %lld", when, pool[p], it,
                              (unsigned long long) info.kept[it], (long long) kept[p][it]);
        }

        core_stats_flush(st->core, true);
        for (int p = 0; p < NPOOL; p++) {
                MemGroupInfo info;

                if (!groups[p])
                        continue;
                group_read(st->core, groups[p], NULL, false, &info);
                for (int it = 0; it < _MEM_STAT_MAX; it++) {
                        CHECK(info.stat[it] == total[p][it],
                              "%s: %s stat[%s] %lld after a forced flush, live %lld", when,
                              pool[p], mem_stat_item_to_string(it), (long long) info.stat[it],
                              (long long) total[p][it]);
                        CHECK(info.stat_local[it] == local[p][it],
                              "%s: %s stat_local[%s] %lld, live %lld", when, pool[p],
                              mem_stat_item_to_string(it), (long long) info.stat_local[it],
                              (long long) local[p][it]);
                }
                group_unref(groups[p]);
        }

        for (unsigned i = 0; i < NWORKERS; i++) {
                Worker *w = &st->w[i];
                int64_t expect[_MEM_RSS_MAX] = {}, exact[_MEM_RSS_MAX], approx[_MEM_RSS_MAX];
                int64_t bound = atomic_load(&st->core->rss_threshold) * NSESS;
                int r;

                for (int k = 0; k < NSESS; k++)
                        for (MemStatItem it = 0; it < _MEM_STAT_MAX; it++)
                                if (mem_rss_from_stat(it) >= 0)
                                        expect[mem_rss_from_stat(it)] += w->sess[k].held[it];
                r = client_read_rss(st->core, w->pid, true, exact);
                CHECK(r == 0, "%s: client_read_rss(%d): %d", when, (int) w->pid, r);
                r = client_read_rss(st->core, w->pid, false, approx);
                CHECK(r == 0, "%s: client_read_rss(%d, approximate): %d", when, (int) w->pid, r);
                if (r < 0)
                        continue;
                for (int m = 0; m < _MEM_RSS_MAX; m++) {
                        CHECK(exact[m] == expect[m], "%s: pid %d rss %s %lld, held %lld", when,
                              (int) w->pid, mem_rss_to_string(m), (long long) exact[m],
                              (long long) expect[m]);
                        CHECK(approx[m] >= 0 && approx[m] - exact[m] <= bound &&
                                      exact[m] - approx[m] <= bound,
                              "%s: pid %d rss %s approximate %lld, exact %lld", when,
                              (int) w->pid, mem_rss_to_string(m), (long long) approx[m],
                              (long long) exact[m]);
                }
        }
}

/* ---- the phases ---------------------------------------------------------- */

static void *worker_main(void *arg) {
        Worker *w = arg;
        Stress *st = w->st;
        int r = core_thread_register(st->core);

        CHECK(r == 0, "core_thread_register: %d", r);
        w->banned = -1;
        if (st->phase == 1) {
                for (unsigned long n = 0; r == 0 && n < PHASE1_OPS; n++) {
                        if (n % 16 == 0) {
                                if (now_usec() >= st->deadline)
                                        break;
                                update_ban(w);
                        }
                        phase1_op(w);
                }
        } else {
                for (;;) {
                        for (unsigned n = 0; r == 0 && n < ROUND_OPS; n++)
                                phase2_op(w);
                        atomic_fetch_add(&st->arrived, 1);
                        pthread_barrier_wait(&st->barrier); /* the checker checks */
                        pthread_barrier_wait(&st->barrier);
                        if (atomic_load(&st->stop))
                                break;
                }
        }
        if (r == 0)
                core_thread_unregister(st->core);
        return NULL;
}

/* Between barriers: with limits fixed, usage may pass max only by the
 * speculative adds in flight. */
static void slack_check(Stress *st) {
        for (int p = 1; p < NPOOL; p++) {
                MemCounter *c = &st->fixed[p]->counter;
                int64_t usage = counter_read(c), max = counter_read_limit(&c->max);

                CHECK(usage >= 0, "%s usage %lld", pool[p], (long long) usage);
                CHECK(usage <= max + INFLIGHT_SLACK, "%s usage %lld, max %lld", pool[p],
                      (long long) usage, (long long) max);
        }
        st->slack_checks++;
}

static void *checker_main(void *arg) {
        Stress *st = arg;
        int r = core_thread_register(st->core);

        CHECK(r == 0, "core_thread_register: %d", r);
        for (;;) {
                while (atomic_load(&st->arrived) < NWORKERS) {
                        slack_check(st);
                        sched_yield();
                }
                pthread_barrier_wait(&st->barrier);
                atomic_store(&st->arrived, 0);
                if (r == 0)
                        verify_exact(st, "phase 2 barrier");
                st->rounds++;
                if (now_usec() >= st->deadline || st->rounds >= MAX_ROUNDS)
                        atomic_store(&st->stop, true);
                pthread_barrier_wait(&st->barrier);
                if (atomic_load(&st->stop))
                        break;
        }
        if (r == 0)
                core_thread_unregister(st->core);
        return NULL;
}

static void run_workers(Stress *st, int phase, uint64_t usec) {
        pthread_t checker;

        st->phase = phase;
        st->start = now_usec();
        st->deadline = st->start + usec;
        if (phase == 2) {
                assert_int_equal(pthread_barrier_init(&st->barrier, NULL, NWORKERS + 1), 0);
                atomic_store(&st->arrived, 0);
                atomic_store(&st->stop, false);
                assert_int_equal(pthread_create(&checker, NULL, checker_main, st), 0);
        }
        for (unsigned i = 0; i < NWORKERS; i++)
                assert_int_equal(pthread_create(&st->w[i].thread, NULL, worker_main, &st->w[i]),
                                 0);
        for (unsigned i = 0; i < NWORKERS; i++)
                assert_int_equal(pthread_join(st->w[i].thread, NULL), 0);
        if (phase == 2) {
                assert_int_equal(pthread_join(checker, NULL), 0);
                assert_int_equal(pthread_barrier_destroy(&st->barrier), 0);
        }
}

static void test_random_operations_keep_usage_equal_to_live_charges(void **state) {
        MemCore *core = *state;
        uint64_t seed = seed_base();
        unsigned long ops = 0, charged = 0, refused = 0, moved = 0, removed = 0, drained = 0;
        Stress *st = calloc(1, sizeof(*st));

        for (int p = 0; st && p < NPOOL; p++)
                pthread_rwlock_init(&st->kept_lock[p], NULL);

        assert_non_null(st);
        st->core = core;
        print_message("seed %llu (MEMACCT_TEST_SEED)\n", (unsigned long long) seed);
        for (int p = 1; p < NPOOL; p++)
                assert_int_equal(group_create(core, pool[p], 0), 0);
        for (unsigned i = 0; i < NWORKERS; i++) {
                Worker *w = &st->w[i];

                w->st = st;
                w->idx = i;
                w->pid = (pid_t) (2000 + i);
                w->banned = -1;
                w->rng = seed * (2 * i + 1) + 0x9E3779B97F4A7C15ULL;
                for (int k = 0; k < NSESS; k++) {
                        w->sess[k].path = -1;
                        assert_int_equal(session_new(core, w->pid, 1000, 1000, &w->sess[k].s),
                                         0);
                }
        }

        /* Phase 1: everything at once, the tree and limits included. */
        run_workers(st, 1, PHASE1_USEC);
        assert_no_failures();
        verify_exact(st, "after phase 1");
        assert_no_failures();

        /* Phase 2: fixed tree, fixed limits a little above usage. */
        for (int p = 0; p < NPOOL; p++) {
                st->fixed[p] = make_group(core, pool[p]);
                assert_non_null(st->fixed[p]);
                if (p == 0)
                        continue;
                assert_int_equal(group_set_max(st->fixed[p],
                                               read_usage(core, st->fixed[p]) + 65536 +
                                                       rnd(&st->w[0].rng) % (448 * 1024),
                                               false),
                                 0);
        }
        run_workers(st, 2, PHASE2_USEC);
        assert_no_failures();
        verify_exact(st, "after phase 2");
        assert_no_failures();

        for (unsigned i = 0; i < NWORKERS; i++) {
                Worker *w = &st->w[i];

                ops += w->ops;
                charged += w->charged;
                refused += w->refused;
                moved += w->moved;
                removed += w->removed;
                drained += w->drained;
        }
        print_message("%lu ops, %lu charges, %lu refusals, %lu moves, %lu drains, "
                      "%lu removals, %lu barrier checks, %lu slack checks\n",
                      ops, charged, refused, moved, drained, removed, st->rounds,
                      st->slack_checks);
        assert_true(charged > 0);
        assert_true(moved > 0);
        assert_true(st->rounds > 0);

        /* Release everything from the main thread: all back to zero. */
        for (unsigned i = 0; i < NWORKERS; i++) {
                Worker *w = &st->w[i];
                int64_t rss[_MEM_RSS_MAX];

                for (int k = 0; k < NSESS; k++) {
                        assert_null(session_free(w->sess[k].s));
                        w->sess[k] = (Sess) { .path = -1 };
                }
                for (int p = 0; p < NPOOL; p++)
                        for (int it = 0; it < _MEM_STAT_MAX; it++) {
                                if (w->kept[p][it] == 0)
                                        continue;
                                assert_int_equal(group_uncharge_kept(core, st->fixed[p],
                                                                     (uint64_t) w->kept[p][it],
                                                                     it),
                                                 0);
                                w->kept[p][it] = 0;
                        }
                assert_int_equal(client_read_rss(core, w->pid, true, rss), -ESRCH);
        }
        core_stats_flush(core, true);
        for (int p = 0; p < NPOOL; p++) {
                MemGroupInfo info;

                group_read(core, st->fixed[p], NULL, true, &info);
                assert_int_equal(info.current, 0);
                for (int it = 0; it < _MEM_STAT_MAX; it++) {
                        assert_int_equal(info.stat[it], 0);
                        assert_int_equal(info.stat_local[it], 0);
                        assert_int_equal(info.kept[it], 0);
                }
        }
        for (int p = NPOOL - 1; p > 0; p--)
                assert_int_equal(group_remove(core, pool[p]), 0);
        for (int p = 0; p < NPOOL; p++)
                group_unref(st->fixed[p]);
        assert_int_equal(core_group_count(core), 1);
        free(st);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                CORE_TEST(test_random_operations_keep_usage_equal_to_live_charges),
        };

        return cmocka_run_group_tests_name("core-concurrency-random", tests, NULL, NULL);
}
