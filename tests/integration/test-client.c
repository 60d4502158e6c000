/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libmemacct against the real daemon (started here, on a private socket
 * and state directory; $MEMACCTD names it).
 *
 * What a client is promised: every operation of memacct.h does what its
 * comment says and maps the daemon's status to the documented errno; a
 * session's charges end with the session, however it ends (memacct_close(),
 * exit without it, SIGKILL); the stock never leaves capacity stranded in
 * one client's page while another is refused; after a daemon restart the
 * library reconnects and charges again exactly what the caller held (exact
 * and stocked charges, not the unused stock); and 10,000 pipelined
 * requests in one batch are answered in order, each as it would be alone.
 *
 * Usage is always checked from a connection of its own, so that what one
 * handle believes is compared with what the daemon counts.
 */

#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include <memacct.h>

#include "test-support.h"

#define K UINT64_C(1024)
#define M (K * K)
#define PAGE (4 * K)
#define WAIT_MSEC 20000
#define ELEMENTSOF(x) (sizeof(x) / sizeof((x)[0]))
#define MIN(a, b) ((a) < (b) ? (a) : (b))
#define MAX(a, b) ((a) > (b) ? (a) : (b))

static TestDaemon daemon_;

static int group_setup(void **state) {
        (void) state;
        if (test_daemon_init(&daemon_, "client") < 0)
                return -1;
        return test_daemon_start(&daemon_);
}

static int group_teardown(void **state) {
        TestDaemon *d = &daemon_;
        int status;

        (void) state;
        status = test_daemon_stop(d, SIGTERM);
        if (status != 0) {
                fprintf(stderr, "memacctd did not exit 0 on SIGTERM (wait status 0x%x)\n", status);
                test_daemon_dump_log(d);
        }
        (void) test_daemon_done(d);
        return status == 0 ? 0 : -1;
}

/* ---- helpers ---- */

static memacct *connect_or_fail(void) {
        memacct *m = NULL;

        assert_int_equal(memacct_connect(daemon_.sock, &m), 0);
        assert_non_null(m);
        return m;
}

static void create(const char *path, uint64_t max) {
        memacct *m = connect_or_fail();
        memacct_limits l = { .set = MEMACCT_LIMIT_MAX, .max = max };

        assert_int_equal(memacct_create_group(m, path, &l, MEMACCT_NO_OWNER), 0);
        memacct_close(m);
}

/* The daemon's count for @path, from a connection of its own: current, or
 * with @item >= 0 that stat item (statistics flushed first). */
static uint64_t usage(const char *path, int item) {
        memacct *m = connect_or_fail();
        memacct_group_info *g = NULL;
        uint64_t v;

        assert_int_equal(memacct_get_group(m, path, NULL, item >= 0 ? MEMACCT_EXACT : 0, &g), 0);
        if (item < 0)
                v = g->current;
        else {
                assert_true((size_t) item < g->n_stat);
                assert_string_equal(g->stat[item].name, memacct_stat_to_string(item));
                v = g->stat[item].value;
        }
        memacct_group_info_free(g);
        memacct_close(m);
        return v;
}

/* Poll usage() until it is @want or WAIT_MSEC pass; returns the last value. */
static uint64_t usage_soon(const char *path, uint64_t want) {
        uint64_t deadline = now_msec() + WAIT_MSEC, v;

        while ((v = usage(path, -1)) != want && now_msec() < deadline)
                sleep_msec(20);
        return v;
}

static uint64_t counter(const memacct_counter *c, size_t n, const char *name) {
        for (size_t i = 0; i < n; i++)
                if (strcmp(c[i].name, name) == 0)
                        return c[i].value;
        fail_msg("no counter '%s'", name);
        return 0;
}

/* ---- every operation ---- */

static void test_groups_limits_and_errors(void **state) {
        memacct *m = connect_or_fail();
        memacct_limits l = {
                .set = MEMACCT_LIMIT_MAX | MEMACCT_LIMIT_HIGH | MEMACCT_LIMIT_LOW | MEMACCT_LIMIT_MIN,
                .max = 8 * M, .high = 6 * M, .low = 2 * M, .min = M,
        };
        memacct_group_info *g = NULL;
        memacct_group_list *list = NULL;
        const char *expect[] = { "/ops/a", "/ops/a/x", "/ops/b" };

        (void) state;
        assert_string_not_equal(memacct_server(m), "");
        assert_int_equal(memacct_peer_pid(m), getpid());

        assert_int_equal(memacct_create_group(m, "/ops", &l, MEMACCT_NO_OWNER), 0);
        assert_int_equal(memacct_create_group(m, "/ops", NULL, MEMACCT_NO_OWNER), -EEXIST);
        assert_non_null(memacct_last_error(m));
        assert_int_equal(memacct_create_group(m, "/nope/x", NULL, MEMACCT_NO_OWNER), -ENOENT);
        assert_int_equal(memacct_create_group(m, "relative", NULL, MEMACCT_NO_OWNER), -EINVAL);
        assert_int_equal(memacct_create_group(m, "/ops/a", NULL, 4242), 0);
        assert_int_equal(memacct_create_group(m, "/ops/a/x", NULL, MEMACCT_NO_OWNER), 0);
        assert_int_equal(memacct_create_group(m, "/ops/b", NULL, MEMACCT_NO_OWNER), 0);

        assert_int_equal(memacct_get_group(m, "/ops", NULL, 0, &g), 0);
        assert_string_equal(g->path, "/ops");
        assert_int_equal(g->max, 8 * M);
        assert_int_equal(g->high, 6 * M);
        assert_int_equal(g->low, 2 * M);
        assert_int_equal(g->min, M);
        assert_int_equal(g->current, 0);
        assert_int_equal(g->nr_children, 2);
        assert_int_equal(g->n_events, 4);
        assert_int_equal(g->n_events_local, 4);
        assert_int_equal(g->n_stat, MEMACCT_STAT_MAX);
        g = memacct_group_info_free(g);
        assert_int_equal(memacct_get_group(m, "/ops/a", NULL, 0, &g), 0);
        assert_int_equal(g->owner, 4242);
        assert_int_equal(g->max, MEMACCT_UNLIMITED);
        g = memacct_group_info_free(g);
        assert_int_equal(memacct_get_group(m, "/nope", NULL, 0, &g), -ENOENT);
        assert_null(g);

        /* Children only, then the whole subtree in pre-order. */
        assert_int_equal(memacct_list_groups(m, "/ops", 0, &list), 0);
        assert_int_equal(memacct_group_list_size(list), 2);
        assert_string_equal(memacct_group_list_get(list, 0)->path, "/ops/a");
        assert_string_equal(memacct_group_list_get(list, 1)->path, "/ops/b");
        assert_null(memacct_group_list_get(list, 2));
        list = memacct_group_list_free(list);
        assert_int_equal(memacct_list_groups(m, "/ops", MEMACCT_RECURSIVE, &list), 0);
        {
                size_t n = memacct_group_list_size(list), off = 0;

                /* The subtree's root may or may not lead the list. */
                if (n > 0 && strcmp(memacct_group_list_get(list, 0)->path, "/ops") == 0)
                        off = 1;
                assert_int_equal(n - off, 3);
                for (size_t i = 0; i < 3; i++)
                        assert_string_equal(memacct_group_list_get(list, i + off)->path, expect[i]);
        }
        list = memacct_group_list_free(list);

        /* Limits: max below usage needs MEMACCT_FORCE. */
        assert_int_equal(memacct_charge(m, "/ops/b", 3 * M, MEMACCT_STAT_ANON, MEMACCT_KEEP, NULL), 0);
        l = (memacct_limits) { .set = MEMACCT_LIMIT_MAX, .max = 2 * M };
        assert_int_equal(memacct_set_limits(m, "/ops", &l, 0), -EBUSY);
        assert_int_equal(memacct_get_group(m, "/ops", NULL, 0, &g), 0);
        assert_int_equal(g->max, 8 * M);
        g = memacct_group_info_free(g);
        assert_int_equal(memacct_set_limits(m, "/ops", &l, MEMACCT_FORCE), 0);
        assert_int_equal(memacct_get_group(m, "/ops", NULL, 0, &g), 0);
        assert_int_equal(g->max, 2 * M);
        assert_int_equal(g->current, 3 * M);
        g = memacct_group_info_free(g);
        l = (memacct_limits) { .set = MEMACCT_LIMIT_MAX, .max = MEMACCT_UNLIMITED };
        assert_int_equal(memacct_set_limits(m, "/ops", &l, 0), 0);
        assert_int_equal(memacct_set_limits(m, "/nope", &l, 0), -ENOENT);

        /* Peak and its reset. */
        assert_int_equal(memacct_uncharge(m, "/ops/b", 2 * M, MEMACCT_STAT_ANON, MEMACCT_KEEP), 0);
        assert_int_equal(memacct_uncharge(m, "/ops/b", 2 * M, MEMACCT_STAT_ANON, MEMACCT_KEEP), -ERANGE);
        assert_int_equal(memacct_get_group(m, "/ops/b", NULL, 0, &g), 0);
        assert_int_equal(g->peak, 3 * M);
        assert_int_equal(g->current, M);
        g = memacct_group_info_free(g);
        assert_int_equal(memacct_reset_peak(m, "/ops/b"), 0);
        assert_int_equal(memacct_get_group(m, "/ops/b", NULL, 0, &g), 0);
        assert_int_equal(g->peak, M);
        g = memacct_group_info_free(g);

        /* Remove: not with children, not a missing group. */
        assert_int_equal(memacct_remove_group(m, "/ops/a"), -EBUSY);
        assert_int_equal(memacct_remove_group(m, "/ops/a/x"), 0);
        assert_int_equal(memacct_remove_group(m, "/ops/a/x"), -ENOENT);
        assert_int_equal(memacct_uncharge(m, "/ops/b", M, MEMACCT_STAT_ANON, MEMACCT_KEEP), 0);
        assert_int_equal(memacct_remove_group(m, "/ops/b"), 0);
        memacct_close(m);
}

static void test_charge_refused_names_group_and_raises_event(void **state) {
        memacct *m = connect_or_fail(), *w = connect_or_fail();
        memacct_charge_result res;
        memacct_event ev;
        memacct_group_info *g = NULL;
        uint64_t deadline;
        int r;

        (void) state;
        create("/ev", M);
        create("/ev/c", MEMACCT_UNLIMITED);
        assert_int_equal(memacct_subscribe(w, "/ev"), 0);

        assert_int_equal(memacct_charge(m, "/ev/c", 768 * K, MEMACCT_STAT_FILE, MEMACCT_KEEP, &res), 0);
        assert_int_equal(res.margin, 256 * K);
        assert_false(res.over_max);
        assert_int_equal(memacct_charge(m, "/ev/c", 512 * K, MEMACCT_STAT_FILE, MEMACCT_KEEP, &res),
                         -EDQUOT);
        assert_non_null(memacct_refused_path(m));
        assert_string_equal(memacct_refused_path(m), "/ev");
        assert_non_null(memacct_last_error(m));

        /* A forced charge passes max and says so. */
        assert_int_equal(memacct_charge(m, "/ev/c", 512 * K, MEMACCT_STAT_FILE,
                                        MEMACCT_KEEP | MEMACCT_FORCE, &res), 0);
        assert_true(res.over_max);
        assert_int_equal(usage("/ev", -1), M + 256 * K);

        /* The watcher gets the max event of the refusal (local count 1),
         * then that of the forced charge past max (2). */
        for (uint64_t want = 1; want <= 2; want++) {
                deadline = now_msec() + WAIT_MSEC;
                do {
                        r = memacct_next_event(w, 1000, &ev);
                        assert_true(r >= 0);
                } while ((r == 0 || strcmp(ev.name, "max") != 0) && now_msec() < deadline);
                assert_int_equal(r, 1);
                assert_string_equal(ev.path, "/ev");
                assert_string_equal(ev.name, "max");
                assert_int_equal(ev.count, want);
        }

        assert_int_equal(memacct_get_group(m, "/ev", NULL, MEMACCT_EXACT, &g), 0);
        assert_int_equal(g->failcnt, 1);
        assert_int_equal(counter(g->events_local, g->n_events_local, "max"), 2);
        assert_int_equal(counter(g->events, g->n_events, "max"), 2);
        assert_int_equal(counter(g->stat, g->n_stat, "file"), M + 256 * K);
        g = memacct_group_info_free(g);

        assert_int_equal(memacct_uncharge(m, "/ev/c", M + 256 * K, MEMACCT_STAT_FILE, MEMACCT_KEEP), 0);
        memacct_close(w);
        memacct_close(m);
}

static void test_attach_move_and_client(void **state) {
        memacct *m = connect_or_fail();
        memacct_client_info ci;
        unsigned moved = 0;

        (void) state;
        create("/mv", MEMACCT_UNLIMITED);
        create("/mv/a", MEMACCT_UNLIMITED);
        create("/mv/b", 256 * K);
        assert_int_equal(memacct_charge(m, NULL, PAGE, MEMACCT_STAT_ANON, 0, NULL), -ENOTCONN);
        assert_int_equal(memacct_attach(m, "/nope"), -ENOENT);
        assert_int_equal(memacct_attach(m, "/mv/a"), 0);
        assert_int_equal(memacct_charge(m, NULL, 100 * K, MEMACCT_STAT_ANON, 0, NULL), 0);
        assert_int_equal(memacct_charge(m, NULL, 400 * K, MEMACCT_STAT_SHMEM, 0, NULL), 0);
        assert_int_equal(usage("/mv/a", -1), 500 * K);
        /* Attached with charges: a move, not an attach. */
        assert_int_equal(memacct_attach(m, "/mv/b"), -EBUSY);

        /* Exact RSS: anon 100K, shmem 400K. */
        assert_int_equal(memacct_get_client(m, 0, MEMACCT_EXACT, &ci), 0);
        assert_int_equal(ci.pid, getpid());
        assert_int_equal(ci.anon, 100 * K);
        assert_int_equal(ci.shmem, 400 * K);
        assert_int_equal(ci.file, 0);

        /* Into a group too small: refused, nothing moved. */
        assert_int_equal(memacct_move(m, 0, "/mv/b", &moved), -EDQUOT);
        assert_string_equal(memacct_refused_path(m), "/mv/b");
        assert_int_equal(usage("/mv/a", -1), 500 * K);
        assert_int_equal(memacct_uncharge(m, NULL, 400 * K, MEMACCT_STAT_SHMEM, 0), 0);
        assert_int_equal(memacct_uncharge(m, NULL, 400 * K, MEMACCT_STAT_SHMEM, 0), -ERANGE);
        assert_int_equal(memacct_move(m, 0, "/mv/b", &moved), 0);
        assert_int_equal(moved, 1);
        assert_int_equal(usage("/mv/a", -1), 0);
        assert_int_equal(usage("/mv/b", -1), 100 * K);
        /* Session charges go where the session is now. */
        assert_int_equal(memacct_charge(m, NULL, 8 * K, MEMACCT_STAT_ANON, 0, NULL), 0);
        assert_int_equal(usage("/mv/b", -1), 108 * K);
        memacct_close(m);
        assert_int_equal(usage_soon("/mv", 0), 0);
}

/* ---- a session's charges end with it ---- */

/*
 * A child that connects, charges @bytes exactly and one page through the
 * stock to @group's session, writes one byte to *@ret_ready, and exits
 * (without memacct_close()) when *@ret_go is closed, unless killed first.
 */
static pid_t child_holding(const char *group, uint64_t bytes, int *ret_ready, int *ret_go) {
        int ready[2], go[2];
        pid_t pid;

        assert_int_equal(pipe(ready), 0);
        assert_int_equal(pipe(go), 0);
        pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
                memacct *m = NULL;
                char ok = 1;

                close(ready[0]);
                close(go[1]);
                if (memacct_connect(daemon_.sock, &m) < 0 || memacct_attach(m, group) < 0 ||
                    memacct_charge(m, NULL, bytes, MEMACCT_STAT_ANON, 0, NULL) < 0 ||
                    memacct_charge_stocked(m, PAGE, MEMACCT_STAT_FILE) < 0 ||
                    memacct_stock_drain(m) < 0)
                        ok = 0;
                if (write(ready[1], &ok, 1) != 1)
                        _exit(2);
                /* Until the parent closes its end (or kills us). */
                while (read(go[0], &ok, 1) > 0)
                        ;
                _exit(0);
        }
        close(ready[1]);
        close(go[0]);
        *ret_ready = ready[0];
        *ret_go = go[1];
        return pid;
}

static void test_session_charges_end_with_the_session(void **state) {
        memacct *m = connect_or_fail();
        memacct_group_info *g = NULL;
        uint64_t stocked = 0;
        int ready, go, status;
        char ok = 0;
        pid_t pid;

        (void) state;
        create("/life", MEMACCT_UNLIMITED);

        /* memacct_close(): exact and stocked charges and the unused stock. */
        assert_int_equal(memacct_attach(m, "/life"), 0);
        assert_int_equal(memacct_charge(m, NULL, M, MEMACCT_STAT_ANON, 0, NULL), 0);
        for (int i = 0; i < 16; i++)
                assert_int_equal(memacct_charge_stocked(m, PAGE, MEMACCT_STAT_ANON), 0);
        /* A synchronous call collects the reply of any refill in flight. */
        assert_int_equal(memacct_get_group(m, "/life", NULL, 0, &g), 0);
        g = memacct_group_info_free(g);
        assert_int_equal(memacct_stock_get(m, MEMACCT_STAT_ANON, &stocked, NULL), 0);
        assert_int_equal(usage("/life", -1), M + 16 * PAGE + stocked);
        memacct_close(m);
        assert_int_equal(usage_soon("/life", 0), 0);

        /* exit() without memacct_close(). */
        pid = child_holding("/life", 2 * M, &ready, &go);
        assert_int_equal(read(ready, &ok, 1), 1);
        assert_int_equal(ok, 1);
        assert_int_equal(usage("/life", -1), 2 * M + PAGE);
        close(go);
        assert_int_equal(waitpid(pid, &status, 0), pid);
        assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
        close(ready);
        assert_int_equal(usage_soon("/life", 0), 0);

        /* SIGKILL. */
        pid = child_holding("/life", 3 * M, &ready, &go);
        assert_int_equal(read(ready, &ok, 1), 1);
        assert_int_equal(ok, 1);
        assert_int_equal(usage("/life", -1), 3 * M + PAGE);
        assert_int_equal(kill(pid, SIGKILL), 0);
        assert_int_equal(waitpid(pid, &status, 0), pid);
        assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
        close(ready);
        close(go);
        assert_int_equal(usage_soon("/life", 0), 0);
}

/* ---- the stock ---- */

static void test_stock_is_drained_before_a_refusal(void **state) {
        memacct *a = connect_or_fail(), *b = connect_or_fail();
        memacct_group_info *g = NULL;
        uint64_t stocked = 0;

        (void) state;
        create("/stk", 4 * M);
        assert_int_equal(memacct_attach(a, "/stk"), 0);
        assert_int_equal(memacct_attach(b, "/stk"), 0);
        assert_int_equal(memacct_charge_stocked(a, PAGE, MEMACCT_STAT_ANON), 0);
        /* A synchronous call collects the reply of any refill in flight. */
        assert_int_equal(memacct_get_group(a, "/stk", NULL, 0, &g), 0);
        g = memacct_group_info_free(g);
        assert_int_equal(memacct_stock_get(a, MEMACCT_STAT_ANON, &stocked, NULL), 0);
        assert_true(stocked > 0);
        assert_int_equal(usage("/stk", -1), PAGE + stocked);

        /* b takes everything a does not use: a's stock must be drained for it. */
        assert_int_equal(memacct_charge(b, NULL, 4 * M - PAGE, MEMACCT_STAT_ANON, 0, NULL), 0);
        assert_int_equal(usage("/stk", -1), 4 * M);
        assert_int_equal(memacct_stock_get(a, MEMACCT_STAT_ANON, &stocked, NULL), 0);
        assert_int_equal(stocked, 0);
        /* Now the group is full for a as well. */
        assert_int_equal(memacct_charge_stocked(a, PAGE, MEMACCT_STAT_ANON), -EDQUOT);
        assert_int_equal(memacct_uncharge_stocked(a, PAGE, MEMACCT_STAT_ANON), 0);
        assert_int_equal(memacct_uncharge_stocked(a, PAGE, MEMACCT_STAT_ANON), -ERANGE);
        assert_int_equal(memacct_stock_drain(a), 0);
        assert_int_equal(usage("/stk", -1), 4 * M - PAGE);
        memacct_close(b);
        memacct_close(a);
        assert_int_equal(usage_soon("/stk", 0), 0);
}

/* ---- daemon restart ---- */

typedef struct Reconnect {
        unsigned calls;
        int result;
        uint64_t replayed;
} Reconnect;

static void on_reconnect(memacct *m, int result, uint64_t replayed_bytes, void *userdata) {
        Reconnect *rc = userdata;

        (void) m;
        rc->calls++;
        rc->result = result;
        rc->replayed = replayed_bytes;
}

static void test_restart_charges_again_what_the_client_held(void **state) {
        const uint64_t exact = M, stocked_file = 10 * 2 * PAGE, kept = 256 * K;
        uint64_t stocked_anon = 100 * PAGE, offline;
        memacct *m = connect_or_fail(), *o = connect_or_fail();
        Reconnect rc = {};
        memacct_group_info *g = NULL;
        uint64_t page_anon = 0, page_file = 0;

        (void) state;
        create("/rs", 64 * M);
        assert_int_equal(memacct_set_reconnect_callback(m, on_reconnect, &rc), 0);
        assert_int_equal(memacct_charge(o, "/rs", kept, MEMACCT_STAT_ANON, MEMACCT_KEEP, NULL), 0);
        assert_int_equal(memacct_attach(m, "/rs"), 0);
        assert_int_equal(memacct_charge(m, NULL, exact, MEMACCT_STAT_ANON, 0, NULL), 0);
        for (int i = 0; i < 100; i++)
                assert_int_equal(memacct_charge_stocked(m, PAGE, MEMACCT_STAT_ANON), 0);
        for (int i = 0; i < 10; i++)
                assert_int_equal(memacct_charge_stocked(m, 2 * PAGE, MEMACCT_STAT_FILE), 0);
        assert_int_equal(memacct_get_group(m, "/rs", NULL, 0, &g), 0);
        g = memacct_group_info_free(g);
        assert_int_equal(memacct_stock_get(m, MEMACCT_STAT_ANON, &page_anon, NULL), 0);
        assert_int_equal(memacct_stock_get(m, MEMACCT_STAT_FILE, &page_file, NULL), 0);
        assert_int_equal(usage("/rs", -1),
                         kept + exact + stocked_anon + stocked_file + page_anon + page_file);
        memacct_close(o);

        assert_int_equal(test_daemon_stop(&daemon_, SIGTERM), 0);
        /* With the daemon away, charges the page covers still succeed (no
         * message is needed), and are part of what is held. */
        offline = MIN(page_anon / PAGE, 5);
        for (uint64_t i = 0; i < offline; i++)
                assert_int_equal(memacct_charge_stocked(m, PAGE, MEMACCT_STAT_ANON), 0);
        stocked_anon += offline * PAGE;
        assert_int_equal(test_daemon_start(&daemon_), 0);
        /* Only the kept charge survived in the daemon itself. */
        assert_int_equal(usage("/rs", -1), kept);

        /* The next call notices, reconnects and replays. */
        assert_int_equal(memacct_get_group(m, "/rs", NULL, 0, &g), 0);
        g = memacct_group_info_free(g);
        assert_int_equal(memacct_reconnect_count(m), 1);
        assert_int_equal(rc.calls, 1);
        assert_int_equal(rc.result, 0);
        assert_int_equal(rc.replayed, exact + stocked_anon + stocked_file);

        /* What the daemon counts, from another connection, without the new
         * page's stock: exactly what the client held, plus the kept charge. */
        assert_int_equal(memacct_stock_drain(m), 0);
        assert_int_equal(usage("/rs", -1), kept + exact + stocked_anon + stocked_file);
        assert_int_equal(usage("/rs", MEMACCT_STAT_ANON), kept + exact + stocked_anon);
        assert_int_equal(usage("/rs", MEMACCT_STAT_FILE), stocked_file);

        /* And the client can give it all back. */
        assert_int_equal(memacct_uncharge(m, NULL, exact, MEMACCT_STAT_ANON, 0), 0);
        for (uint64_t i = 0; i < stocked_anon / PAGE; i++)
                assert_int_equal(memacct_uncharge_stocked(m, PAGE, MEMACCT_STAT_ANON), 0);
        for (int i = 0; i < 10; i++)
                assert_int_equal(memacct_uncharge_stocked(m, 2 * PAGE, MEMACCT_STAT_FILE), 0);
        assert_int_equal(memacct_uncharge_stocked(m, PAGE, MEMACCT_STAT_ANON), -ERANGE);
        assert_int_equal(memacct_stock_drain(m), 0);
        assert_int_equal(usage("/rs", -1), kept);
        memacct_close(m);

        o = connect_or_fail();
        assert_int_equal(memacct_uncharge(o, "/rs", kept, MEMACCT_STAT_ANON, MEMACCT_KEEP), 0);
        memacct_close(o);
}

/* ---- pipelining ---- */

#define BATCH_OPS 10000

/* The size of the k-th charge: 7 to 13 pages. Any two charges together are
 * above the group's max of 13 pages, so a charge answered before the
 * uncharge queued ahead of it would be refused, and an uncharge answered
 * before its charge would underflow: only the queued order succeeds. */
static uint64_t batch_size(size_t k) {
        return (7 + k % 7) * PAGE;
}

static void test_batch_of_10000_in_order(void **state) {
        memacct *m = connect_or_fail();
        memacct_batch *b = NULL;
        const char *refused = NULL;
        uint64_t final = 0;
        int r;

        (void) state;
        create("/batch", 13 * PAGE);
        assert_int_equal(memacct_attach(m, "/batch"), 0);
        assert_int_equal(memacct_batch_begin(m, &b), 0);
        /* 9,998 alternating charges and uncharges, then two charges that
         * stay (they fit together: 7 + 6 pages). */
        for (size_t i = 0; i < BATCH_OPS - 2; i++) {
                if (i % 2 == 0)
                        r = memacct_batch_charge(b, NULL, batch_size(i / 2), MEMACCT_STAT_ANON, 0);
                else
                        r = memacct_batch_uncharge(b, NULL, batch_size(i / 2), MEMACCT_STAT_ANON, 0);
                assert_int_equal(r, (int) i);
        }
        assert_int_equal(memacct_batch_charge(b, NULL, 7 * PAGE, MEMACCT_STAT_ANON, 0), BATCH_OPS - 2);
        assert_int_equal(memacct_batch_charge(b, NULL, 6 * PAGE, MEMACCT_STAT_FILE, 0), BATCH_OPS - 1);
        final = 13 * PAGE;

        assert_int_equal(memacct_batch_commit(b), 0);
        for (size_t i = 0; i < BATCH_OPS; i++) {
                r = memacct_batch_result(b, i, &refused);
                if (r != 0)
                        fail_msg("operation %zu: %s", i, strerror(-r));
        }
        assert_int_equal(memacct_batch_result(b, BATCH_OPS, NULL), -EINVAL);
        b = memacct_batch_free(b);
        assert_int_equal(usage("/batch", -1), final);
        assert_int_equal(usage("/batch", MEMACCT_STAT_ANON), 7 * PAGE);
        assert_int_equal(usage("/batch", MEMACCT_STAT_FILE), 6 * PAGE);

        /* A refusal in the middle of a batch fails that operation only. */
        assert_int_equal(memacct_batch_begin(m, &b), 0);
        assert_int_equal(memacct_batch_uncharge(b, NULL, PAGE, MEMACCT_STAT_ANON, 0), 0);
        assert_int_equal(memacct_batch_charge(b, NULL, 2 * PAGE, MEMACCT_STAT_ANON, 0), 1);
        assert_int_equal(memacct_batch_uncharge(b, NULL, PAGE, MEMACCT_STAT_SWAP, 0), 2);
        assert_int_equal(memacct_batch_charge(b, "/batch", PAGE, MEMACCT_STAT_OTHER, MEMACCT_KEEP), 3);
        assert_int_equal(memacct_batch_commit(b), 2);
        assert_int_equal(memacct_batch_result(b, 0, NULL), 0);
        assert_int_equal(memacct_batch_result(b, 1, &refused), -EDQUOT);
        assert_non_null(refused);
        assert_string_equal(refused, "/batch");
        assert_int_equal(memacct_batch_result(b, 2, NULL), -ERANGE);
        assert_int_equal(memacct_batch_result(b, 3, NULL), 0);
        b = memacct_batch_free(b);
        assert_int_equal(usage("/batch", -1), final);

        assert_int_equal(memacct_uncharge(m, "/batch", PAGE, MEMACCT_STAT_OTHER, MEMACCT_KEEP), 0);
        memacct_close(m);
        assert_int_equal(usage_soon("/batch", 0), 0);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_groups_limits_and_errors),
                cmocka_unit_test(test_charge_refused_names_group_and_raises_event),
                cmocka_unit_test(test_attach_move_and_client),
                cmocka_unit_test(test_session_charges_end_with_the_session),
                cmocka_unit_test(test_stock_is_drained_before_a_refusal),
                cmocka_unit_test(test_batch_of_10000_in_order),
                cmocka_unit_test(test_restart_charges_again_what_the_client_held),
        };
        int failed;

        /* A broken connection must be an error, never a signal. */
        signal(SIGPIPE, SIG_DFL);
        failed = cmocka_run_group_tests(tests, group_setup, group_teardown);
        if (failed)
                test_daemon_dump_log(&daemon_);
        failed = MIN(MAX(failed, 0), (int) ELEMENTSOF(tests));
        printf("%d passed, %d failed\n", (int) ELEMENTSOF(tests) - failed, failed);
        return failed ? 1 : 0;
}
