/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Batched statistics updated from several threads (stats.h).
 *
 * Each thread batches its updates and folds them in on a flush: while the
 * updaters run, non-forced flushes show totals that only move one way and
 * stay within what was charged; once they stop, a flush nobody forces must
 * come within the flush threshold and show every update, and so must a
 * forced one.
 *
 * Worker threads never call cmocka: they CHECK, and the main thread fails
 * the test after joining them.
 */

#include <pthread.h>
#include <sched.h>
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
#include "stats.h"

/* ---- batched statistics from several threads ------------------------------ */

#define NUPDATERS 4
#define STAT_ITERS 400000 /* per thread, per run */
#define STAT_USEC 500000

typedef struct StatTest {
        MemCore *core;
        MemGroup *g;
        bool uncharge;
        uint64_t deadline;
        _Atomic unsigned running;
        int64_t bound[_MEM_STAT_MAX]; /* planned final totals of the charging run */
        unsigned long flusher_reads;
} StatTest;

typedef struct Updater {
        pthread_t thread;
        StatTest *t;
        unsigned idx;
        int64_t done[_MEM_STAT_MAX]; /* bytes kept by this thread, by item */
} Updater;

static uint64_t stat_bytes(unsigned idx, unsigned long i) {
        return PAGE * (1 + (i + idx) % 4) - (i % 7);
}

static void *updater_main(void *arg) {
        Updater *u = arg;
        StatTest *t = u->t;
        int r = core_thread_register(t->core);

        CHECK(r == 0, "core_thread_register: %d", r);
        for (unsigned long i = 0; r == 0 && i < STAT_ITERS; i++) {
                unsigned it = (u->idx + (unsigned) i) % _MEM_STAT_MAX;
                uint64_t bytes = stat_bytes(u->idx, i);
                int k;

                if (i % 256 == 0) {
                        if (now_usec() >= t->deadline)
                                break;
                        /* Two CPUs, six threads: let the flusher in. */
                        if (i % 4096 == 0)
                                sched_yield();
                }
                if (!t->uncharge) {
                        k = group_charge_kept(t->core, t->g, bytes, it, 0, NULL);
                        CHECK(k == 0, "group_charge_kept: %d", k);
                        if (k == 0)
                                u->done[it] += (int64_t) bytes;
                } else {
                        if (u->done[it] == 0)
                                continue;
                        bytes = MIN(bytes, (uint64_t) u->done[it]);
                        k = group_uncharge_kept(t->core, t->g, bytes, it);
                        CHECK(k == 0, "group_uncharge_kept: %d", k);
                        if (k == 0)
                                u->done[it] -= (int64_t) bytes;
                }
        }
        /* The uncharging run releases whatever is left. */
        for (int it = 0; r == 0 && t->uncharge && it < _MEM_STAT_MAX; it++) {
                if (u->done[it] == 0)
                        continue;
                CHECK(group_uncharge_kept(t->core, t->g, (uint64_t) u->done[it], it) == 0,
                      "group_uncharge_kept(rest)");
                u->done[it] = 0;
        }
        atomic_fetch_sub(&t->running, 1);
        if (r == 0)
                core_thread_unregister(t->core);
        return NULL;
}

/* Only non-forced flushes while the updaters run: totals move one way and
 * stay within what was (or will be) charged. */
static void *flusher_main(void *arg) {
        StatTest *t = arg;
        int64_t last[_MEM_STAT_MAX];
        int r = core_thread_register(t->core);
        MemGroupInfo info;

        CHECK(r == 0, "core_thread_register: %d", r);
        group_read(t->core, t->g, NULL, false, &info);
        memcpy(last, info.stat, sizeof(last));
        while (r == 0 && atomic_load(&t->running) > 0) {
                core_stats_flush(t->core, false);
                group_read(t->core, t->g, NULL, false, &info);
                for (int it = 0; it < _MEM_STAT_MAX; it++) {
                        int64_t v = info.stat[it];

                        CHECK(v >= 0 && v <= t->bound[it], "stat[%d] %lld outside [0, %lld]", it,
                              (long long) v, (long long) t->bound[it]);
                        CHECK(t->uncharge ? v <= last[it] : v >= last[it],
                              "stat[%d] went from %lld to %lld while %scharging", it,
                              (long long) last[it], (long long) v, t->uncharge ? "un" : "");
                        last[it] = v;
                }
                t->flusher_reads++;
        }
        if (r == 0)
                core_thread_unregister(t->core);
        return NULL;
}

static void run_updaters(StatTest *t, Updater *u) {
        pthread_t flusher;

        t->deadline = now_usec() + STAT_USEC;
        atomic_store(&t->running, NUPDATERS);
        assert_int_equal(pthread_create(&flusher, NULL, flusher_main, t), 0);
        for (unsigned i = 0; i < NUPDATERS; i++)
                assert_int_equal(pthread_create(&u[i].thread, NULL, updater_main, &u[i]), 0);
        for (unsigned i = 0; i < NUPDATERS; i++)
                assert_int_equal(pthread_join(u[i].thread, NULL), 0);
        assert_int_equal(pthread_join(flusher, NULL), 0);
        assert_no_failures();
}

static void assert_stats_equal(StatTest *t, MemGroup *root, const int64_t *expect) {
        MemGroupInfo info, rinfo;
        int64_t sum = 0;

        group_read(t->core, t->g, NULL, false, &info);
        group_read(t->core, root, NULL, false, &rinfo);
        for (int it = 0; it < _MEM_STAT_MAX; it++) {
                assert_int_equal(info.stat[it], expect[it]);
                assert_int_equal(info.stat_local[it], expect[it]);
                assert_int_equal(rinfo.stat[it], expect[it]);
                assert_int_equal(rinfo.stat_local[it], 0);
                assert_int_equal(info.kept[it], expect[it]);
                sum += expect[it];
        }
        assert_int_equal(info.current, sum);
}

/*
 * Nobody forces a flush: keep updating (net zero) from this thread until a
 * non-forced flush runs, which must happen within the threshold of fast
 * path 2 in stats.c, and must then show every update made so far by every
 * thread.
 */
static void assert_unforced_flush_catches_up(StatTest *t, MemGroup *root,
                                             const int64_t *expect) {
        MemCoreConfig cfg = MEM_CORE_CONFIG_DEFAULT;
        unsigned long limit = (cfg.max_threads + 2ul) * (MEM_STAT_BATCH + 1);
        unsigned long i;

        for (i = 0; i < limit; i++) {
                uint64_t before = atomic_load(&t->core->stats.flushes);

                core_stats_flush(t->core, false);
                if (atomic_load(&t->core->stats.flushes) != before)
                        break;
                assert_int_equal(group_charge_kept(t->core, t->g, PAGE, MEM_STAT_OTHER, 0, NULL),
                                 0);
                assert_int_equal(group_uncharge_kept(t->core, t->g, PAGE, MEM_STAT_OTHER), 0);
        }
        assert_true(i < limit);
        assert_stats_equal(t, root, expect);
}

static void test_stats_from_concurrent_updaters_flush_to_exact_totals(void **state) {
        MemCore *core = *state;
        StatTest t = { .core = core };
        Updater u[NUPDATERS];
        int64_t expect[_MEM_STAT_MAX] = {}, zero[_MEM_STAT_MAX] = {};
        MemGroup *root;

        t.g = make_group(core, "/s");
        root = find_group(core, "/");
        assert_non_null(t.g);
        assert_non_null(root);
        for (unsigned i = 0; i < NUPDATERS; i++) {
                u[i] = (Updater) { .t = &t, .idx = i };
                for (unsigned long k = 0; k < STAT_ITERS; k++)
                        t.bound[(i + k) % _MEM_STAT_MAX] += (int64_t) stat_bytes(i, k);
        }

        /* Charging run. */
        run_updaters(&t, u);
        for (unsigned i = 0; i < NUPDATERS; i++)
                for (int it = 0; it < _MEM_STAT_MAX; it++)
                        expect[it] += u[i].done[it];
        print_message("%lu flusher reads, %llu non-forced flushes (pressure %d, threads %u)\n",
                      t.flusher_reads,
                      (unsigned long long) atomic_load(&core->stats.flushes),
                      atomic_load(&core->stats.flush_pressure),
                      atomic_load(&core->stats.nthreads));
        assert_true(atomic_load(&core->stats.flushes) > 0);
        assert_unforced_flush_catches_up(&t, root, expect);
        core_stats_flush(core, true);
        assert_stats_equal(&t, root, expect);
        for (int it = 0; it < _MEM_STAT_MAX; it++)
                t.bound[it] = expect[it];

        /* Uncharging run: the same threads give everything back. */
        t.uncharge = true;
        t.flusher_reads = 0;
        run_updaters(&t, u);
        for (unsigned i = 0; i < NUPDATERS; i++)
                for (int it = 0; it < _MEM_STAT_MAX; it++)
                        assert_int_equal(u[i].done[it], 0);
        assert_unforced_flush_catches_up(&t, root, zero);
        core_stats_flush(core, true);
        assert_stats_equal(&t, root, zero);

        assert_int_equal(group_remove(core, "/s"), 0);
        group_unref(t.g);
        group_unref(root);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                CORE_TEST(test_stats_from_concurrent_updaters_flush_to_exact_totals),
        };

        return cmocka_run_group_tests_name("core-concurrency-stats", tests, NULL, NULL);
}
