/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The core's charge stock (stock.h): the kernel's memcg_stock per
 * registered thread. As try_charge_memcg(): a charge the stock covers
 * touches no counter; one it does not charges MEMCG_CHARGE_BATCH (here
 * 64 pages) and stocks the surplus, and a charge larger than a batch is
 * charged exactly; current includes stocked bytes, as memory.current
 * includes stocked pages. A refusal drains every stock under the refusing
 * counter and tries once more (drain_all_stock()); a limit change, a
 * removal and a thread's end give back what concerns them.
 */

#include <errno.h>
#include <pthread.h>
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
#include "region.h"
#include "session.h"
#include "stock.h"

#define BATCH ((uint64_t) MEM_STOCK_BATCH)

static int setup_stock(void **state) {
        MemCoreConfig c = MEM_CORE_CONFIG_DEFAULT;

        c.charge_stock = true;
        return setup_core_with(state, c);
}

#define STOCK_TEST(f) cmocka_unit_test_setup_teardown(f, setup_stock, teardown_core)

static void test_charges_come_from_the_stock(void **state) {
        MemCore *core = *state;
        MemGroup *a = make_group(core, "/a"), *b = make_group(core, "/a/b");
        MemSession *s;

        assert_int_equal(session_new(core, 4242, 0, 0, &s), 0);
        assert_int_equal(session_attach(s, b), 0);
        /* The first charge takes a batch: 4 KiB used, the rest stocked. */
        assert_int_equal(session_charge(s, PAGE, MEM_STAT_ANON, 0, NULL), 0);
        assert_int_equal(usage_of(b), BATCH);
        assert_int_equal(usage_of(a), BATCH);
        /* The next ones come from the stock: no counter moves. */
        for (int i = 0; i < 10; i++)
                assert_int_equal(session_charge(s, PAGE, MEM_STAT_ANON, 0, NULL), 0);
        assert_int_equal(usage_of(b), BATCH);
        assert_int_equal(session_held(s, MEM_STAT_ANON), 11 * PAGE);
        /* Uncharges go back to it. */
        assert_int_equal(session_uncharge(s, 11 * PAGE, MEM_STAT_ANON), 0);
        assert_int_equal(usage_of(b), BATCH);
        /* More than a batch is charged exactly. */
        assert_int_equal(session_charge(s, 2 * BATCH, MEM_STAT_ANON, 0, NULL), 0);
        assert_int_equal(usage_of(b), 3 * BATCH);
        /* So is its uncharge: no stock keeps more than its batches. */
        assert_int_equal(session_uncharge(s, 2 * BATCH, MEM_STAT_ANON), 0);
        assert_int_equal(usage_of(b), BATCH);
        session_free(s);
        /* The thread's end gives the stock back. */
        core_thread_unregister(core);
        assert_int_equal(core_thread_register(core), 0);
        assert_int_equal(usage_of(a), 0);
        group_unref(a);
        group_unref(b);
}

static void test_a_refusal_drains_and_retries(void **state) {
        MemCore *core = *state;
        MemGroup *p = make_group(core, "/p"), *x = make_group(core, "/p/x"), *y = make_group(core, "/p/y");
        MemChargeResult res;
        MemGroupInfo info;

        assert_int_equal(group_set_max(p, BATCH + 8 * PAGE, false), 0);
        /* x's kept page brings a batch: p is at BATCH. */
        assert_int_equal(group_charge_kept(core, x, PAGE, MEM_STAT_ANON, 0, NULL), 0);
        assert_int_equal(usage_of(p), BATCH);
        /* y's 16 pages: its batch is refused, then exactly 16 pages would
         * pass p's max with x's stock in it; the drain makes room, and
         * the retry's batch fits then. */
        assert_int_equal(core_charge_kept(core, y, 16 * PAGE, MEM_STAT_ANON, MEM_CHARGE_DRAIN, &res), 0);
        charge_result_done(&res);
        assert_int_equal(usage_of(p), PAGE + BATCH);
        /* One refusal inside (the exact charge before the drain), no oom. */
        info = read_info(core, p, false);
        assert_int_equal(info.events_local[MEM_EVENT_OOM], 0);
        /* A charge that no drain helps is refused, and is an oom. */
        assert_int_equal(core_charge_kept(core, y, BATCH, MEM_STAT_ANON, MEM_CHARGE_DRAIN, &res), -EDQUOT);
        assert_ptr_equal(res.refused, p);
        charge_result_done(&res);
        assert_int_equal(read_info(core, p, false).events_local[MEM_EVENT_OOM], 1);
        assert_int_equal(group_uncharge_kept(core, x, PAGE, MEM_STAT_ANON), 0);
        assert_int_equal(group_uncharge_kept(core, y, 16 * PAGE, MEM_STAT_ANON), 0);
        group_unref(p);
        group_unref(x);
        group_unref(y);
}

static void test_limits_and_removal_drain(void **state) {
        MemCore *core = *state;
        MemGroup *a = make_group(core, "/a");

        assert_int_equal(group_charge_kept(core, a, PAGE, MEM_STAT_ANON, 0, NULL), 0);
        assert_int_equal(usage_of(a), BATCH);
        /* Stocked bytes are not used: a max above what is kept is taken. */
        assert_int_equal(group_set_max(a, 2 * PAGE, false), 0);
        assert_int_equal(usage_of(a), PAGE);
        assert_int_equal(group_set_max(a, UINT64_MAX, false), 0);
        /* A removal gives back what threads stocked of the group: here
         * the page its kept charge released into the stock. */
        assert_int_equal(group_uncharge_kept(core, a, PAGE, MEM_STAT_ANON), 0);
        assert_int_equal(usage_of(a), PAGE);
        assert_int_equal(group_remove(core, "/a"), 0);
        assert_int_equal(usage_of(core->root), 0);
        group_unref(a);
}

static void test_regions_stock_and_drain_at_removal(void **state) {
        MemCore *core = *state;
        MemGroup *a = make_group(core, "/a");
        int key = core_region_add(core, "gpu0", 4 * BATCH);
        MemRegionInfo ri;

        assert_int_equal(region_charge_kept(core, a, key, PAGE, 0, NULL), 0);
        assert_int_equal(region_read_one(core, a, key, NULL, &ri), 0);
        assert_int_equal(ri.current, BATCH);
        assert_int_equal(ri.kept, PAGE);
        /* The capacity counts stocked bytes, and a drain makes room. */
        assert_int_equal(region_charge_kept(core, a, key, 3 * BATCH + BATCH / 2, 0, NULL), 0);
        assert_int_equal(region_uncharge_kept_as(core, a, key, 3 * BATCH + BATCH / 2 + PAGE, false), 0);
        /* Stocked bytes do not keep a region from going. */
        assert_int_equal(core_region_remove(core, "gpu0"), 0);
        assert_int_equal(usage_of(core->root), 0);
        group_unref(a);
}

/* ---- under concurrency: a stock per thread, drains from the others ---- */

#define NTHREADS 2
#define RUN_USEC 500000

typedef struct Race {
        MemCore *core;
        MemGroup *p;
        MemGroup *leaf[NTHREADS];
        uint64_t deadline;
        _Atomic unsigned long refused;
} Race;

typedef struct Worker {
        Race *r;
        unsigned i;
} Worker;

static void *charger(void *arg) {
        Worker *w = arg;
        Race *r = w->r;
        uint64_t rng = seed_base() + w->i, held = 0;
        MemSession *s;

        CHECK(core_thread_register(r->core) == 0, "register");
        CHECK(session_new(r->core, 500 + (pid_t) w->i, 0, 0, &s) == 0, "session");
        CHECK(session_attach(s, r->leaf[w->i]) == 0, "attach");
        while (now_usec() < r->deadline) {
                uint64_t n = (rnd(&rng) % 8 + 1) * PAGE;

                if (rnd(&rng) % 2 && held < 256 * PAGE) {
                        int e = session_charge(s, n, MEM_STAT_ANON, MEM_CHARGE_DRAIN, NULL);

                        CHECK(e == 0 || e == -EDQUOT, "charge: %d", e);
                        if (e == 0)
                                held += n;
                        else
                                r->refused++;
                } else if (held >= n) {
                        CHECK(session_uncharge(s, n, MEM_STAT_ANON) == 0, "uncharge");
                        held -= n;
                }
        }
        CHECK(session_held(s, MEM_STAT_ANON) == held, "held");
        session_free(s);
        core_thread_unregister(r->core);
        return NULL;
}

/* Lowers and raises the parent's max, which drains every stock under it. */
static void *limiter(void *arg) {
        Race *r = arg;
        uint64_t rng = seed_base() + 77;

        CHECK(core_thread_register(r->core) == 0, "register");
        while (now_usec() < r->deadline) {
                int e = group_set_max(r->p, (rnd(&rng) % 2 ? 3 : 8) * BATCH, false);

                CHECK(e == 0 || e == -EBUSY, "set max: %d", e);
        }
        core_thread_unregister(r->core);
        return NULL;
}

static void test_stocks_under_concurrency(void **state) {
        Race r = { .core = *state };
        Worker w[NTHREADS];
        pthread_t th[NTHREADS + 1];
        MemGroupInfo info;

        r.p = make_group(r.core, "/p");
        r.leaf[0] = make_group(r.core, "/p/a");
        r.leaf[1] = make_group(r.core, "/p/b");
        assert_int_equal(group_set_max(r.p, 8 * BATCH, false), 0);
        r.deadline = now_usec() + RUN_USEC;
        for (unsigned i = 0; i < NTHREADS; i++) {
                w[i] = (Worker) { .r = &r, .i = i };
                assert_int_equal(pthread_create(&th[i], NULL, charger, &w[i]), 0);
        }
        assert_int_equal(pthread_create(&th[NTHREADS], NULL, limiter, &r), 0);
        for (unsigned i = 0; i <= NTHREADS; i++)
                pthread_join(th[i], NULL);
        assert_no_failures();
        /* Every session ended and every thread gave its stock back: the
         * counters read 0, and never passed the largest max. */
        assert_int_equal(usage_of(r.p), 0);
        assert_int_equal(usage_of(r.core->root), 0);
        info = read_info(r.core, r.p, false);
        assert_true(info.peak <= 8 * BATCH);
        group_unref(r.p);
        group_unref(r.leaf[0]);
        group_unref(r.leaf[1]);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                STOCK_TEST(test_charges_come_from_the_stock),
                STOCK_TEST(test_a_refusal_drains_and_retries),
                STOCK_TEST(test_limits_and_removal_drain),
                STOCK_TEST(test_regions_stock_and_drain_at_removal),
                STOCK_TEST(test_stocks_under_concurrency),
        };

        return cmocka_run_group_tests_name("core-stock", tests, NULL, NULL);
}
