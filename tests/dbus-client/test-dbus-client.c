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
 * included, which must wake for an event another thread's call read.
 *
 * Usage is always checked from a socket connection of its own.
 *
 * With MEMACCT_TEST_RESTRICTED=1 the daemon runs with [access] read =
 * owner and [limits] sessions-per-uid = 2 (test-dbus-lib.sh restarts it
 * so), and only the tests of what that refuses run.
 */

#include <errno.h>
#include <grp.h>
#include <limits.h>
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
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include <memacct.h>

#define K UINT64_C(1024)
#define WAIT_MSEC 10000

static const char *bus_address;
static const char *socket_path;

static uint64_t now_msec(void) {
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * 1000 + (uint64_t) ts.tv_nsec / 1000000;
}

static void sleep_msec(unsigned msec) {
        struct timespec ts = { .tv_sec = msec / 1000, .tv_nsec = (long) (msec % 1000) * 1000000 };

        nanosleep(&ts, NULL);
}

static memacct *sock_open(void) {
        memacct *m = NULL;

        assert_int_equal(memacct_connect(socket_path, &m), 0);
        return m;
}

static memacct *bus_open(void) {
        memacct *m = NULL;

        assert_int_equal(memacct_connect_bus(bus_address, &m), 0);
        return m;
}

static void create(const char *path, unsigned set, uint64_t max, uint64_t high) {
        memacct *m = sock_open();
        memacct_limits l = { .set = set, .max = max, .high = high };

        assert_int_equal(memacct_create_group(m, path, &l, MEMACCT_NO_OWNER), 0);
        memacct_close(m);
}

static uint64_t current(const char *path) {
        memacct *m = sock_open();
        memacct_group_info *g = NULL;
        uint64_t v;

        assert_int_equal(memacct_get_group(m, path, NULL, MEMACCT_EXACT, &g), 0);
        v = g->current;
        memacct_group_info_free(g);
        memacct_close(m);
        return v;
}

/* Wait until current(@path) is @want. Return: the last value read. */
static uint64_t current_soon(const char *path, uint64_t want) {
        uint64_t deadline = now_msec() + WAIT_MSEC, v;

        while ((v = current(path)) != want && now_msec() < deadline)
                sleep_msec(20);
        return v;
}

/* The results of @what on the socket (@rs, message @es) and the bus (@rb,
 * @eb): both @want, and for an error the same message. (The messages are
 * copied as each call returns: memacct_last_error() keeps only the last
 * failure of a thread.) */
static void assert_same(const char *what, int rs, const char *es, int rb, const char *eb,
                        int want) {
        if (rs == want && rb == want && (want >= 0 || strcmp(es, eb) == 0))
                return;
        fprintf(stderr, "%s: socket %d (%s), bus %d (%s), want %d\n", what, rs, es, rb, eb, want);
        fail();
}

/* Copy @m's last error and refused path (or "-") after a call that returned @r. */
static void last_error(memacct *m, int r, char *buf, size_t size, char *refused, size_t rsize) {
        const char *e = r < 0 ? memacct_last_error(m) : NULL;
        const char *p = r < 0 ? memacct_refused_path(m) : NULL;

        snprintf(buf, size, "%s", e ? e : "-");
        snprintf(refused, rsize, "%s", p ? p : "-");
}

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

/* ---- every operation both ways, on twin trees ---- */

/*
 * A step runs on the socket handle against one tree (trees[0]) and on the
 * bus handle against another of the same shape (trees[1]); T("/x") is
 * the path /x in the tree of the side running. The two results must be
 * equal: the return value (and @want unless it is ANY), the message and
 * the refused path with the tree's name written /T, and whatever the step
 * read. So successes are compared too, without one side's change being
 * what the other side sees.
 *
 * In a child that dropped to another uid (as_uid()), a difference is
 * counted rather than failed: cmocka's fail() must not run there.
 */

#define ANY INT_MIN
#define NOBODY 65534u

static const char *trees[2];
static int side;                 /* 0: the socket, 1: the bus */
static bool in_child;
static unsigned soft_failures;
static unsigned compared;        /* the steps compared both ways */

static const char *T(const char *suffix) {
        static char buf[16][512];
        static unsigned next;
        char *p = buf[next++ % 16];

        snprintf(p, sizeof(buf[0]), "%s%s", trees[side], suffix);
        return p;
}

/* @s with every occurrence of @tree replaced by "/T", in place. */
static void untree(char *s, const char *tree) {
        size_t n = strlen(tree);
        char *p;

        while ((p = strstr(s, tree)) && (p[n] == 0 || p[n] == '/' || p[n] == ':' || p[n] == ' ' || p[n] == ')' ||
                                         p[n] == ';' || p[n] == '\'')) {
                p[1] = 'T';
                memmove(p + 2, p + n, strlen(p + n) + 1);
        }
}

static void differs(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void differs(const char *fmt, ...) {
        va_list ap;

        va_start(ap, fmt);
        vfprintf(stderr, fmt, ap);
        va_end(ap);
        fputc('\n', stderr);
        if (in_child)
                soft_failures++;
        else
                fail();
}

#define CHECK(cond)                                                                      \
        do {                                                                             \
                if (!(cond))                                                             \
                        differs("%s:%d: %s is false (uid %u)", __FILE__, __LINE__, #cond, \
                                (unsigned) geteuid());                                   \
        } while (0)

typedef struct Result {
        int r;
        char error[512], refused[512];
} Result;

static void result_of(memacct *m, int r, Result *ret) {
        last_error(m, r, ret->error, sizeof(ret->error), ret->refused, sizeof(ret->refused));
        ret->r = r;
        untree(ret->error, trees[side]);
        untree(ret->refused, trees[side]);
}

static void same_results(const char *what, const Result *rs, const Result *rb, int want) {
        compared++;
        if (rs->r == rb->r && (want == ANY || rs->r == want) &&
            (rs->r >= 0 || (strcmp(rs->error, rb->error) == 0 && strcmp(rs->refused, rb->refused) == 0)))
                return;
        differs("%s (uid %u):\n  socket %d (%s) refused by %s\n  bus    %d (%s) refused by %s\n  want %d",
                what, (unsigned) geteuid(), rs->r, rs->error, rs->refused, rb->r, rb->error, rb->refused,
                want);
}

/* @call (on a handle named m, with SIDE its side) on both: see above. */
#define TWIN(call, want)                                                  \
        do {                                                              \
                Result res_[2];                                           \
                for (side = 0; side < 2; side++) {                        \
                        memacct *m = side ? b : s;                        \
                        const int SIDE = side;                            \
                        (void) SIDE;                                      \
                        result_of(m, (call), &res_[side]);                \
                }                                                         \
                side = 0;                                                 \
                same_results(#call, &res_[0], &res_[1], (want));          \
        } while (0)

static bool counters_same(const memacct_counter *a, size_t na, const memacct_counter *b, size_t nb) {
        if (na != nb)
                return false;
        for (size_t i = 0; i < na; i++)
                if (strcmp(a[i].name, b[i].name) != 0 || a[i].value != b[i].value)
                        return false;
        return true;
}

/* Group infos of the two trees alike: every member a bus read fills, the
 * stat items only when @stats (over the bus they lag by a flush). */
static bool infos_same(const memacct_group_info *gs, const memacct_group_info *gb, bool stats) {
        char ps[512], pb[512];

        snprintf(ps, sizeof(ps), "%s", gs->path);
        snprintf(pb, sizeof(pb), "%s", gb->path);
        untree(ps, trees[0]);
        untree(pb, trees[1]);
        return strcmp(ps, pb) == 0 && gs->current == gb->current && gs->peak == gb->peak &&
               gs->max == gb->max && gs->high == gb->high && gs->low == gb->low && gs->min == gb->min &&
               gs->effective_min == gb->effective_min && gs->effective_low == gb->effective_low &&
               gs->failcnt == gb->failcnt &&
               /* A mirror's kernel usage is a live sample of the kernel
                * cgroup: the two reads are moments apart. Whether it is a
                * mirror must agree. */
               (gs->kernel_current == MEMACCT_NO_KERNEL_CURRENT) == (gb->kernel_current == MEMACCT_NO_KERNEL_CURRENT) &&
               counters_same(gs->events, gs->n_events, gb->events, gb->n_events) &&
               counters_same(gs->events_local, gs->n_events_local, gb->events_local, gb->n_events_local) &&
               (!stats || counters_same(gs->stat, gs->n_stat, gb->stat, gb->n_stat));
}

static void print_info(const char *who, const memacct_group_info *g) {
        fprintf(stderr, "  %s: %s current %llu peak %llu max %llu high %llu low %llu min %llu emin %llu "
                        "elow %llu failcnt %llu events.max %llu\n",
                who, g->path, (unsigned long long) g->current, (unsigned long long) g->peak,
                (unsigned long long) g->max, (unsigned long long) g->high, (unsigned long long) g->low,
                (unsigned long long) g->min, (unsigned long long) g->effective_min,
                (unsigned long long) g->effective_low, (unsigned long long) g->failcnt,
                (unsigned long long) (g->n_events > 2 ? g->events[2].value : 0));
}

static void same_infos(const char *what, memacct_group_info *g[2], bool stats) {
        compared++;
        if (g[0] && g[1] && infos_same(g[0], g[1], stats))
                return;
        if (g[0])
                print_info("socket", g[0]);
        if (g[1])
                print_info("bus", g[1]);
        differs("%s: the group reads differently", what);
}

static void same_lists(const char *what, memacct_group_list *l[2], bool stats) {
        size_t n = memacct_group_list_size(l[0]);

        compared++;
        if (!l[0] || !l[1] || memacct_group_list_size(l[1]) != n) {
                differs("%s: %zu groups over the socket, %zu over the bus", what, n,
                        memacct_group_list_size(l[1]));
                return;
        }
        for (size_t i = 0; i < n; i++)
                if (!infos_same(memacct_group_list_get(l[0], i), memacct_group_list_get(l[1], i), stats)) {
                        print_info("socket", memacct_group_list_get(l[0], i));
                        print_info("bus", memacct_group_list_get(l[1], i));
                        differs("%s: group %zu differs", what, i);
                }
}

/* Read @path of both trees (socket exact), waiting for the bus's stat items. */
static void same_reads_settled(memacct *s, memacct *b, const char *suffix) {
        uint64_t deadline = now_msec() + WAIT_MSEC;
        memacct_group_info *g[2] = {};

        for (;;) {
                side = 0;
                (void) memacct_get_group(s, T(suffix), NULL, MEMACCT_EXACT, &g[0]);
                side = 1;
                (void) memacct_get_group(b, T(suffix), NULL, 0, &g[1]);
                side = 0;
                if ((g[0] && g[1] && infos_same(g[0], g[1], true)) || now_msec() > deadline)
                        break;
                g[0] = memacct_group_info_free(g[0]);
                g[1] = memacct_group_info_free(g[1]);
                sleep_msec(50);
        }
        same_infos(suffix, g, true);
        memacct_group_info_free(g[0]);
        memacct_group_info_free(g[1]);
}

static void same_clients(const char *what, const memacct_client_info c[2]) {
        compared++;
        if (c[0].pid == c[1].pid && c[0].file == c[1].file && c[0].anon == c[1].anon && c[0].swap == c[1].swap &&
            c[0].shmem == c[1].shmem)
                return;
        differs("%s: socket pid %u anon %llu file %llu, bus pid %u anon %llu file %llu", what, c[0].pid,
                (unsigned long long) c[0].anon, (unsigned long long) c[0].file, c[1].pid,
                (unsigned long long) c[1].anon, (unsigned long long) c[1].file);
}

/* This process's memory cgroup ("/" when none is found). */
static void own_memory_cgroup(char *buf, size_t size) {
        FILE *f = fopen("/proc/self/cgroup", "re");
        char line[1024];

        snprintf(buf, size, "/");
        if (!f)
                return;
        while (fgets(line, sizeof(line), f)) {
                char *c = strchr(line, ':'), *path = c ? strchr(c + 1, ':') : NULL;

                if (!path)
                        continue;
                path[strcspn(path, "\n")] = 0;
                /* v1 memory, or the v2 unified line ("0::/x"). */
                if (strncmp(c + 1, "memory:", 7) == 0 || (c[1] == ':' && strcmp(buf, "/") == 0))
                        snprintf(buf, size, "%s", path + 1);
                if (strncmp(c + 1, "memory:", 7) == 0)
                        break;
        }
        fclose(f);
}

static void test_same_operations(void **state) {
        memacct *s = sock_open(), *b = bus_open();
        memacct_limits top = { .set = MEMACCT_LIMIT_MAX | MEMACCT_LIMIT_HIGH | MEMACCT_LIMIT_LOW |
                                      MEMACCT_LIMIT_MIN,
                               .max = 1024 * K, .high = 768 * K, .low = 256 * K, .min = 128 * K };
        memacct_limits max64 = { .set = MEMACCT_LIMIT_MAX, .max = 64 * K };
        memacct_limits low1g = { .set = MEMACCT_LIMIT_LOW, .low = 1024 * 1024 * K };
        memacct_limits max10 = { .set = MEMACCT_LIMIT_MAX, .max = 10 * K };
        memacct_limits max16 = { .set = MEMACCT_LIMIT_MAX, .max = 16 * K };
        memacct_limits nomax = { .set = MEMACCT_LIMIT_MAX | MEMACCT_LIMIT_HIGH, .max = MEMACCT_UNLIMITED,
                                 .high = MEMACCT_UNLIMITED };
        memacct_group_info *g[2] = {};
        memacct_group_list *l[2] = {};
        memacct_charge_result cr[2] = {};
        memacct_client_info c[2] = {};
        memacct_import_result ir[2] = {};
        unsigned moved[2] = {};
        char cg[512];

        (void) state;
        trees[0] = "/ts";
        trees[1] = "/tb";
        compared = 0;

        /* CreateGroup */
        TWIN(memacct_create_group(m, T(""), &top, MEMACCT_NO_OWNER), 0);
        TWIN(memacct_create_group(m, T("/u"), NULL, MEMACCT_NO_OWNER), 0);
        TWIN(memacct_create_group(m, T("/u/v"), &max64, MEMACCT_NO_OWNER), 0);
        TWIN(memacct_create_group(m, T("/w"), &low1g, MEMACCT_NO_OWNER), 0);
        TWIN(memacct_create_group(m, T("/d"), NULL, NOBODY), 0);
        TWIN(memacct_create_group(m, T(""), NULL, MEMACCT_NO_OWNER), -EEXIST);
        TWIN(memacct_create_group(m, T("/nope/x"), NULL, MEMACCT_NO_OWNER), -ENOENT);
        TWIN(memacct_create_group(m, T("/bad%name"), NULL, MEMACCT_NO_OWNER), -EINVAL);
        TWIN(memacct_create_group(m, T("/u/"), NULL, MEMACCT_NO_OWNER), -EINVAL);
        TWIN(memacct_create_group(m, "/", NULL, MEMACCT_NO_OWNER), -EEXIST);
        TWIN(memacct_create_group(m, "", NULL, MEMACCT_NO_OWNER), -EINVAL);

        /* GetGroup */
        TWIN(memacct_get_group(m, T(""), NULL, MEMACCT_EXACT, &g[SIDE]), 0);
        same_infos("a new group", g, true);
        g[0] = memacct_group_info_free(g[0]);
        g[1] = memacct_group_info_free(g[1]);
        TWIN(memacct_get_group(m, T("/nope"), NULL, 0, &g[SIDE]), -ENOENT);
        TWIN(memacct_get_group(m, "relative", NULL, 0, &g[SIDE]), -EINVAL);

        /* Charge, Uncharge: kept */
        TWIN(memacct_charge(m, T("/u"), 100 * K, MEMACCT_STAT_FILE, MEMACCT_KEEP, &cr[SIDE]), 0);
        TWIN(memacct_charge(m, T("/u"), 12 * K, MEMACCT_STAT_ANON, MEMACCT_KEEP, &cr[SIDE]), 0);
        TWIN(memacct_charge(m, T("/u/v"), 100 * K, MEMACCT_STAT_ANON, MEMACCT_KEEP, &cr[SIDE]), -EDQUOT);
        TWIN(memacct_charge(m, T("/u"), 2048 * K, MEMACCT_STAT_SHMEM, MEMACCT_KEEP, &cr[SIDE]), -EDQUOT);
        /* Past high: the reply says by how much, both ways. */
        TWIN(memacct_charge(m, T("/w"), 800 * K, MEMACCT_STAT_ANON, MEMACCT_KEEP, &cr[SIDE]), 0);
        compared++;
        CHECK(cr[0].over_high == cr[1].over_high && cr[0].throttle_usec == cr[1].throttle_usec &&
              cr[0].over_max == cr[1].over_max);
        CHECK(cr[1].over_high > 0);
        /* Above what any charge may be (MEM_CHARGE_MAX, 2^48), and an item out of range. */
        /* (-EOVERFLOW is INVALID_ARGUMENT on the wire, -EINVAL for the client.) */
        TWIN(memacct_charge(m, T("/u"), (UINT64_C(1) << 48) + 1, MEMACCT_STAT_ANON, MEMACCT_KEEP, &cr[SIDE]),
             -EINVAL);
        TWIN(memacct_charge(m, T("/u"), UINT64_MAX, MEMACCT_STAT_ANON, MEMACCT_KEEP, &cr[SIDE]), -EINVAL);
        TWIN(memacct_charge(m, T("/u"), 4 * K, MEMACCT_STAT_MAX, MEMACCT_KEEP, &cr[SIDE]), -EINVAL);
        TWIN(memacct_charge(m, T("/nope"), 4 * K, MEMACCT_STAT_ANON, MEMACCT_KEEP, &cr[SIDE]), -ENOENT);
        TWIN(memacct_uncharge(m, T("/u"), 200 * K, MEMACCT_STAT_FILE, MEMACCT_KEEP), -ERANGE);
        TWIN(memacct_uncharge(m, T("/u"), 50 * K, MEMACCT_STAT_FILE, MEMACCT_KEEP), 0);
        TWIN(memacct_uncharge(m, T("/u"), 1 * K, MEMACCT_STAT_SOCK, MEMACCT_KEEP), -ERANGE);
        TWIN(memacct_uncharge(m, T("/u"), (UINT64_C(1) << 48) + 1, MEMACCT_STAT_ANON, MEMACCT_KEEP), ANY);
        TWIN(memacct_uncharge(m, T("/w"), 800 * K, MEMACCT_STAT_ANON, MEMACCT_KEEP), 0);
        TWIN(memacct_get_group(m, T("/u"), NULL, MEMACCT_EXACT, &g[SIDE]), 0);
        same_infos("after the charges", g, false);
        g[0] = memacct_group_info_free(g[0]);
        g[1] = memacct_group_info_free(g[1]);

        /* SetLimits */
        TWIN(memacct_set_limits(m, T(""), &max10, 0), -EBUSY);
        TWIN(memacct_set_limits(m, T(""), &max10, MEMACCT_FORCE), 0);
        TWIN(memacct_get_group(m, T(""), NULL, 0, &g[SIDE]), 0);
        same_infos("a forced max", g, false);
        CHECK(g[1] && g[1]->max == 10 * K);
        g[0] = memacct_group_info_free(g[0]);
        g[1] = memacct_group_info_free(g[1]);
        TWIN(memacct_charge(m, T("/u"), 1 * K, MEMACCT_STAT_ANON, MEMACCT_KEEP, &cr[SIDE]), -EDQUOT);
        TWIN(memacct_set_limits(m, T(""), &nomax, 0), 0);
        TWIN(memacct_set_limits(m, T("/nope"), &max10, 0), -ENOENT);

        /* ResetPeak */
        TWIN(memacct_reset_peak(m, T("/u")), 0);
        TWIN(memacct_reset_peak(m, T("/nope")), -ENOENT);
        TWIN(memacct_get_group(m, T("/u"), NULL, MEMACCT_EXACT, &g[SIDE]), 0);
        same_infos("a reset peak", g, false);
        CHECK(g[1] && g[1]->peak == g[1]->current);
        g[0] = memacct_group_info_free(g[0]);
        g[1] = memacct_group_info_free(g[1]);

        /* ListGroups */
        TWIN(memacct_list_groups(m, T(""), MEMACCT_RECURSIVE | MEMACCT_EXACT, &l[SIDE]), 0);
        same_lists("a recursive list", l, false);
        CHECK(memacct_group_list_size(l[1]) == 5);
        l[0] = memacct_group_list_free(l[0]);
        l[1] = memacct_group_list_free(l[1]);
        TWIN(memacct_list_groups(m, T(""), 0, &l[SIDE]), 0);
        same_lists("the children", l, false);
        CHECK(memacct_group_list_size(l[1]) == 3);
        l[0] = memacct_group_list_free(l[0]);
        l[1] = memacct_group_list_free(l[1]);
        TWIN(memacct_list_groups(m, T("/nope"), 0, &l[SIDE]), -ENOENT);

        /* Attach and session charges: this process has a session on each
         * transport, one client (GetClient and MoveProcess count both). */
        TWIN(memacct_charge(m, NULL, 4 * K, MEMACCT_STAT_ANON, 0, &cr[SIDE]), -ENOTCONN);
        TWIN(memacct_uncharge(m, NULL, 4 * K, MEMACCT_STAT_ANON, 0), -ENOTCONN);
        TWIN(memacct_move(m, 0, T("/u"), &moved[SIDE]), -ENOTCONN);
        TWIN(memacct_attach(m, T("/nope")), -ENOENT);
        TWIN(memacct_attach(m, T("/w")), 0);
        TWIN(memacct_charge(m, NULL, 16 * K, MEMACCT_STAT_ANON, 0, &cr[SIDE]), 0);
        TWIN(memacct_charge(m, NULL, 8 * K, MEMACCT_STAT_FILE, 0, &cr[SIDE]), 0);
        /* Attached elsewhere; holding charges. */
        TWIN(memacct_charge(m, T("/u"), 4 * K, MEMACCT_STAT_ANON, 0, &cr[SIDE]), -EINVAL);
        TWIN(memacct_attach(m, T("/u")), -EBUSY);
        TWIN(memacct_charge(m, NULL, (UINT64_C(1) << 48) + 1, MEMACCT_STAT_ANON, 0, &cr[SIDE]), -EINVAL);
        TWIN(memacct_uncharge(m, NULL, 64 * K, MEMACCT_STAT_ANON, 0), -ERANGE);
        TWIN(memacct_get_client(m, 0, MEMACCT_EXACT, &c[SIDE]), 0);
        same_clients("GetClient of the caller", c);
        CHECK(c[1].pid == (uint32_t) getpid() && c[1].anon == 32 * K && c[1].file == 16 * K);
        TWIN(memacct_get_client(m, getpid(), MEMACCT_EXACT, &c[SIDE]), 0);
        same_clients("GetClient by pid", c);
        TWIN(memacct_get_client(m, 2147483646, 0, &c[SIDE]), -ENOENT);
        /* MoveProcess: the caller's own session, then both by pid, and back. */
        TWIN(memacct_move(m, 0, T("/u"), &moved[SIDE]), 0);
        compared++;
        CHECK(moved[0] == 1 && moved[1] == 1);
        TWIN(memacct_get_group(m, T("/u"), NULL, 0, &g[SIDE]), 0);
        same_infos("a moved session", g, false);
        g[0] = memacct_group_info_free(g[0]);
        g[1] = memacct_group_info_free(g[1]);
        TWIN(memacct_move(m, getpid(), T("/w"), &moved[SIDE]), 0);
        compared++;
        CHECK(moved[0] == 2 && moved[1] == 2);
        TWIN(memacct_move(m, 0, T("/u"), &moved[SIDE]), 0);
        TWIN(memacct_move(m, 0, T("/nope"), &moved[SIDE]), -ENOENT);
        TWIN(memacct_move(m, 2147483646, T("/u"), &moved[SIDE]), -ENOENT);
        /* 24 K held, into a group of max 16 K. */
        TWIN(memacct_set_limits(m, T("/u/v"), &max16, 0), 0);
        TWIN(memacct_move(m, 0, T("/u/v"), &moved[SIDE]), -EDQUOT);
        TWIN(memacct_uncharge(m, NULL, 16 * K, MEMACCT_STAT_ANON, 0), 0);
        TWIN(memacct_uncharge(m, NULL, 8 * K, MEMACCT_STAT_FILE, 0), 0);
        TWIN(memacct_uncharge(m, NULL, 1, MEMACCT_STAT_FILE, 0), -ERANGE);
        /* "auto": the mirror of our kernel cgroup, which is not imported
         * (and [cgroup] auto-create is off). */
        TWIN(memacct_attach(m, "auto"), ANY);
        TWIN(memacct_attach(m, ""), ANY);

        /* ImportCgroups */
        TWIN(memacct_import_cgroups(m, "/memacct-no-such-cgroup", T("/imp"), &ir[SIDE]), -ENOENT);
        TWIN(memacct_import_cgroups(m, "bad//cgroup", T("/imp"), &ir[SIDE]), -EINVAL);
        TWIN(memacct_import_cgroups(m, "/", "relative", &ir[SIDE]), -EINVAL);
        own_memory_cgroup(cg, sizeof(cg));
        if (strcmp(cg, "/") != 0) {
                /* Our own cgroup, a leaf that no other test touches. */
                TWIN(memacct_import_cgroups(m, cg, T("/imp"), &ir[SIDE]), ANY);
                compared++;
                CHECK(ir[0].created == ir[1].created && ir[0].updated == ir[1].updated &&
                      ir[0].unchanged == ir[1].unchanged);
                TWIN(memacct_import_cgroups(m, cg, T("/imp"), &ir[SIDE]), ANY);
                compared++;
                CHECK(ir[0].created == ir[1].created && ir[0].updated == ir[1].updated &&
                      ir[0].unchanged == ir[1].unchanged);
                TWIN(memacct_list_groups(m, T("/imp"), MEMACCT_RECURSIVE, &l[SIDE]), ANY);
                same_lists("the imported mirrors", l, false);
                l[0] = memacct_group_list_free(l[0]);
                l[1] = memacct_group_list_free(l[1]);
        } else
                fprintf(stderr, "SKIP: the import of a cgroup (this process is in the root memory cgroup)\n");

        /* Subscribe (its refusals; the events are test_events') */
        TWIN(memacct_subscribe(m, T("/nope")), -ENOENT);
        TWIN(memacct_subscribe(m, T("")), 0);

        /* RemoveGroup */
        TWIN(memacct_remove_group(m, T("")), -EBUSY);
        TWIN(memacct_remove_group(m, T("/nope")), -ENOENT);
        TWIN(memacct_remove_group(m, T("/u/v")), 0);
        TWIN(memacct_remove_group(m, T("/u/v")), -ENOENT);
        TWIN(memacct_remove_group(m, T("/u")), -EBUSY); /* the sessions are attached */
        TWIN(memacct_remove_group(m, "/"), ANY);

        /* The stat items, once the bus's have had their flush. */
        same_reads_settled(s, b, "");
        same_reads_settled(s, b, "/u");
        same_reads_settled(s, b, "/w");
        TWIN(memacct_uncharge(m, T("/u"), 50 * K, MEMACCT_STAT_FILE, MEMACCT_KEEP), 0);
        TWIN(memacct_uncharge(m, T("/u"), 12 * K, MEMACCT_STAT_ANON, MEMACCT_KEEP), 0);
        assert_int_equal(current("/ts"), 0);
        assert_int_equal(current("/tb"), 0);
        fprintf(stderr, "# test_same_operations: %u steps compared both ways\n", compared);
        memacct_close(s);
        memacct_close(b);
}

/* ---- refusals of a uid that is not root ---- */

/*
 * Run @fn in a child that dropped to uid and gid 65534 (and no groups),
 * which opens its own handles; its differences are counted there. Return
 * the child's exit status: 0 when nothing differed.
 */
static int as_nobody(void (*fn)(void)) {
        int status = 0;
        pid_t pid;

        fflush(stderr);
        pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
                if (setgroups(0, NULL) < 0 || setresgid(NOBODY, NOBODY, NOBODY) < 0 ||
                    setresuid(NOBODY, NOBODY, NOBODY) < 0) {
                        perror("dropping to uid 65534");
                        _exit(3);
                }
                in_child = true;
                soft_failures = 0;
                compared = 0;
                fn();
                fprintf(stderr, "# uid %u: %u steps compared both ways, %u differences\n",
                        (unsigned) geteuid(), compared, soft_failures);
                fflush(stderr);
                _exit(soft_failures ? 1 : 0);
        }
        assert_int_equal(waitpid(pid, &status, 0), pid);
        return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

static memacct *child_connect(bool bus) {
        memacct *m = NULL;
        int r = bus ? memacct_connect_bus(bus_address, &m) : memacct_connect(socket_path, &m);

        if (r < 0) {
                fprintf(stderr, "uid %u cannot reach the daemon over the %s: %s (%s)\n", (unsigned) geteuid(),
                        bus ? "bus" : "socket", strerror(-r), memacct_last_error(NULL) ?: "");
                _exit(4);
        }
        return m;
}

static pid_t parent_pid;

static void nobody_delegated(void) {
        memacct *s = child_connect(false), *b = child_connect(true);
        memacct_limits max1g = { .set = MEMACCT_LIMIT_MAX, .max = 1024 * 1024 * K };
        memacct_limits max64 = { .set = MEMACCT_LIMIT_MAX, .max = 64 * K };
        memacct_group_info *g[2] = {};
        memacct_group_list *l[2] = {};
        memacct_charge_result cr[2] = {};
        memacct_client_info c[2] = {};
        memacct_import_result ir[2] = {};
        unsigned moved[2] = {};

        /* Outside the delegated subtree, or above it. */
        TWIN(memacct_create_group(m, T("/y"), NULL, MEMACCT_NO_OWNER), -EPERM);
        TWIN(memacct_create_group(m, T("/r/y"), NULL, MEMACCT_NO_OWNER), -EPERM);
        TWIN(memacct_create_group(m, "/memacct-nobody", NULL, MEMACCT_NO_OWNER), -EPERM);
        TWIN(memacct_create_group(m, T("/d/gift"), NULL, 0), -EPERM);
        TWIN(memacct_create_group(m, T("/d/gift"), NULL, 4242), -EPERM);
        TWIN(memacct_remove_group(m, T("/r")), -EPERM);
        TWIN(memacct_remove_group(m, T("/d")), -EPERM);
        TWIN(memacct_set_limits(m, T("/r"), &max1g, 0), -EPERM);
        TWIN(memacct_set_limits(m, T("/d"), &max1g, 0), -EPERM);
        TWIN(memacct_set_limits(m, T("/d"), &max1g, MEMACCT_FORCE), -EPERM);
        TWIN(memacct_set_limits(m, T(""), &max1g, 0), -EPERM);
        TWIN(memacct_reset_peak(m, T("/r")), -EPERM);
        TWIN(memacct_charge(m, T("/r"), 4 * K, MEMACCT_STAT_ANON, MEMACCT_KEEP, &cr[SIDE]), -EPERM);
        TWIN(memacct_charge(m, T(""), 4 * K, MEMACCT_STAT_ANON, MEMACCT_KEEP, &cr[SIDE]), -EPERM);
        TWIN(memacct_uncharge(m, T("/r"), 4 * K, MEMACCT_STAT_ANON, MEMACCT_KEEP), -EPERM);
        TWIN(memacct_charge(m, T("/r"), 4 * K, MEMACCT_STAT_ANON, 0, &cr[SIDE]), -EPERM);
        TWIN(memacct_attach(m, T("/r")), -EPERM);
        TWIN(memacct_move(m, 0, T("/r"), &moved[SIDE]), -EPERM);
        TWIN(memacct_move(m, parent_pid, T("/d"), &moved[SIDE]), -EPERM);
        TWIN(memacct_import_cgroups(m, "/", T("/d/imp"), &ir[SIDE]), -EPERM);
        TWIN(memacct_import_cgroups(m, "/memacct-no-such-cgroup", NULL, &ir[SIDE]), -EPERM);
        /* Forcing a charge past max: root only on the socket; no bus form at all. */
        side = 0;
        CHECK(memacct_charge(s, T("/d"), 4 * K, MEMACCT_STAT_ANON, MEMACCT_KEEP | MEMACCT_FORCE, &cr[0]) ==
              -EPERM);
        CHECK(strcmp(memacct_last_error(s) ?: "", "only root forces a charge past max") == 0);
        side = 1;
        CHECK(memacct_charge(b, T("/d"), 4 * K, MEMACCT_STAT_ANON, MEMACCT_KEEP | MEMACCT_FORCE, &cr[1]) ==
              -EOPNOTSUPP);
        side = 0;
        compared++;

        /* Reads are open ([access] read = all). */
        TWIN(memacct_get_group(m, T("/r"), NULL, 0, &g[SIDE]), 0);
        same_infos("nobody reads root's group", g, false);
        g[0] = memacct_group_info_free(g[0]);
        g[1] = memacct_group_info_free(g[1]);
        TWIN(memacct_list_groups(m, T(""), MEMACCT_RECURSIVE, &l[SIDE]), 0);
        same_lists("nobody lists the tree", l, false);
        CHECK(memacct_group_list_size(l[1]) == 3);
        l[0] = memacct_group_list_free(l[0]);
        l[1] = memacct_group_list_free(l[1]);
        TWIN(memacct_get_client(m, parent_pid, MEMACCT_EXACT, &c[SIDE]), 0);
        same_clients("nobody reads root's client", c);
        TWIN(memacct_subscribe(m, T("/r")), 0);

        /* Inside it. */
        TWIN(memacct_create_group(m, T("/d/g"), &max64, NOBODY), 0);
        TWIN(memacct_create_group(m, T("/d/h"), NULL, MEMACCT_NO_OWNER), 0);
        TWIN(memacct_create_group(m, T("/d/g/x"), NULL, MEMACCT_NO_OWNER), 0);
        TWIN(memacct_set_limits(m, T("/d/g"), &max64, 0), 0);
        TWIN(memacct_set_limits(m, T("/d/h"), &max64, MEMACCT_FORCE), 0);
        TWIN(memacct_charge(m, T("/d/g/x"), 16 * K, MEMACCT_STAT_FILE, MEMACCT_KEEP, &cr[SIDE]), 0);
        TWIN(memacct_charge(m, T("/d"), 4 * K, MEMACCT_STAT_ANON, MEMACCT_KEEP, &cr[SIDE]), 0);
        TWIN(memacct_charge(m, T("/d/g"), 100 * K, MEMACCT_STAT_ANON, MEMACCT_KEEP, &cr[SIDE]), -EDQUOT);
        TWIN(memacct_charge(m, T("/d/h"), 600 * K, MEMACCT_STAT_ANON, MEMACCT_KEEP, &cr[SIDE]), -EDQUOT);
        TWIN(memacct_reset_peak(m, T("/d")), 0);
        TWIN(memacct_reset_peak(m, T("/d/g")), 0);
        TWIN(memacct_attach(m, T("/d/h")), 0);
        TWIN(memacct_charge(m, NULL, 8 * K, MEMACCT_STAT_ANON, 0, &cr[SIDE]), 0);
        TWIN(memacct_move(m, 0, T("/d/g"), &moved[SIDE]), 0);
        TWIN(memacct_move(m, getpid(), T("/d/h"), &moved[SIDE]), 0);
        compared++;
        CHECK(moved[0] == 2 && moved[1] == 2);
        TWIN(memacct_move(m, 0, T("/d/g"), &moved[SIDE]), 0);
        TWIN(memacct_get_client(m, 0, MEMACCT_EXACT, &c[SIDE]), 0);
        same_clients("nobody reads its own client", c);
        CHECK(c[1].pid == (uint32_t) getpid() && c[1].anon == 16 * K);
        TWIN(memacct_get_group(m, T("/d/g"), NULL, MEMACCT_EXACT, &g[SIDE]), 0);
        same_infos("nobody's group", g, false);
        CHECK(g[1] && g[1]->current == 16 * K + 8 * K);
        g[0] = memacct_group_info_free(g[0]);
        g[1] = memacct_group_info_free(g[1]);
        TWIN(memacct_uncharge(m, NULL, 8 * K, MEMACCT_STAT_ANON, 0), 0);
        TWIN(memacct_uncharge(m, T("/d/g/x"), 16 * K, MEMACCT_STAT_FILE, MEMACCT_KEEP), 0);
        TWIN(memacct_uncharge(m, T("/d"), 4 * K, MEMACCT_STAT_ANON, MEMACCT_KEEP), 0);
        TWIN(memacct_remove_group(m, T("/d/g/x")), 0);
        TWIN(memacct_remove_group(m, T("/d/h")), 0);
        memacct_close(s);
        memacct_close(b);
}

/* Root's side of the twin trees the children work in. */
static void make_nobody_trees(const char *ts, const char *tb) {
        memacct *s = sock_open();
        memacct_limits max1m = { .set = MEMACCT_LIMIT_MAX, .max = 1024 * K };
        memacct_limits max512 = { .set = MEMACCT_LIMIT_MAX, .max = 512 * K };

        trees[0] = ts;
        trees[1] = tb;
        for (side = 0; side < 2; side++) {
                assert_int_equal(memacct_create_group(s, T(""), &max1m, MEMACCT_NO_OWNER), 0);
                assert_int_equal(memacct_create_group(s, T("/r"), NULL, MEMACCT_NO_OWNER), 0);
                assert_int_equal(memacct_create_group(s, T("/d"), &max512, NOBODY), 0);
        }
        side = 0;
        memacct_close(s);
}

static void test_same_refusals_nonroot(void **state) {
        memacct *s;

        (void) state;
        if (geteuid() != 0) {
                fprintf(stderr, "SKIP: test_same_refusals_nonroot needs root, to drop to uid 65534\n");
                skip();
        }
        make_nobody_trees("/ns", "/nb");
        /* Something in root's client for nobody to read (outside the trees,
         * which must stay alike). */
        create("/nroot", 0, 0, 0);
        s = sock_open();
        assert_int_equal(memacct_charge(s, "/nroot", 12 * K, MEMACCT_STAT_ANON, 0, NULL), 0);
        parent_pid = getpid();
        assert_int_equal(as_nobody(nobody_delegated), 0);
        /* What nobody did inside /ns/d and /nb/d it undid. */
        assert_int_equal(current("/ns"), 0);
        assert_int_equal(current("/nb"), 0);
        assert_int_equal(current("/nroot"), 12 * K);
        memacct_close(s);
        assert_int_equal(current_soon("/nroot", 0), 0);
}

/* ---- what [access] read = owner and [limits] sessions-per-uid = 2 refuse ---- */

static void nobody_restricted(void) {
        memacct *s = child_connect(false), *b = child_connect(true), *s2 = NULL, *b2;
        memacct_group_info *g[2] = {};
        memacct_group_list *l[2] = {};
        memacct_client_info c[2] = {};
        Result rs, rb;
        int r;

        /* Reads of what is not delegated to us. */
        TWIN(memacct_get_group(m, T("/r"), NULL, 0, &g[SIDE]), -EPERM);
        TWIN(memacct_get_group(m, T(""), NULL, MEMACCT_EXACT, &g[SIDE]), -EPERM);
        TWIN(memacct_get_group(m, "/", NULL, 0, &g[SIDE]), -EPERM);
        TWIN(memacct_subscribe(m, T("/r")), -EPERM);
        TWIN(memacct_subscribe(m, "/"), -EPERM);
        TWIN(memacct_get_client(m, parent_pid, 0, &c[SIDE]), -EPERM);
        TWIN(memacct_get_client(m, 2147483646, 0, &c[SIDE]), -EPERM);
        /* ... and of what is. */
        TWIN(memacct_get_group(m, T("/d"), NULL, MEMACCT_EXACT, &g[SIDE]), 0);
        same_infos("nobody reads its delegated group", g, false);
        g[0] = memacct_group_info_free(g[0]);
        g[1] = memacct_group_info_free(g[1]);
        TWIN(memacct_subscribe(m, T("/d")), 0);
        TWIN(memacct_get_client(m, 0, 0, &c[SIDE]), 0);
        same_clients("nobody reads its own client", c);
        /* A list shows only what we may read: /d of each tree. */
        TWIN(memacct_list_groups(m, T(""), MEMACCT_RECURSIVE, &l[SIDE]), 0);
        same_lists("the visible part of the tree", l, false);
        CHECK(memacct_group_list_size(l[1]) == 1);
        l[0] = memacct_group_list_free(l[0]);
        l[1] = memacct_group_list_free(l[1]);
        TWIN(memacct_list_groups(m, T(""), 0, &l[SIDE]), 0);
        same_lists("the visible children", l, false);
        l[0] = memacct_group_list_free(l[0]);
        l[1] = memacct_group_list_free(l[1]);
        /* The whole tree: /ns/d and /nb/d over either transport. */
        side = 0;
        CHECK(memacct_list_groups(s, "/", MEMACCT_RECURSIVE, &l[0]) == 0);
        CHECK(memacct_list_groups(b, "/", MEMACCT_RECURSIVE, &l[1]) == 0);
        compared++;
        CHECK(memacct_group_list_size(l[0]) == memacct_group_list_size(l[1]));
        for (size_t i = 0; i < memacct_group_list_size(l[0]) && i < memacct_group_list_size(l[1]); i++)
                CHECK(strcmp(memacct_group_list_get(l[0], i)->path, memacct_group_list_get(l[1], i)->path) ==
                      0);
        l[0] = memacct_group_list_free(l[0]);
        l[1] = memacct_group_list_free(l[1]);

        /* Sessions: the socket connection is one, the bus session (opened
         * by Attach) the second; a third is refused on either transport. */
        TWIN(memacct_attach(m, T("/d")), 0);
        r = memacct_connect(socket_path, &s2);
        rs = (Result) { .r = r };
        snprintf(rs.error, sizeof(rs.error), "%s", memacct_last_error(NULL) ?: "-");
        snprintf(rs.refused, sizeof(rs.refused), "-");
        s2 = memacct_close(s2);
        b2 = child_connect(true);
        side = 1;
        result_of(b2, memacct_attach(b2, T("/d")), &rb);
        side = 0;
        same_results("a third session", &rs, &rb, -ENOSPC);
        CHECK(strcmp(rb.error, "too many sessions for uid 65534") == 0);
        memacct_close(b2);
        memacct_close(s);
        memacct_close(b);
}

static void test_same_refusals_restricted(void **state) {
        memacct *s;

        (void) state;
        if (geteuid() != 0) {
                fprintf(stderr, "SKIP: test_same_refusals_restricted needs root, to drop to uid 65534\n");
                skip();
        }
        make_nobody_trees("/os", "/ob");
        create("/oroot", 0, 0, 0);
        s = sock_open();
        assert_int_equal(memacct_charge(s, "/oroot", 12 * K, MEMACCT_STAT_ANON, 0, NULL), 0);
        parent_pid = getpid();
        assert_int_equal(as_nobody(nobody_restricted), 0);
        /* Root reads everything. */
        assert_int_equal(current("/oroot"), 12 * K);
        memacct_close(s);
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
