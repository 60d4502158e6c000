/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Reclaim on a bus handle (memacct-reclaim.h), compared with the socket:
 * on twin trees (dbus-client-twin.h) a holder on a socket handle and one
 * on a bus handle hold the same, each serving the daemon's requests from
 * a thread of its own, and the same steps made on a socket handle and a
 * bus handle must give the same results, the holders asked and giving
 * back the same. What a client is promised: a charge refused at a max
 * waits while reclaimable holders give back, whichever transport the
 * holder and the charger use; memacct_reclaim() reports what came back;
 * MEMACCT_NO_WAIT is refused without asking anyone; a holder that cannot
 * give back leaves the charge refused, answered rather than late; and a
 * bus handle's requests are served (memacct_fd() and memacct_process(),
 * or memacct_next_event()) while other threads' calls on the same handle
 * read them off the bus.
 *
 * Who was asked, and how much, is read from the holders' callbacks and
 * from the daemon's sessions over the socket (the bus's ListSessions has
 * no reclaim counters). No wait is timed: a request served late counts
 * late with the daemon and leaves the charge refused, which the checks see.
 */

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
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
#include "dbus-client-reclaim.h"
#include "dbus-client-twin.h"

#define MIN(a, b) ((a) < (b) ? (a) : (b))

/* How a holder's thread serves its handle. */
typedef enum Serve {
        SERVE_FD,         /* poll() memacct_fd(), then memacct_process(m, 0): an event loop */
        SERVE_PROCESS,    /* memacct_process() with a long timeout */
        SERVE_NEXT_EVENT, /* memacct_next_event() with a long timeout, as memacctctl hold */
} Serve;

/* A cache that holds a session charge and gives it back when asked. */
typedef struct Holder {
        memacct *m;
        const char *region; /* NULL: memory */
        int item;           /* memory's stat item held */
        bool by_stat;       /* declared with memacct_set_reclaimable_stat() */
        bool cannot;        /* the callback gives nothing back */
        Serve serve;
        _Atomic uint64_t held, asked, given;
        _Atomic unsigned calls;
        char asked_region[64]; /* written before calls is raised */
        atomic_bool stop, exited;
        int stop_pipe[2];
        int r; /* the loop's error, read after the join */
        pthread_t thread;
} Holder;

static int64_t give_back(memacct *m, uint64_t bytes, const char *region, void *userdata) {
        Holder *h = userdata;
        uint64_t give = MIN(bytes, (uint64_t) h->held);
        int r = 0;

        snprintf(h->asked_region, sizeof(h->asked_region), "%s", region ? region : "memory");
        h->asked += bytes;
        if (!h->cannot && give > 0)
                r = h->region ? memacct_uncharge_region(m, NULL, h->region, give, 0)
                              : memacct_uncharge(m, NULL, give, h->item, 0);
        if (r >= 0 && !h->cannot) {
                h->held -= give;
                h->given += give;
        }
        h->calls++;
        return r < 0 ? r : h->cannot ? 0 : (int64_t) give;
}

static void on_usr1(int sig) {
        (void) sig; /* only to interrupt a wait */
}

static void *holder_main(void *userdata) {
        Holder *h = userdata;
        memacct_event ev;
        int r = 0;

        while (!h->stop && (r >= 0 || r == -EINTR)) {
                struct pollfd pfd[2] = {
                        { .fd = memacct_fd(h->m), .events = POLLIN },
                        { .fd = h->stop_pipe[0], .events = POLLIN },
                };

                switch (h->serve) {
                case SERVE_FD:
                        r = pfd[0].fd;
                        if (r >= 0 && poll(pfd, 2, -1) > 0 && (pfd[0].revents & POLLIN))
                                r = memacct_process(h->m, 0);
                        break;
                case SERVE_PROCESS:
                        r = memacct_process(h->m, 10000);
                        break;
                case SERVE_NEXT_EVENT:
                        r = memacct_next_event(h->m, 10000, &ev);
                        break;
                }
        }
        h->r = r == -EINTR ? 0 : MIN(r, 0);
        h->exited = true;
        return NULL;
}

/* Attach @h->m (made by the caller) to @path, hold @bytes there, declare it, and serve. */
static void holder_start(Holder *h, const char *path, uint64_t bytes) {
        struct sigaction sa = { .sa_handler = on_usr1 };

        sigemptyset(&sa.sa_mask);
        assert_int_equal(sigaction(SIGUSR1, &sa, NULL), 0); /* no SA_RESTART: a wait ends */
        assert_int_equal(pipe(h->stop_pipe), 0);
        h->held = bytes;
        assert_int_equal(memacct_attach(h->m, path), 0);
        if (h->region) {
                assert_int_equal(memacct_charge_region(h->m, NULL, h->region, bytes, 0, NULL), 0);
                assert_int_equal(memacct_set_reclaimable(h->m, h->region, give_back, h), 0);
        } else {
                assert_int_equal(memacct_charge(h->m, NULL, bytes, h->item, 0, NULL), 0);
                assert_int_equal(h->by_stat ? memacct_set_reclaimable_stat(h->m, h->item, give_back, h)
                                            : memacct_set_reclaimable(h->m, NULL, give_back, h),
                                 0);
        }
        assert_int_equal(pthread_create(&h->thread, NULL, holder_main, h), 0);
}

static void holder_stop(Holder *h) {
        h->stop = true;
        assert_int_equal(write(h->stop_pipe[1], "x", 1), 1);
        /* memacct_process() and memacct_next_event() end with a signal. */
        while (!h->exited) {
                (void) pthread_kill(h->thread, SIGUSR1);
                sleep_msec(10);
        }
        assert_int_equal(pthread_join(h->thread, NULL), 0);
        assert_int_equal(h->r, 0);
        close(h->stop_pipe[0]);
        close(h->stop_pipe[1]);
        h->m = memacct_close(h->m);
}

/* The one session in @path, as the daemon lists it over the socket. */
static memacct_session_info session_in(const char *path) {
        memacct *s = sock_open();
        memacct_sessions *l = NULL;
        memacct_session_info info;

        assert_int_equal(memacct_list_sessions(s, path, &l), 0);
        assert_int_equal(memacct_sessions_size(l), 1);
        info = *memacct_sessions_get(l, 0);
        info.comm = info.transport = info.group = NULL; /* freed with the list */
        memacct_sessions_free(l);
        memacct_close(s);
        return info;
}

/* Twin trees @ts and @tb: each with @max and a cache and a w below it. */
static void make_twins(const char *ts, const char *tb, uint64_t max) {
        trees[0] = ts;
        trees[1] = tb;
        for (side = 0; side < 2; side++) {
                create(T(""), max ? MEMACCT_LIMIT_MAX : 0, max, 0);
                create(T("/cache"), 0, 0, 0);
                create(T("/w"), 0, 0, 0);
        }
        side = 0;
}

/* The two holders asked and giving back alike, in @region's name. */
static void assert_holders_same(Holder h[2], const char *region) {
        assert_true(h[0].calls >= 1);
        assert_int_equal(h[1].calls, h[0].calls);
        assert_int_equal(h[1].asked, h[0].asked);
        assert_int_equal(h[1].given, h[0].given);
        assert_int_equal(h[1].held, h[0].held);
        assert_string_equal(h[0].asked_region, region);
        assert_string_equal(h[1].asked_region, region);
}

void test_reclaim_both_ways(void **state) {
        memacct *s = sock_open(), *b = bus_open();
        Holder h[2] = { { .m = sock_open(), .item = MEMACCT_STAT_FILE },
                        { .m = bus_open(), .item = MEMACCT_STAT_FILE } };
        memacct_session_info si[2];
        unsigned calls;

        (void) state;
        make_twins("/rcs", "/rcb", 10 * M);
        holder_start(&h[0], "/rcs/cache", 6 * M);
        holder_start(&h[1], "/rcb/cache", 6 * M);

        /* 6 M + 6 M > 10 M: the charge waits while the holder gives back. */
        TWIN(memacct_charge(m, T("/w"), 6 * M, MEMACCT_STAT_ANON, MEMACCT_KEEP, NULL), 0);
        assert_holders_same(h, "memory");
        assert_true(h[1].given >= 2 * M);
        for (side = 0; side < 2; side++) {
                assert_int_equal(current(T("/cache")), h[side].held);
                assert_true(current(T("")) <= 10 * M);
                si[side] = session_in(T("/cache"));
                assert_true(si[side].reclaimable);
                assert_int_equal(si[side].reclaim_released, 6 * M - h[side].held);
                assert_int_equal(si[side].reclaim_late, 0);
        }
        side = 0;
        assert_int_equal(si[1].reclaim_asked, si[0].reclaim_asked);

        /* Across: a socket charge waits for the bus holder, a bus charge
         * for the socket holder. */
        calls = h[1].calls;
        assert_int_equal(memacct_charge(s, "/rcb/w", 2 * M, MEMACCT_STAT_ANON, MEMACCT_KEEP, NULL), 0);
        assert_true(h[1].calls > calls);
        calls = h[0].calls;
        assert_int_equal(memacct_charge(b, "/rcs/w", 2 * M, MEMACCT_STAT_ANON, MEMACCT_KEEP, NULL), 0);
        assert_true(h[0].calls > calls);
        assert_holders_same(h, "memory");

        /* Withdrawn: refused at the max, nobody asked. */
        assert_int_equal(memacct_set_reclaimable(h[0].m, NULL, NULL, NULL), 0);
        assert_int_equal(memacct_set_reclaimable(h[1].m, NULL, NULL, NULL), 0);
        calls = h[0].calls;
        TWIN(memacct_charge(m, T("/w"), 8 * M, MEMACCT_STAT_ANON, MEMACCT_KEEP, NULL), -EDQUOT);
        assert_int_equal(h[0].calls, calls);
        assert_int_equal(h[1].calls, calls);
        assert_false(session_in("/rcb/cache").reclaimable);

        holder_stop(&h[0]);
        holder_stop(&h[1]);
        TWIN(memacct_uncharge(m, T("/w"), 8 * M, MEMACCT_STAT_ANON, MEMACCT_KEEP), 0);
        assert_int_equal(current_soon("/rcb", 0), 0);
        memacct_close(s);
        memacct_close(b);
}

void test_reclaim_proactive(void **state) {
        memacct *s = sock_open(), *b = bus_open();
        Holder h[2] = { { .m = sock_open(), .item = MEMACCT_STAT_FILE },
                        { .m = bus_open(), .item = MEMACCT_STAT_FILE } };
        uint64_t released[2] = { 1, 1 };

        (void) state;
        make_twins("/rps", "/rpb", 0);
        holder_start(&h[0], "/rps/cache", 8 * M);
        holder_start(&h[1], "/rpb/cache", 8 * M);

        TWIN(memacct_reclaim(m, T(""), NULL, 3 * M, &released[SIDE]), 0);
        assert_holders_same(h, "memory");
        assert_int_equal(released[1], released[0]);
        assert_int_equal(released[1], h[1].given);
        assert_true(released[1] >= 3 * M);
        for (side = 0; side < 2; side++)
                assert_int_equal(current(T("/cache")), 8 * M - released[side]);
        side = 0;

        /* Nobody reclaimable below: nothing comes back. */
        TWIN(memacct_reclaim(m, T("/w"), NULL, M, &released[SIDE]), 0);
        assert_int_equal(released[0], 0);
        assert_int_equal(released[1], 0);
        TWIN(memacct_reclaim(m, T("/none"), NULL, M, NULL), -ENOENT);
        TWIN(memacct_reclaim(m, T(""), "nosuch", M, NULL), ANY);

        holder_stop(&h[0]);
        holder_stop(&h[1]);
        assert_int_equal(current_soon("/rpb", 0), 0);
        memacct_close(s);
        memacct_close(b);
}

void test_reclaim_no_wait(void **state) {
        memacct *s = sock_open(), *b = bus_open();
        Holder h[2] = { { .m = sock_open(), .item = MEMACCT_STAT_FILE },
                        { .m = bus_open(), .item = MEMACCT_STAT_FILE } };
        memacct_limits l = { .set = MEMACCT_LIMIT_MAX, .max = 4 * M };
        memacct_group_info *g = NULL;
        unsigned calls;

        (void) state;
        make_twins("/rns", "/rnb", 10 * M);
        holder_start(&h[0], "/rns/cache", 6 * M);
        holder_start(&h[1], "/rnb/cache", 6 * M);

        /* Refused at once: kept or the session's, nobody asked. */
        TWIN(memacct_charge(m, T("/w"), 6 * M, MEMACCT_STAT_ANON, MEMACCT_KEEP | MEMACCT_NO_WAIT, NULL),
             -EDQUOT);
        TWIN(memacct_attach(m, T("/w")), 0);
        TWIN(memacct_charge(m, NULL, 6 * M, MEMACCT_STAT_ANON, MEMACCT_NO_WAIT, NULL), -EDQUOT);
        /* A max below usage: Busy at once. */
        TWIN(memacct_set_limits(m, T(""), &l, MEMACCT_NO_WAIT), -EBUSY);
        assert_int_equal(h[0].calls, 0);
        assert_int_equal(h[1].calls, 0);
        for (side = 0; side < 2; side++) {
                assert_int_equal(current(T("/cache")), 6 * M);
                assert_int_equal(session_in(T("/cache")).reclaim_asked, 0);
        }
        side = 0;

        /* The same without it: the holder is asked, and gives room. */
        TWIN(memacct_charge(m, NULL, 2 * M, MEMACCT_STAT_ANON, MEMACCT_NO_WAIT, NULL), 0);
        TWIN(memacct_charge(m, NULL, 4 * M, MEMACCT_STAT_ANON, 0, NULL), 0);
        assert_holders_same(h, "memory");
        assert_true(h[1].held <= 4 * M);
        /* And a max below usage asks for the difference. */
        l.max = 8 * M;
        calls = h[1].calls;
        TWIN(memacct_set_limits(m, T(""), &l, 0), 0);
        assert_true(h[1].calls > calls);
        assert_holders_same(h, "memory");
        assert_true(h[1].held <= 2 * M);
        for (side = 0; side < 2; side++) {
                assert_int_equal(memacct_get_group(s, T(""), NULL, MEMACCT_EXACT, &g), 0);
                assert_int_equal(g->max, 8 * M);
                assert_true(g->current <= 8 * M);
                g = memacct_group_info_free(g);
        }
        side = 0;

        holder_stop(&h[0]);
        holder_stop(&h[1]);
        memacct_close(s);
        memacct_close(b);
        assert_int_equal(current_soon("/rnb", 0), 0);
}

void test_reclaim_cannot(void **state) {
        memacct *s = sock_open(), *b = bus_open();
        Holder h[2] = { { .m = sock_open(), .item = MEMACCT_STAT_FILE, .cannot = true },
                        { .m = bus_open(), .item = MEMACCT_STAT_FILE, .cannot = true } };

        (void) state;
        make_twins("/rxs", "/rxb", 10 * M);
        holder_start(&h[0], "/rxs/cache", 6 * M);
        holder_start(&h[1], "/rxb/cache", 6 * M);

        /* Asked, it answers that it cannot: refused, the same words. */
        TWIN(memacct_charge(m, T("/w"), 6 * M, MEMACCT_STAT_ANON, MEMACCT_KEEP, NULL), -EDQUOT);
        assert_holders_same(h, "memory");
        for (side = 0; side < 2; side++) {
                memacct_session_info si = session_in(T("/cache"));

                assert_int_equal(current(T("/cache")), 6 * M);
                assert_true(si.reclaim_asked > 0);
                assert_int_equal(si.reclaim_released, 0);
                /* It answered: not late. */
                assert_int_equal(si.reclaim_late, 0);
        }
        side = 0;

        holder_stop(&h[0]);
        holder_stop(&h[1]);
        memacct_close(s);
        memacct_close(b);
}

void test_reclaim_region(void **state) {
        memacct *s = sock_open(), *b = bus_open();
        Holder h[2] = { { .m = sock_open(), .region = "rgn" }, { .m = bus_open(), .region = "rgn" } };
        memacct_limits l = { .set = MEMACCT_LIMIT_MAX, .max = 16 * M };
        unsigned calls;

        (void) state;
        assert_int_equal(memacct_add_region(s, "rgn", 64 * M), 0);
        make_twins("/rrs", "/rrb", 0);
        TWIN(memacct_set_region_limits(m, T(""), "rgn", &l), 0);
        TWIN(memacct_set_reclaimable(m, "nosuch", give_back, &h[SIDE]), -ENOENT);
        holder_start(&h[0], "/rrs/cache", 12 * M);
        holder_start(&h[1], "/rrb/cache", 12 * M);

        TWIN(memacct_charge_region(m, T("/w"), "rgn", 8 * M, MEMACCT_KEEP | MEMACCT_NO_WAIT, NULL), -EDQUOT);
        assert_int_equal(h[1].calls, 0);
        TWIN(memacct_charge_region(m, T("/w"), "rgn", 8 * M, MEMACCT_KEEP, NULL), 0);
        assert_holders_same(h, "rgn");
        assert_true(h[1].held <= 8 * M);
        /* Memory's charges ask nobody declared for a region alone. */
        calls = h[1].calls;
        l.max = M;
        TWIN(memacct_set_limits(m, T(""), &l, 0), 0);
        TWIN(memacct_charge(m, T("/w"), 2 * M, MEMACCT_STAT_ANON, MEMACCT_KEEP, NULL), -EDQUOT);
        assert_int_equal(h[1].calls, calls);
        assert_holders_same(h, "rgn");

        holder_stop(&h[0]);
        holder_stop(&h[1]);
        TWIN(memacct_uncharge_region(m, T("/w"), "rgn", 8 * M, MEMACCT_KEEP), 0);
        memacct_close(s);
        memacct_close(b);
}

/* Calls on a holder's handle from other threads, which read its requests
 * off the bus. (cmocka's asserts are the test thread's: errors counted.) */
static atomic_bool readers_stop;
static atomic_int reader_errors;

static void *reader_main(void *userdata) {
        memacct *m = userdata;

        while (!readers_stop) {
                memacct_group_info *g = NULL;

                if (memacct_get_group(m, "/", NULL, 0, &g) < 0)
                        reader_errors++;
                memacct_group_info_free(g);
        }
        return NULL;
}

void test_reclaim_shared_handle(void **state) {
        static const Serve serves[] = { SERVE_FD, SERVE_PROCESS, SERVE_NEXT_EVENT };
        memacct *s = sock_open();

        (void) state;
        for (size_t i = 0; i < ELEMENTSOF(serves); i++) {
                /* memacct_next_event()'s holder declared item by item. */
                Holder h = { .m = bus_open(), .item = MEMACCT_STAT_FILE, .serve = serves[i],
                             .by_stat = serves[i] == SERVE_NEXT_EVENT };
                char tree[32], path[64];
                pthread_t readers[2];

                snprintf(tree, sizeof(tree), "/rt%zu", i);
                trees[0] = trees[1] = tree;
                create(T(""), MEMACCT_LIMIT_MAX, 10 * M, 0);
                create(T("/cache"), 0, 0, 0);
                holder_start(&h, T("/cache"), 6 * M);
                readers_stop = false;
                for (size_t j = 0; j < ELEMENTSOF(readers); j++)
                        assert_int_equal(pthread_create(&readers[j], NULL, reader_main, h.m), 0);

                /* Three rounds (6 M, then 1 M and 1 M kept beside the
                 * holder's 6 M, under a max of 10 M), each asking the
                 * holder while the readers call. */
                for (int round = 0; round < 3; round++) {
                        unsigned calls = h.calls;

                        assert_int_equal(memacct_charge(s, T(""), round == 0 ? 6 * M : M, MEMACCT_STAT_ANON,
                                                        MEMACCT_KEEP, NULL),
                                         0);
                        assert_true(h.calls > calls);
                }
                readers_stop = true;
                for (size_t j = 0; j < ELEMENTSOF(readers); j++)
                        assert_int_equal(pthread_join(readers[j], NULL), 0);
                assert_int_equal(reader_errors, 0);
                assert_int_equal(current(T("/cache")), h.held);
                assert_int_equal(session_in(T("/cache")).reclaim_late, 0);
                snprintf(path, sizeof(path), "%s", T(""));
                holder_stop(&h);
                assert_int_equal(memacct_uncharge(s, path, 8 * M, MEMACCT_STAT_ANON, MEMACCT_KEEP), 0);
                assert_int_equal(current_soon(path, 0), 0);
        }
        memacct_close(s);
}

/* A charge past @path's max on a handle of its own, from a thread: the charger. */
typedef struct Charger {
        const char *path;
        uint64_t bytes;
        int r;
        atomic_bool done;
        pthread_t thread;
} Charger;

static void *charger_main(void *userdata) {
        Charger *c = userdata;
        memacct *m = NULL;

        c->r = memacct_connect(socket_path, &m);
        if (c->r >= 0)
                c->r = memacct_charge(m, c->path, c->bytes, MEMACCT_STAT_ANON, MEMACCT_KEEP, NULL);
        memacct_close(m);
        c->done = true;
        return NULL;
}

void test_reclaim_fd_after_call(void **state) {
        Holder h = { .m = bus_open(), .item = MEMACCT_STAT_FILE };
        Charger c = { .path = "/rq", .bytes = 6 * M };
        struct pollfd pfd;
        memacct_group_info *g = NULL;

        (void) state;
        create("/rq", MEMACCT_LIMIT_MAX, 10 * M, 0);
        create("/rq/cache", 0, 0, 0);
        h.held = 6 * M;
        assert_int_equal(memacct_attach(h.m, "/rq/cache"), 0);
        assert_int_equal(memacct_charge(h.m, NULL, 6 * M, h.item, 0, NULL), 0);
        assert_int_equal(memacct_set_reclaimable(h.m, NULL, give_back, &h), 0);
        pfd = (struct pollfd) { .fd = memacct_fd(h.m), .events = POLLIN };
        assert_true(pfd.fd >= 0);
        assert_int_equal(memacct_process(h.m, 0), 0);

        /* The holder is asked while nobody serves it; then a call of its
         * own reads the request off the bus, into sd-bus's queue. */
        assert_int_equal(pthread_create(&c.thread, NULL, charger_main, &c), 0);
        while (session_in("/rq/cache").reclaim_asked == 0 && !c.done)
                sleep_msec(5);
        sleep_msec(50);
        assert_int_equal(memacct_get_group(h.m, "/rq", NULL, 0, &g), 0);
        memacct_group_info_free(g);
        /* The descriptor says so all the same. */
        assert_int_equal(poll(&pfd, 1, WAIT_MSEC), 1);
        assert_int_equal(memacct_process(h.m, 0), 1);
        assert_int_equal(h.calls, 1);
        assert_int_equal(pthread_join(c.thread, NULL), 0);
        assert_int_equal(c.r, 0);
        assert_int_equal(current("/rq/cache"), h.held);
        h.m = memacct_close(h.m);
        assert_int_equal(memacct_uncharge(h.m = sock_open(), "/rq", 6 * M, MEMACCT_STAT_ANON, MEMACCT_KEEP), 0);
        h.m = memacct_close(h.m);
}

/* Send a ReclaimRequest for @bytes, as if from the daemon, from @fake to
 * every other bus connection of this process. */
static void send_fake_requests(sd_bus *fake, uint64_t bytes) {
        sd_bus_message *reply = NULL;
        const char *self = NULL, *name;
        char **names = NULL;

        assert_true(sd_bus_get_unique_name(fake, &self) >= 0);
        assert_true(sd_bus_call_method(fake, "org.freedesktop.DBus", "/org/freedesktop/DBus",
                                       "org.freedesktop.DBus", "ListNames", NULL, &reply, "") >= 0);
        assert_true(sd_bus_message_read_strv(reply, &names) >= 0);
        reply = sd_bus_message_unref(reply);
        for (char **n = names; n && *n; n++) {
                sd_bus_message *sig = NULL;
                uint32_t pid = 0;

                name = *n;
                if (name[0] != ':' || strcmp(name, self) == 0 ||
                    sd_bus_call_method(fake, "org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus",
                                       "GetConnectionUnixProcessID", NULL, &reply, "s", name) < 0)
                        continue;
                (void) sd_bus_message_read(reply, "u", &pid);
                reply = sd_bus_message_unref(reply);
                if (pid != (uint32_t) getpid())
                        continue;
                assert_true(sd_bus_message_new_signal(fake, &sig, MANAGER_PATH, MANAGER_IFACE, "ReclaimRequest") >= 0);
                assert_true(sd_bus_message_set_destination(sig, name) >= 0);
                assert_true(sd_bus_message_append(sig, "tst", UINT64_C(424242), "", bytes) >= 0);
                assert_true(sd_bus_send(fake, sig, NULL) >= 0);
                sd_bus_message_unref(sig);
        }
        for (char **n = names; n && *n; n++)
                free(*n);
        free(names);
        /* A call the bus answers after it routed the signals before it. */
        assert_true(sd_bus_call_method(fake, "org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus",
                                       "GetId", NULL, &reply, "") >= 0);
        sd_bus_message_unref(reply);
}

void test_reclaim_not_from_others(void **state) {
        Holder h = { .m = bus_open(), .item = MEMACCT_STAT_FILE };
        memacct *s = sock_open();
        sd_bus *fake = sdbus_open();

        (void) state;
        create("/rf", MEMACCT_LIMIT_MAX, 10 * M, 0);
        create("/rf/cache", 0, 0, 0);
        holder_start(&h, "/rf/cache", 6 * M);
        send_fake_requests(fake, 4 * M);
        /* The daemon's own request comes after them, and is the only one served. */
        assert_int_equal(memacct_charge(s, "/rf", 6 * M, MEMACCT_STAT_ANON, MEMACCT_KEEP, NULL), 0);
        assert_int_equal(h.calls, 1);
        assert_int_equal(h.asked, session_in("/rf/cache").reclaim_asked);
        assert_true(h.given < 4 * M);
        holder_stop(&h);
        assert_int_equal(memacct_uncharge(s, "/rf", 6 * M, MEMACCT_STAT_ANON, MEMACCT_KEEP), 0);
        sd_bus_flush_close_unref(fake);
        memacct_close(s);
}
