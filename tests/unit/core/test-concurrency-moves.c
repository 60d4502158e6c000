/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Moves of sessions racing their readers and their users (session.h).
 *
 * A move takes all of a session's charges from one group to another at
 * once: a consistent reader of both groups sees them in one or the other,
 * never in both or neither, and their common ancestor never changes. The
 * session's own charges and uncharges made during its moves land on the
 * group it is in at that moment, and sessions freed while client_move()
 * moves their client leave nothing charged behind.
 *
 * Worker threads never call cmocka: they CHECK, and the main thread fails
 * the test after joining them.
 */

#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include <cmocka.h>

#include "charge.h"
#include "core-test.h"
#include "core.h"
#include "counter.h"
#include "group.h"
#include "session.h"
#include "stats.h"

/* ---- moves are atomic for consistent readers ------------------------------ */

#define MOVE_USEC 1000000
#define MOVE_MAX 20000
#define NREADERS 2

typedef struct MoveTest {
        MemCore *core;
        MemSession *s;
        MemGroup *m, *a, *b;
        int64_t n;
        uint64_t deadline;
        uint64_t rng;
        _Atomic bool done;
        unsigned long moves;
        _Atomic unsigned long reads;
        int64_t held[_MEM_STAT_MAX]; /* charger's record */
        unsigned long charges;
} MoveTest;

static void *mover_main(void *arg) {
        MoveTest *t = arg;
        MemGroup *at = t->a;
        int r = core_thread_register(t->core);

        CHECK(r == 0, "core_thread_register: %d", r);
        for (unsigned long i = 0; r == 0 && i < MOVE_MAX && now_usec() < t->deadline; i++) {
                MemGroup *dst = at == t->a ? t->b : t->a;
                MemChargeResult res = {};
                int k = session_move(t->s, dst, &res);

                CHECK(k == 0, "session_move: %d", k);
                charge_result_done(&res);
                if (k < 0)
                        break;
                at = dst;
                t->moves++;
        }
        atomic_store(&t->done, true);
        if (r == 0)
                core_thread_unregister(t->core);
        return NULL;
}

static void *consistent_reader_main(void *arg) {
        MoveTest *t = arg;
        MemGroup *const pair[2] = { t->a, t->b };
        int r = core_thread_register(t->core);

        CHECK(r == 0, "core_thread_register: %d", r);
        while (r == 0 && !atomic_load(&t->done)) {
                uint64_t out[2] = { 1, 1 };

                core_read_usage_consistent(t->core, pair, 2, out);
                CHECK(out[0] + out[1] == (uint64_t) t->n, "a %llu + b %llu != %lld",
                      (unsigned long long) out[0], (unsigned long long) out[1], (long long) t->n);
                CHECK((out[0] == 0 && out[1] == (uint64_t) t->n) ||
                              (out[1] == 0 && out[0] == (uint64_t) t->n),
                      "half a move seen: a %llu, b %llu", (unsigned long long) out[0],
                      (unsigned long long) out[1]);
                /* The common ancestor is never charged or uncharged by a move. */
                CHECK(counter_read(&t->m->counter) == t->n, "/m usage %lld during moves",
                      (long long) counter_read(&t->m->counter));
                atomic_fetch_add_explicit(&t->reads, 1, memory_order_relaxed);
        }
        if (r == 0)
                core_thread_unregister(t->core);
        return NULL;
}

static void move_test_init(MemCore *core, MoveTest *t, const char *top, pid_t pid) {
        char pa[32], pb[32];

        snprintf(pa, sizeof(pa), "%s/a", top);
        snprintf(pb, sizeof(pb), "%s/b", top);
        *t = (MoveTest) { .core = core, .rng = seed_base() };
        t->m = make_group(core, top);
        t->a = make_group(core, pa);
        t->b = make_group(core, pb);
        assert_non_null(t->m);
        assert_non_null(t->a);
        assert_non_null(t->b);
        assert_int_equal(session_new(core, pid, 1000, 1000, &t->s), 0);
        assert_int_equal(session_attach(t->s, t->a), 0);
}

static void move_test_done(MoveTest *t) {
        assert_null(session_free(t->s));
        assert_int_equal(read_usage(t->core, t->m), 0);
        group_unref(t->a);
        group_unref(t->b);
        group_unref(t->m);
}

static void test_consistent_reader_never_sees_half_a_move(void **state) {
        MemCore *core = *state;
        pthread_t mover, readers[NREADERS];
        MoveTest t;
        uint64_t out[2];

        move_test_init(core, &t, "/m", 900);
        assert_int_equal(session_charge(t.s, 1 << 20, MEM_STAT_ANON, 0, NULL), 0);
        assert_int_equal(session_charge(t.s, 12345, MEM_STAT_FILE, 0, NULL), 0);
        assert_int_equal(session_charge(t.s, 3 * PAGE, MEM_STAT_KERNEL, 0, NULL), 0);
        t.n = (1 << 20) + 12345 + 3 * PAGE;
        t.deadline = now_usec() + MOVE_USEC;

        for (unsigned i = 0; i < NREADERS; i++)
                assert_int_equal(pthread_create(&readers[i], NULL, consistent_reader_main, &t),
                                 0);
        assert_int_equal(pthread_create(&mover, NULL, mover_main, &t), 0);
        assert_int_equal(pthread_join(mover, NULL), 0);
        for (unsigned i = 0; i < NREADERS; i++)
                assert_int_equal(pthread_join(readers[i], NULL), 0);
        assert_no_failures();
        print_message("%lu moves, %lu consistent reads\n", t.moves, atomic_load(&t.reads));
        assert_true(t.moves >= 10);
        assert_true(atomic_load(&t.reads) > 0);

        /* Where the mover left it, with its stats. */
        core_read_usage_consistent(core, (MemGroup *const[]) { t.a, t.b }, 2, out);
        assert_int_equal(out[t.moves % 2], t.n);
        assert_int_equal(out[1 - t.moves % 2], 0);
        assert_ptr_equal(atomic_load(&t.s->group), t.moves % 2 ? t.b : t.a);
        {
                MemGroupInfo in, away;

                group_read(core, t.moves % 2 ? t.b : t.a, NULL, true, &in);
                group_read(core, t.moves % 2 ? t.a : t.b, NULL, true, &away);
                assert_int_equal(in.stat[MEM_STAT_ANON], 1 << 20);
                assert_int_equal(in.stat[MEM_STAT_FILE], 12345);
                assert_int_equal(in.stat[MEM_STAT_KERNEL], 3 * PAGE);
                for (int it = 0; it < _MEM_STAT_MAX; it++)
                        assert_int_equal(away.stat[it], 0);
        }
        move_test_done(&t);
}

/* ---- the session's own charges race moves of it ------------------------- */

/* Fast path 3 in session.c (mem_cgroup_begin_update_page_stat() in the
 * kernel): a charge takes no lock unless a move is in progress, and must
 * still land wholly on the group the session is in. */

static void *session_charger_main(void *arg) {
        MoveTest *t = arg;
        MemGroup *const pair[2] = { t->a, t->b };
        int r = core_thread_register(t->core);

        CHECK(r == 0, "core_thread_register: %d", r);
        for (unsigned long i = 0; r == 0 && i < 200000; i++) {
                unsigned it = (unsigned) (rnd(&t->rng) % _MEM_STAT_MAX);
                uint64_t out[2];
                int64_t sum = 0;
                int k;

                if (i % 64 == 0 && now_usec() >= t->deadline)
                        break;
                if (t->held[it] > 0 && rnd(&t->rng) % 3 == 0) {
                        int64_t bytes = 1 + (int64_t) (rnd(&t->rng) % (uint64_t) t->held[it]);

                        k = session_uncharge(t->s, (uint64_t) bytes, it);
                        CHECK(k == 0, "session_uncharge: %d", k);
                        if (k == 0)
                                t->held[it] -= bytes;
                } else {
                        uint64_t bytes = 1 + rnd(&t->rng) % (3 * PAGE);

                        k = session_charge(t->s, bytes, it, 0, NULL);
                        CHECK(k == 0, "session_charge: %d", k);
                        if (k == 0)
                                t->held[it] += (int64_t) bytes;
                }
                t->charges++;
                for (int j = 0; j < _MEM_STAT_MAX; j++) {
                        CHECK(session_held(t->s, j) == (uint64_t) t->held[j],
                              "held[%d] %llu, record %lld", j,
                              (unsigned long long) session_held(t->s, j),
                              (long long) t->held[j]);
                        sum += t->held[j];
                }
                core_read_usage_consistent(t->core, pair, 2, out);
                CHECK(out[0] + out[1] == (uint64_t) sum, "a %llu + b %llu, held %lld",
                      (unsigned long long) out[0], (unsigned long long) out[1], (long long) sum);
        }
        if (r == 0)
                core_thread_unregister(t->core);
        return NULL;
}

static void test_session_charges_during_moves_land_on_current_group(void **state) {
        MemCore *core = *state;
        pthread_t mover, charger;
        MemGroupInfo in, away, top;
        int64_t exact[_MEM_RSS_MAX], expect[_MEM_RSS_MAX] = {}, sum = 0;
        MemGroup *g;
        MoveTest t;

        move_test_init(core, &t, "/n", 901);
        t.deadline = now_usec() + MOVE_USEC;
        assert_int_equal(pthread_create(&charger, NULL, session_charger_main, &t), 0);
        assert_int_equal(pthread_create(&mover, NULL, mover_main, &t), 0);
        assert_int_equal(pthread_join(charger, NULL), 0);
        assert_int_equal(pthread_join(mover, NULL), 0);
        assert_no_failures();
        print_message("%lu charges/uncharges, %lu moves\n", t.charges, t.moves);
        assert_true(t.moves > 0);
        assert_true(t.charges > 0);

        /* Every stat update landed on the group the charge was in. */
        g = atomic_load(&t.s->group);
        assert_ptr_equal(g, t.moves % 2 ? t.b : t.a);
        core_stats_flush(core, true);
        group_read(core, g, NULL, false, &in);
        group_read(core, g == t.a ? t.b : t.a, NULL, false, &away);
        group_read(core, t.m, NULL, false, &top);
        for (int it = 0; it < _MEM_STAT_MAX; it++) {
                assert_int_equal(in.stat[it], t.held[it]);
                assert_int_equal(in.stat_local[it], t.held[it]);
                assert_int_equal(away.stat[it], 0);
                assert_int_equal(away.stat_local[it], 0);
                assert_int_equal(top.stat[it], t.held[it]);
                sum += t.held[it];
                if (mem_rss_from_stat(it) >= 0)
                        expect[mem_rss_from_stat(it)] += t.held[it];
        }
        assert_int_equal(in.current, sum);
        assert_int_equal(away.current, 0);
        assert_int_equal(top.current, sum);
        assert_int_equal(client_read_rss(core, 901, true, exact), 0);
        for (int m = 0; m < _MEM_RSS_MAX; m++)
                assert_int_equal(exact[m], expect[m]);
        move_test_done(&t);
}

/* ---- session_free races client_move -------------------------------------- */

#define FREE_PID 902

static void *session_churn_main(void *arg) {
        MoveTest *t = arg;
        MemGroup *const pair[2] = { t->a, t->b };
        int r = core_thread_register(t->core);

        CHECK(r == 0, "core_thread_register: %d", r);
        for (unsigned long i = 0; r == 0 && i < 100000 && now_usec() < t->deadline; i++) {
                MemSession *s[3] = {};
                unsigned n = 1 + (unsigned) (rnd(&t->rng) % 3);
                int64_t sum = 0, rss[_MEM_RSS_MAX];
                uint64_t out[2];
                int k;

                for (unsigned j = 0; j < n; j++) {
                        uint64_t bytes = 1 + rnd(&t->rng) % (64 * PAGE);

                        k = session_new(t->core, FREE_PID, 1000, 1000, &s[j]);
                        CHECK(k == 0, "session_new: %d", k);
                        if (k < 0)
                                break;
                        k = session_attach(s[j], rnd(&t->rng) % 2 ? t->a : t->b);
                        CHECK(k == 0, "session_attach: %d", k);
                        k = session_charge(s[j], bytes, MEM_STAT_ANON, 0, NULL);
                        CHECK(k == 0, "session_charge: %d", k);
                        if (k == 0)
                                sum += (int64_t) bytes;
                }
                core_read_usage_consistent(t->core, pair, 2, out);
                CHECK(out[0] + out[1] == (uint64_t) sum, "a %llu + b %llu, held %lld",
                      (unsigned long long) out[0], (unsigned long long) out[1], (long long) sum);
                for (unsigned j = 0; j < n; j++)
                        session_free(s[(j + i) % n]);
                core_read_usage_consistent(t->core, pair, 2, out);
                CHECK(out[0] == 0 && out[1] == 0, "after free: a %llu, b %llu",
                      (unsigned long long) out[0], (unsigned long long) out[1]);
                k = client_read_rss(t->core, FREE_PID, true, rss);
                CHECK(k == -ESRCH, "client_read_rss after the last free: %d", k);
                t->charges++;
        }
        atomic_store(&t->done, true);
        if (r == 0)
                core_thread_unregister(t->core);
        return NULL;
}

static void *client_mover_main(void *arg) {
        MoveTest *t = arg;
        int r = core_thread_register(t->core);

        CHECK(r == 0, "core_thread_register: %d", r);
        for (unsigned long i = 0; r == 0 && !atomic_load(&t->done); i++) {
                MemChargeResult res = {};
                int k = client_move(t->core, FREE_PID, i % 2 ? t->a : t->b, &res);

                /* -ENOTCONN: a session of the pid not attached yet. */
                CHECK(k >= 0 || k == -ESRCH || k == -ENOTCONN, "client_move: %d", k);
                if (k > 0)
                        t->moves += (unsigned long) k;
                charge_result_done(&res);
        }
        if (r == 0)
                core_thread_unregister(t->core);
        return NULL;
}

static void test_session_free_during_client_move_leaves_nothing_charged(void **state) {
        MemCore *core = *state;
        pthread_t churn, mover;
        MoveTest t;
        int64_t rss[_MEM_RSS_MAX];

        move_test_init(core, &t, "/p", 903);
        t.deadline = now_usec() + MOVE_USEC;
        assert_int_equal(pthread_create(&mover, NULL, client_mover_main, &t), 0);
        assert_int_equal(pthread_create(&churn, NULL, session_churn_main, &t), 0);
        assert_int_equal(pthread_join(churn, NULL), 0);
        assert_int_equal(pthread_join(mover, NULL), 0);
        assert_no_failures();
        print_message("%lu session rounds, %lu sessions moved by client_move\n", t.charges,
                      t.moves);
        assert_true(t.charges > 0);
        assert_true(t.moves > 0);
        assert_int_equal(read_usage(core, t.a), 0);
        assert_int_equal(read_usage(core, t.b), 0);
        assert_int_equal(client_read_rss(core, FREE_PID, true, rss), -ESRCH);
        move_test_done(&t);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                CORE_TEST(test_consistent_reader_never_sees_half_a_move),
                CORE_TEST(test_session_charges_during_moves_land_on_current_group),
                CORE_TEST(test_session_free_during_client_move_leaves_nothing_charged),
        };

        return cmocka_run_group_tests_name("core-concurrency-moves", tests, NULL, NULL);
}
