/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libmemacct over D-Bus (memacct_connect_bus()) against the real daemon,
 * which test-dbus-lib.sh starts on a private bus and socket
 * ($MEMACCT_TEST_BUS, $MEMACCT_TEST_SOCKET).
 *
 * What a bus handle promises: the buses are found as memacct.h says; what
 * has no bus form fails with -EOPNOTSUPP and says so; every other call
 * answers as the same call on a socket handle, results, errno and message
 * alike (each check makes the call both ways and compares: every
 * operation, on two trees of the same shape, and every refusal, root's
 * and those of a uid that was delegated a subtree); a session
 * charge belongs to the bus peer and ends with it; subscriptions deliver
 * the Event signals of their subtree and nothing else; and one handle
 * serves several threads at once, a thread asleep in memacct_next_event()
 * included, which must wake for an event another thread's call read;
 * and reclaim works on a bus handle as on the socket
 * (dbus-client-reclaim.c).
 *
 * Usage is always checked from a socket connection of its own.
 *
 * With MEMACCT_TEST_RESTRICTED=1 the daemon runs with [access] read =
 * owner and [limits] sessions-per-uid = 2 (test-dbus-lib.sh restarts it
 * so), and only the tests of what that refuses run.
 *
 * This file holds main() and the tests made once on each handle; the
 * tests on twin trees are in dbus-client-operations.c, their comparisons
 * in dbus-client-twin.c, the helpers all use in
 * tests/support/bus-test-util.c.
 */

#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include <memacct.h>

#include "bus-test-util.h"
#include "dbus-client-operations.h"
#include "dbus-client-reclaim.h"

/* ---- finding the bus ---- */

static void test_connect_buses(void **state) {
        memacct *m = NULL;
        char *saved_system = getenv("DBUS_SYSTEM_BUS_ADDRESS"), *saved_session;

        (void) state;
        saved_system = saved_system ? strdup(saved_system) : NULL;
        saved_session = getenv("DBUS_SESSION_BUS_ADDRESS");
        saved_session = saved_session ? strdup(saved_session) : NULL;

        m = bus_open();
        assert_true(strncmp(memacct_server(m), "org.memacct1 :", 14) == 0);
        assert_int_equal(memacct_peer_pid(m), getpid());
        memacct_close(m);

        setenv("DBUS_SYSTEM_BUS_ADDRESS", bus_address, 1);
        setenv("DBUS_SESSION_BUS_ADDRESS", "unix:path=/nonexistent/bus", 1);
        assert_int_equal(memacct_connect_bus("system", &m), 0);
        memacct_close(m);
        /* NULL is the system bus, whoever calls (as systemctl). */
        assert_int_equal(memacct_connect_bus(NULL, &m), 0);
        memacct_close(m);
        assert_int_equal(memacct_connect_bus("user", &m), -ENOENT);

        setenv("DBUS_SESSION_BUS_ADDRESS", bus_address, 1);
        setenv("DBUS_SYSTEM_BUS_ADDRESS", "unix:path=/nonexistent/bus", 1);
        assert_int_equal(memacct_connect_bus("user", &m), 0);
        memacct_close(m);
        /* Never the user bus, not even for a user. */
        assert_int_equal(memacct_connect_bus(NULL, &m), -ENOENT);

        assert_int_equal(memacct_connect_bus("unix:path=/nonexistent/bus", &m), -ENOENT);
        assert_true(memacct_connect_bus("no-such-transport:x=y", &m) < 0);
        assert_int_equal(memacct_connect_bus("", &m), -EINVAL);
        assert_int_equal(memacct_connect_bus(bus_address, NULL), -EINVAL);

        if (saved_system)
                setenv("DBUS_SYSTEM_BUS_ADDRESS", saved_system, 1);
        else
                unsetenv("DBUS_SYSTEM_BUS_ADDRESS");
        if (saved_session)
                setenv("DBUS_SESSION_BUS_ADDRESS", saved_session, 1);
        else
                unsetenv("DBUS_SESSION_BUS_ADDRESS");
        free(saved_system);
        free(saved_session);
}

/* ---- what has no bus form ---- */

static void assert_unsupported(memacct *b, int r) {
        assert_int_equal(r, -EOPNOTSUPP);
        assert_non_null(memacct_last_error(b));
        assert_non_null(strstr(memacct_last_error(b), "no D-Bus form"));
}

static void test_unsupported(void **state) {
        memacct *b = bus_open();
        memacct_batch *batch = NULL;
        memacct_group_info *g = NULL;
        uint64_t v;

        (void) state;
        create("/un", 0, 0, 0);
        assert_int_equal(memacct_attach(b, "/un"), 0);
        assert_unsupported(b, memacct_charge_stocked(b, 4 * K, MEMACCT_STAT_ANON));
        /* A second time too: nothing was set up by the first. */
        assert_unsupported(b, memacct_charge_stocked(b, 4 * K, MEMACCT_STAT_ANON));
        assert_unsupported(b, memacct_uncharge_stocked(b, 4 * K, MEMACCT_STAT_ANON));
        assert_unsupported(b, memacct_stock_drain(b));
        assert_unsupported(b, memacct_stock_get(b, MEMACCT_STAT_ANON, &v, &v));
        assert_unsupported(b, memacct_batch_begin(b, &batch));
        assert_null(batch);
        assert_unsupported(b, memacct_charge(b, "/un", 4 * K, MEMACCT_STAT_ANON,
                                             MEMACCT_KEEP | MEMACCT_FORCE, NULL));
        assert_unsupported(b, memacct_get_group(b, "/un", "/un", 0, &g));
        assert_null(g);
        assert_int_equal(current("/un"), 0);

        /* Argument checks come first, as on the socket. */
        assert_int_equal(memacct_charge_stocked(b, 4 * K, 99), -EINVAL);
        assert_int_equal(memacct_charge(b, NULL, 4 * K, 0, MEMACCT_KEEP, NULL), -EINVAL);

        /* Harmless settings are accepted. */
        assert_int_equal(memacct_set_timeout(b, 5000), 0);
        assert_int_equal(memacct_set_reconnect(b, 3), 0);
        assert_int_equal(memacct_reconnect_count(b), 0);
        assert_int_equal(memacct_get_group(b, "/un", "/", 0, &g), 0);
        memacct_group_info_free(g);
        memacct_close(b);
}

/* ---- the same answers ---- */

static void assert_counters_equal(const memacct_counter *a, size_t na, const memacct_counter *b,
                                  size_t nb) {
        assert_int_equal(na, nb);
        for (size_t i = 0; i < na; i++) {
                assert_string_equal(a[i].name, b[i].name);
                assert_int_equal(a[i].value, b[i].value);
        }
}

/* Every member a bus read fills: all of them from a daemon with the Owner,
 * NChildren, NSessions, MemoryKept and MemorySession properties, session
 * as the stat items, from the statistics (compared apart, once settled). */
static void assert_group_equal(const memacct_group_info *s, const memacct_group_info *b) {
        assert_string_equal(b->path, s->path);
        assert_int_equal(b->current, s->current);
        assert_int_equal(b->peak, s->peak);
        assert_int_equal(b->max, s->max);
        assert_int_equal(b->high, s->high);
        assert_int_equal(b->low, s->low);
        assert_int_equal(b->min, s->min);
        assert_int_equal(b->effective_min, s->effective_min);
        assert_int_equal(b->effective_low, s->effective_low);
        assert_int_equal(b->failcnt, s->failcnt);
        assert_counters_equal(b->events, b->n_events, s->events, s->n_events);
        assert_counters_equal(b->events_local, b->n_events_local, s->events_local,
                              s->n_events_local);
        assert_counters_equal(b->stat, b->n_stat, s->stat, s->n_stat);
        assert_int_equal(b->owner, s->owner);
        assert_int_equal(b->nr_children, s->nr_children);
        assert_int_equal(b->nr_sessions, s->nr_sessions);
        assert_int_equal(b->kept, s->kept);
}

/*
 * @path over the bus, compared with an exact read over the socket. The
 * bus has no way to ask for a flush of the per-thread statistics, and the
 * daemon's Group properties are read without one: the stat items over the
 * bus are at most one flush interval old. So the stat items are waited
 * for (the daemon's default interval is 2 s), and everything else must be
 * equal at once.
 */
static void assert_read_equal(memacct *s, memacct *b, const char *path) {
        uint64_t deadline = now_msec() + WAIT_MSEC;
        memacct_group_info *gs = NULL, *gb = NULL;

        assert_int_equal(memacct_get_group(s, path, NULL, MEMACCT_EXACT, &gs), 0);
        for (;;) {
                bool same = true;

                assert_int_equal(memacct_get_group(b, path, NULL, MEMACCT_EXACT, &gb), 0);
                for (size_t i = 0; i < gs->n_stat && i < gb->n_stat; i++)
                        same = same && gb->stat[i].value == gs->stat[i].value;
                if (same || now_msec() > deadline)
                        break;
                gb = memacct_group_info_free(gb);
                sleep_msec(50);
        }
        assert_group_equal(gs, gb);
        memacct_group_info_free(gs);
        memacct_group_info_free(gb);
}

static void test_same_reads(void **state) {
        memacct *s = sock_open(), *b = bus_open();
        memacct_limits l = { .set = MEMACCT_LIMIT_MAX | MEMACCT_LIMIT_LOW | MEMACCT_LIMIT_MIN,
                             .max = 1024 * K, .low = 256 * K, .min = 64 * K };
        memacct_group_list *ls = NULL, *lb = NULL;
        memacct_group_info *gb = NULL;

        (void) state;
        /* Made over the bus, read both ways. */
        assert_int_equal(memacct_create_group(b, "/rd", &l, MEMACCT_NO_OWNER), 0);
        assert_int_equal(memacct_create_group(b, "/rd/a", NULL, MEMACCT_NO_OWNER), 0);
        assert_int_equal(memacct_create_group(b, "/rd/a/x", NULL, MEMACCT_NO_OWNER), 0);
        assert_int_equal(memacct_create_group(b, "/rd/b", &l, MEMACCT_NO_OWNER), 0);
        assert_int_equal(memacct_charge(b, "/rd/a/x", 100 * K, MEMACCT_STAT_FILE, MEMACCT_KEEP,
                                        NULL), 0);
        assert_int_equal(memacct_charge(s, "/rd/b", 30 * K, MEMACCT_STAT_SHMEM, MEMACCT_KEEP, NULL),
                         0);
        assert_int_equal(memacct_charge(b, "/rd/b", 2048 * K, MEMACCT_STAT_ANON, MEMACCT_KEEP, NULL),
                         -EDQUOT);
        l = (memacct_limits) { .set = MEMACCT_LIMIT_HIGH, .high = 16 * K };
        assert_int_equal(memacct_set_limits(b, "/rd/a", &l, 0), 0);

        assert_read_equal(s, b, "/rd/a/x");
        assert_read_equal(s, b, "/rd/b");
        assert_read_equal(s, b, "/rd");
        assert_int_equal(memacct_get_group(b, "/rd/a/x", NULL, 0, &gb), 0);
        assert_int_equal(gb->current, 100 * K);
        assert_int_equal(gb->stat[MEMACCT_STAT_FILE].value, 100 * K);
        assert_string_equal(gb->stat[MEMACCT_STAT_FILE].name, "file");
        gb = memacct_group_info_free(gb);
        assert_int_equal(memacct_get_group(b, "/rd/b", NULL, 0, &gb), 0);
        assert_int_equal(gb->failcnt, 1);
        assert_int_equal(gb->max, 1024 * K);
        assert_int_equal(gb->high, MEMACCT_UNLIMITED);
        gb = memacct_group_info_free(gb);

        assert_int_equal(memacct_list_groups(s, "/rd", MEMACCT_RECURSIVE | MEMACCT_EXACT, &ls), 0);
        assert_int_equal(memacct_list_groups(b, "/rd", MEMACCT_RECURSIVE | MEMACCT_EXACT, &lb), 0);
        assert_int_equal(memacct_group_list_size(lb), memacct_group_list_size(ls));
        assert_true(memacct_group_list_size(lb) >= 3);
        /* (The stat items settled above: nothing was charged since.) */
        for (size_t i = 0; i < memacct_group_list_size(ls); i++)
                assert_group_equal(memacct_group_list_get(ls, i), memacct_group_list_get(lb, i));
        ls = memacct_group_list_free(ls);
        lb = memacct_group_list_free(lb);
        /* Children only. */
        assert_int_equal(memacct_list_groups(s, "/rd", 0, &ls), 0);
        assert_int_equal(memacct_list_groups(b, "/rd", 0, &lb), 0);
        assert_int_equal(memacct_group_list_size(lb), memacct_group_list_size(ls));
        for (size_t i = 0; i < memacct_group_list_size(ls); i++)
                assert_group_equal(memacct_group_list_get(ls, i), memacct_group_list_get(lb, i));
        memacct_group_list_free(ls);
        memacct_group_list_free(lb);

        assert_int_equal(memacct_reset_peak(b, "/rd/b"), 0);
        assert_int_equal(memacct_uncharge(b, "/rd/a/x", 100 * K, MEMACCT_STAT_FILE, MEMACCT_KEEP), 0);
        assert_int_equal(memacct_uncharge(b, "/rd/b", 30 * K, MEMACCT_STAT_SHMEM, MEMACCT_KEEP), 0);
        assert_int_equal(current("/rd"), 0);
        memacct_close(s);
        memacct_close(b);
}

static void test_same_errors(void **state) {
        memacct *s = sock_open(), *b = bus_open();
        memacct_limits l = { .set = MEMACCT_LIMIT_MAX, .max = 10 * K };
        memacct_group_info *g = NULL;
        memacct_group_list *list = NULL;
        memacct_client_info c;
        char es[512], eb[512], ps[512], pb[512];
        int rs, rb;

        (void) state;
        create("/er", MEMACCT_LIMIT_MAX, 64 * K, 0);
        create("/er/a", MEMACCT_LIMIT_MAX, 32 * K, 0);
        create("/er/b", 0, 0, 0);

/* @call (on a handle named m) both ways: the same result and, for an
 * error, the same message. */
#define BOTH(call, want)                                          \
        do {                                                      \
                memacct *m = s;                                   \
                rs = (call);                                      \
                last_error(s, rs, es, sizeof(es), ps, sizeof(ps)); \
                m = b;                                            \
                rb = (call);                                      \
                last_error(b, rb, eb, sizeof(eb), pb, sizeof(pb)); \
                (void) m;                                         \
                assert_same(#call, rs, es, rb, eb, (want));       \
        } while (0)

        BOTH(memacct_create_group(m, "/er", NULL, MEMACCT_NO_OWNER), -EEXIST);
        BOTH(memacct_create_group(m, "/er/no/x", NULL, MEMACCT_NO_OWNER), -ENOENT);
        BOTH(memacct_create_group(m, "/er/bad name", NULL, MEMACCT_NO_OWNER), -EINVAL);
        BOTH(memacct_create_group(m, "relative", NULL, MEMACCT_NO_OWNER), -EINVAL);
        BOTH(memacct_remove_group(m, "/er"), -EBUSY);
        BOTH(memacct_remove_group(m, "/er/none"), -ENOENT);
        BOTH(memacct_get_group(m, "/er/none", NULL, 0, &g), -ENOENT);
        BOTH(memacct_list_groups(m, "/er/none", 0, &list), -ENOENT);
        BOTH(memacct_reset_peak(m, "/er/none"), -ENOENT);
        BOTH(memacct_set_limits(m, "/er/none", &l, 0), -ENOENT);
        BOTH(memacct_charge(m, "/er/none", 4 * K, MEMACCT_STAT_ANON, MEMACCT_KEEP, NULL), -ENOENT);
        /* 8 K kept in /er/a each way: 16 K, above a max of 10 K. */
        BOTH(memacct_charge(m, "/er/a", 8 * K, MEMACCT_STAT_ANON, MEMACCT_KEEP, NULL), 0);
        BOTH(memacct_set_limits(m, "/er/a", &l, 0), -EBUSY);
        BOTH(memacct_uncharge(m, "/er/a", 64 * K, MEMACCT_STAT_ANON, MEMACCT_KEEP), -ERANGE);
        BOTH(memacct_uncharge(m, "/er/a", 4 * K, MEMACCT_STAT_FILE, MEMACCT_KEEP), -ERANGE);
        BOTH(memacct_charge(m, NULL, 4 * K, MEMACCT_STAT_ANON, 0, NULL), -ENOTCONN);
        BOTH(memacct_uncharge(m, NULL, 4 * K, MEMACCT_STAT_ANON, 0), -ENOTCONN);
        BOTH(memacct_attach(m, "/er/none"), -ENOENT);
        BOTH(memacct_move(m, 0, "/er/none", NULL), -ENOENT);
        BOTH(memacct_get_client(m, 2147483646, 0, &c), -ENOENT);
        BOTH(memacct_subscribe(m, "/er/none"), -ENOENT);

        /* A refusal names the group whose max refused it, both ways:
         * /er/a's own max (16 K + 40 K > 32 K), then /er's (16 K in /er/a
         * and 60 K in /er/b > 64 K). */
        BOTH(memacct_charge(m, "/er/a", 40 * K, MEMACCT_STAT_ANON, MEMACCT_KEEP, NULL), -EDQUOT);
        assert_string_equal(ps, "/er/a");
        assert_string_equal(pb, "/er/a");
        BOTH(memacct_charge(m, "/er/b", 60 * K, MEMACCT_STAT_ANON, MEMACCT_KEEP, NULL), -EDQUOT);
        assert_string_equal(ps, "/er");
        assert_string_equal(pb, "/er");
        BOTH(memacct_uncharge(m, "/er/a", 8 * K, MEMACCT_STAT_ANON, MEMACCT_KEEP), 0);
        assert_int_equal(current("/er"), 0);
#undef BOTH
        memacct_close(s);
        memacct_close(b);
}

/* ---- the session is the bus peer ---- */

static void test_session(void **state) {
        memacct *s = sock_open(), *b = bus_open();
        memacct_charge_result rb = {}, rs = {};
        unsigned sessions = 0;

        (void) state;
        create("/ss", MEMACCT_LIMIT_MAX | MEMACCT_LIMIT_HIGH, 1024 * K, 32 * K);
        create("/ss/a", 0, 0, 0);
        create("/ss/b", 0, 0, 0);
        assert_int_equal(memacct_attach(b, "/ss/a"), 0);
        assert_int_equal(memacct_charge(b, NULL, 64 * K, MEMACCT_STAT_ANON, 0, &rb), 0);
        assert_int_equal(current("/ss/a"), 64 * K);
        /* Above high: the reply says so, as the socket's does. */
        assert_int_equal(memacct_attach(s, "/ss/b"), 0);
        assert_int_equal(memacct_charge(s, NULL, 1, MEMACCT_STAT_ANON, 0, &rs), 0);
        assert_int_equal(memacct_uncharge(s, NULL, 1, MEMACCT_STAT_ANON, 0), 0);
        assert_true(rb.over_high > 0);
        assert_int_equal(rb.over_high, 32 * K);
        assert_int_equal(rb.over_max, 0);
        assert_int_equal(rb.margin, MEMACCT_UNLIMITED);
        assert_true(rs.over_high >= rb.over_high);

        assert_int_equal(memacct_uncharge(b, NULL, 16 * K, MEMACCT_STAT_ANON, 0), 0);
        assert_int_equal(current("/ss/a"), 48 * K);
        assert_int_equal(memacct_uncharge(b, NULL, 64 * K, MEMACCT_STAT_ANON, 0), -ERANGE);

        /* The peer's session moves with its charges (pid 0: its own). */
        assert_int_equal(memacct_move(b, 0, "/ss/b", &sessions), 0);
        assert_int_equal(sessions, 1);
        assert_int_equal(current("/ss/a"), 0);
        assert_int_equal(current("/ss/b"), 48 * K);

        /* Leaving the bus ends the session and releases its charges. */
        memacct_close(b);
        assert_int_equal(current_soon("/ss/b", 0), 0);
        memacct_close(s);
}

/* ---- events ---- */

static void test_events(void **state) {
        memacct *s = sock_open(), *b = bus_open(), *ss = sock_open();
        memacct_event ev, es;
        uint64_t t0;

        (void) state;
        create("/ev", MEMACCT_LIMIT_MAX, 64 * K, 0);
        create("/ev/a", MEMACCT_LIMIT_MAX, 8 * K, 0);
        create("/ew", MEMACCT_LIMIT_MAX, 8 * K, 0);
        assert_int_equal(memacct_subscribe(b, "/ev/a"), 0);
        assert_int_equal(memacct_subscribe(ss, "/ev/a"), 0);
        assert_int_equal(memacct_next_event(b, 0, &ev), 0);
        t0 = now_msec();
        assert_int_equal(memacct_next_event(b, 200, &ev), 0);
        assert_true(now_msec() - t0 >= 190);

        /* /ew is another subtree, /ev above the subscription: not ours. */
        assert_int_equal(memacct_charge(s, "/ew", 16 * K, 0, MEMACCT_KEEP, NULL), -EDQUOT);
        assert_int_equal(memacct_charge(s, "/ev", 100 * K, 0, MEMACCT_KEEP, NULL), -EDQUOT);
        assert_int_equal(memacct_charge(s, "/ev/a", 16 * K, 0, MEMACCT_KEEP, NULL), -EDQUOT);
        for (int i = 0; i < 2; i++) {
                assert_int_equal(memacct_next_event(ss, WAIT_MSEC, &es), 1);
                assert_int_equal(memacct_next_event(b, WAIT_MSEC, &ev), 1);
                assert_string_equal(ev.path, es.path);
                assert_string_equal(ev.name, es.name);
                assert_int_equal(ev.count, es.count);
                assert_string_equal(ev.path, "/ev/a");
        }
        assert_int_equal(memacct_next_event(b, 300, &ev), 0);
        assert_int_equal(memacct_next_event(ss, 0, &es), 0);

        /* A second subscription widens it. */
        assert_int_equal(memacct_subscribe(b, "/ew"), 0);
        assert_int_equal(memacct_charge(s, "/ew", 16 * K, 0, MEMACCT_KEEP, NULL), -EDQUOT);
        assert_int_equal(memacct_next_event(b, WAIT_MSEC, &ev), 1);
        assert_string_equal(ev.path, "/ew");
        memacct_close(s);
        memacct_close(b);
        memacct_close(ss);
}

/* ---- threads ---- */

#define THREADS 4
#define PAIRS 150

static memacct *shared;
static atomic_bool stop;
static atomic_int errors;

static void *charger(void *arg) {
        (void) arg;
        for (int i = 0; i < PAIRS; i++) {
                if (memacct_charge(shared, "/th", 4 * K, MEMACCT_STAT_ANON, MEMACCT_KEEP, NULL) < 0)
                        errors++;
                if (memacct_uncharge(shared, "/th", 4 * K, MEMACCT_STAT_ANON, MEMACCT_KEEP) < 0)
                        errors++;
        }
        return NULL;
}

static void *reader(void *arg) {
        (void) arg;
        while (!stop) {
                memacct_group_info *g = NULL;

                if (memacct_get_group(shared, "/th", NULL, 0, &g) < 0)
                        errors++;
                memacct_group_info_free(g);
        }
        return NULL;
}

typedef struct Waiter {
        int r;
        uint64_t msec;  /* how long it waited */
        uint64_t woke;  /* when it woke (now_msec()) */
        memacct_event ev;
} Waiter;

static void *waiter(void *arg) {
        Waiter *w = arg;
        uint64_t t0 = now_msec();

        w->r = memacct_next_event(shared, 3 * WAIT_MSEC, &w->ev);
        w->woke = now_msec();
        w->msec = w->woke - t0;
        return NULL;
}

static void test_threads(void **state) {
        pthread_t t[THREADS], rt, wt;
        Waiter w = {};
        memacct *s = sock_open();
        uint64_t t0;

        (void) state;
        create("/th", MEMACCT_LIMIT_MAX, 1024 * K, 0);
        create("/tw", MEMACCT_LIMIT_MAX, 4 * K, 0);
        shared = bus_open();
        assert_int_equal(memacct_subscribe(shared, "/tw"), 0);

        /* One thread asleep for an event while others call on the handle:
         * their calls read the signal; the sleeper must still wake. */
        assert_int_equal(pthread_create(&wt, NULL, waiter, &w), 0);
        assert_int_equal(pthread_create(&rt, NULL, reader, NULL), 0);
        for (int i = 0; i < THREADS; i++)
                assert_int_equal(pthread_create(&t[i], NULL, charger, NULL), 0);
        sleep_msec(200);
        t0 = now_msec();
        assert_int_equal(memacct_charge(s, "/tw", 8 * K, 0, MEMACCT_KEEP, NULL), -EDQUOT);
        assert_int_equal(pthread_join(wt, NULL), 0);
        for (int i = 0; i < THREADS; i++)
                assert_int_equal(pthread_join(t[i], NULL), 0);
        stop = true;
        assert_int_equal(pthread_join(rt, NULL), 0);

        assert_int_equal(errors, 0);
        assert_int_equal(w.r, 1);
        assert_string_equal(w.ev.path, "/tw");
        assert_string_equal(w.ev.name, "max");
        /* Woken by the signal, not by its timeout. */
        assert_true(w.msec < WAIT_MSEC);
        fprintf(stderr, "# the sleeping thread had its event %llu ms after it was raised\n",
                (unsigned long long) (w.woke - t0));
        assert_int_equal(current("/th"), 0);
        shared = memacct_close(shared);
        memacct_close(s);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_connect_buses),     cmocka_unit_test(test_unsupported),
                cmocka_unit_test(test_same_reads),        cmocka_unit_test(test_same_errors),
                cmocka_unit_test(test_same_operations),   cmocka_unit_test(test_same_refusals_nonroot),
                cmocka_unit_test(test_session),           cmocka_unit_test(test_events),
                cmocka_unit_test(test_threads),
                cmocka_unit_test(test_reclaim_both_ways), cmocka_unit_test(test_reclaim_proactive),
                cmocka_unit_test(test_reclaim_no_wait),   cmocka_unit_test(test_reclaim_cannot),
                cmocka_unit_test(test_reclaim_region),    cmocka_unit_test(test_reclaim_shared_handle),
                cmocka_unit_test(test_reclaim_fd_after_call), cmocka_unit_test(test_reclaim_not_from_others),
        };
        const struct CMUnitTest restricted[] = {
                cmocka_unit_test(test_same_refusals_restricted),
        };
        const char *mode = getenv("MEMACCT_TEST_RESTRICTED");

        bus_address = getenv("MEMACCT_TEST_BUS");
        socket_path = getenv("MEMACCT_TEST_SOCKET");
        if (!bus_address || !socket_path) {
                fprintf(stderr, "MEMACCT_TEST_BUS and MEMACCT_TEST_SOCKET must be set "
                                "(run test-dbus-lib.sh)\n");
                return 1;
        }
        if (mode && strcmp(mode, "1") == 0)
                return cmocka_run_group_tests(restricted, NULL, NULL);
        return cmocka_run_group_tests(tests, NULL, NULL);
}
