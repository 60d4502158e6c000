/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Stock pages through the service (service-charges.c) without a daemon:
 * what StockSetup accepts (a sealed memfd of exactly one page) and
 * refuses, stock refills landing in the shared page, and the drain of
 * the stock under a refusing group before any charge is refused.
 */

#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <cmocka.h>

#include "core/session.h"
#include "service-test.h"

static int stock_setup(Fixture *f, Peer *p, int fd, Refusal *rf) {
        refusal_init(rf);
        return service_stock_setup(f->svc, p, fd, rf);
}

static int charge(Fixture *f, Peer *p, ServiceCharge c, Refusal *rf) {
        ServiceChargeResult res;

        refusal_init(rf);
        return service_charge(f->svc, p, &c, &res, rf);
}

static ServiceCharge refill(const char *path, uint64_t bytes) {
        ServiceCharge c = session_bytes(path, bytes);

        c.stock = true;
        return c;
}

/* The client's view of its page: the counters the daemon adds refills to. */
typedef struct ClientPage {
        int fd;
        const _Atomic uint64_t *counters;
} ClientPage;

/* Give @p a stock page, as a client does, and keep the client's mapping. */
static ClientPage page_setup(Fixture *f, Peer *p) {
        ClientPage c = { .fd = stock_memfd(SERVICE_STOCK_PAGE_SIZE, true) };
        void *m;
        Refusal rf;

        assert_not_refused(stock_setup(f, p, c.fd, &rf), &rf);
        m = mmap(NULL, SERVICE_STOCK_PAGE_SIZE, PROT_READ, MAP_SHARED, c.fd, 0);
        assert_true(m != MAP_FAILED);
        c.counters = m;
        return c;
}

static void page_done(ClientPage *c) {
        munmap((void *) c->counters, SERVICE_STOCK_PAGE_SIZE);
        close(c->fd);
}

/* ---- setup ----------------------------------------------------------------- */

static void test_stock_setup_needs_a_memfd(void **state) {
        Fixture *f = *state;
        Refusal rf;

        assert_refused(stock_setup(f, f->delegate, -1, &rf), &rf, -EINVAL,
                       "StockSetup needs a memfd sent with the frame (SCM_RIGHTS)");
        assert_null(f->delegate->stock_page);
}

static void test_stock_setup_refuses_an_unsealed_memfd(void **state) {
        Fixture *f = *state;
        int unsealed = stock_memfd(SERVICE_STOCK_PAGE_SIZE, false);
        int partly = memfd_create("test-stock", MFD_ALLOW_SEALING);
        Refusal rf;

        assert_true(partly >= 0);
        assert_int_equal(ftruncate(partly, SERVICE_STOCK_PAGE_SIZE), 0);
        assert_int_equal(fcntl(partly, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW), 0);
        assert_refused(stock_setup(f, f->delegate, unsealed, &rf), &rf, -EINVAL,
                       "the stock memfd must be sealed against shrink, grow and seal");
        assert_refused(stock_setup(f, f->delegate, partly, &rf), &rf, -EINVAL,
                       "the stock memfd must be sealed against shrink, grow and seal");
        assert_null(f->delegate->stock_page);
        close(unsealed);
        close(partly);
}

static void test_stock_setup_refuses_a_page_of_the_wrong_size(void **state) {
        Fixture *f = *state;
        int big = stock_memfd(2 * SERVICE_STOCK_PAGE_SIZE, true), small = stock_memfd(64, true);
        Refusal rf;

        assert_refused(stock_setup(f, f->delegate, big, &rf), &rf, -EINVAL,
                       "the stock memfd must be exactly %d bytes", SERVICE_STOCK_PAGE_SIZE);
        assert_refused(stock_setup(f, f->delegate, small, &rf), &rf, -EINVAL,
                       "the stock memfd must be exactly %d bytes", SERVICE_STOCK_PAGE_SIZE);
        assert_null(f->delegate->stock_page);
        close(big);
        close(small);
}

static void test_stock_setup_refuses_what_is_no_memfd(void **state) {
        Fixture *f = *state;
        int pipefd[2];
        Refusal rf;

        assert_int_equal(pipe(pipefd), 0);
        assert_refused(stock_setup(f, f->delegate, pipefd[0], &rf), &rf, -EINVAL,
                       "the stock memfd must be sealed against shrink, grow and seal");
        assert_null(f->delegate->stock_page);
        close(pipefd[0]);
        close(pipefd[1]);
}

static void test_stock_setup_refuses_a_page_it_cannot_map_shared(void **state) {
        Fixture *f = *state;
        int fd = stock_memfd(SERVICE_STOCK_PAGE_SIZE, true), ro;
        char path[64];
        Refusal rf;

        /* The same sealed page, opened read-only: no shared writable mapping. */
        snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
        ro = open(path, O_RDONLY | O_CLOEXEC);
        assert_true(ro >= 0);
        assert_refused(stock_setup(f, f->delegate, ro, &rf), &rf, -EACCES,
                       "cannot map the stock page: %s", strerror(EACCES));
        assert_null(f->delegate->stock_page);
        close(ro);
        close(fd);
}

static void test_stock_setup_accepts_a_sealed_page_once(void **state) {
        Fixture *f = *state;
        ClientPage c = page_setup(f, f->delegate);
        int again = stock_memfd(SERVICE_STOCK_PAGE_SIZE, true);
        Refusal rf;

        assert_non_null(f->delegate->stock_page);
        assert_int_equal(f->delegate->stock_page_size, SERVICE_STOCK_PAGE_SIZE);
        assert_refused(stock_setup(f, f->delegate, again, &rf), &rf, -EBUSY,
                       "the session has a stock page already");
        /* The fd stays the caller's: closing it is the caller's business. */
        assert_int_equal(close(again), 0);
        page_done(&c);
}

static void test_stock_setup_opens_a_bus_session(void **state) {
        Fixture *f = *state;
        ClientPage c = page_setup(f, f->bus);

        assert_non_null(f->bus->session);
        assert_int_equal(service_session_count(f->svc), 4);
        page_done(&c);
}

/* ---- refills ----------------------------------------------------------------- */

static void test_stock_refill_is_held_and_lands_in_the_page(void **state) {
        Fixture *f = *state;
        ClientPage c = page_setup(f, f->delegate);
        ServiceCharge r = refill("/d/x", 4 * PAGE), file = refill(NULL, PAGE);
        Refusal rf;

        file.stat = "file";
        assert_not_refused(charge(f, f->delegate, r, &rf), &rf);
        assert_not_refused(charge(f, f->delegate, file, &rf), &rf);
        assert_true(c.counters[MEM_STAT_ANON] == r.bytes);
        assert_true(c.counters[MEM_STAT_FILE] == file.bytes);
        assert_true(session_held(f->delegate->session, MEM_STAT_ANON) == r.bytes);
        assert_true(tree_usage(f, "/d/x") == r.bytes + file.bytes);
        assert_int_equal(fixture_commits(f), 0);
        page_done(&c);
}

static void test_refused_stock_refill_raises_max_but_no_oom(void **state) {
        Fixture *f = *state;
        ClientPage c = page_setup(f, f->delegate);
        Refusal rf;

        tree_set_max(f, "/d", 2 * PAGE);
        assert_refused(charge(f, f->delegate, refill("/d/x", 4 * PAGE), &rf), &rf, -EDQUOT,
                       "/d/x: limit exceeded (max of /d)");
        assert_string_equal(rf.refused_by, "/d");
        assert_true(c.counters[MEM_STAT_ANON] == 0);
        assert_true(tree_usage(f, "/d") == 0);
        assert_non_null(event_log_find(&f->sink, EVENT_MEMORY, MEM_EVENT_MAX, "/d"));
        assert_int_equal(event_log_count(&f->sink, EVENT_MEMORY, MEM_EVENT_OOM), 0);
        assert_int_equal(tree_info(f, "/d").events_local[MEM_EVENT_OOM], 0);
        page_done(&c);
}

/* ---- drain before refusal ---------------------------------------------------- */

static void test_charge_refused_by_a_max_drains_the_stock_under_it_and_succeeds(void **state) {
        Fixture *f = *state;
        ClientPage c = page_setup(f, f->delegate);
        Peer *second = fixture_peer_new(f, UID_DELEGATE, true, false);
        Refusal rf;

        tree_set_max(f, "/d", 6 * PAGE);
        assert_not_refused(charge(f, f->delegate, refill("/d/x", 4 * PAGE), &rf), &rf);
        /* 4 + 4 pages do not fit under 6 until the unused stock is taken back. */
        assert_not_refused(charge(f, second, session_bytes("/d", 4 * PAGE), &rf), &rf);
        assert_true(c.counters[MEM_STAT_ANON] == 0);
        assert_true(session_held(f->delegate->session, MEM_STAT_ANON) == 0);
        assert_true(session_held(second->session, MEM_STAT_ANON) == 4 * PAGE);
        assert_true(tree_usage(f, "/d") == 4 * PAGE);
        assert_true(tree_usage(f, "/d/x") == 0);
        /* The first try hit max; the retry succeeded, so no oom. */
        assert_non_null(event_log_find(&f->sink, EVENT_MEMORY, MEM_EVENT_MAX, "/d"));
        assert_int_equal(event_log_count(&f->sink, EVENT_MEMORY, MEM_EVENT_OOM), 0);
        page_done(&c);
}

static void test_kept_charge_refused_by_a_max_drains_the_stock_too(void **state) {
        Fixture *f = *state;
        ClientPage c = page_setup(f, f->delegate);
        Refusal rf;

        tree_set_max(f, "/d", 6 * PAGE);
        assert_not_refused(charge(f, f->delegate, refill("/d/x", 4 * PAGE), &rf), &rf);
        assert_not_refused(charge(f, f->root, kept_bytes("/d/x/y", 4 * PAGE), &rf), &rf);
        assert_true(c.counters[MEM_STAT_ANON] == 0);
        assert_true(tree_info(f, "/d/x/y").kept[MEM_STAT_ANON] == 4 * PAGE);
        assert_true(tree_usage(f, "/d") == 4 * PAGE);
        assert_int_equal(fixture_commits(f), 1);
        page_done(&c);
}

static void test_drain_leaves_stock_outside_the_refusing_group(void **state) {
        Fixture *f = *state;
        ClientPage c = page_setup(f, f->other);
        Refusal rf;

        tree_set_max(f, "/d", 2 * PAGE);
        assert_not_refused(charge(f, f->other, refill("/e", 4 * PAGE), &rf), &rf);
        assert_refused(charge(f, f->delegate, session_bytes("/d", 4 * PAGE), &rf), &rf, -EDQUOT,
                       "/d: limit exceeded (max of /d)");
        assert_true(c.counters[MEM_STAT_ANON] == 4 * PAGE);
        assert_true(tree_usage(f, "/e") == 4 * PAGE);
        /* Nothing to drain under /d: the refusal is final, and an oom. */
        assert_non_null(event_log_find(&f->sink, EVENT_MEMORY, MEM_EVENT_OOM, "/d"));
        page_done(&c);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                SERVICE_TEST(test_stock_setup_needs_a_memfd),
                SERVICE_TEST(test_stock_setup_refuses_an_unsealed_memfd),
                SERVICE_TEST(test_stock_setup_refuses_a_page_of_the_wrong_size),
                SERVICE_TEST(test_stock_setup_refuses_what_is_no_memfd),
                SERVICE_TEST(test_stock_setup_refuses_a_page_it_cannot_map_shared),
                SERVICE_TEST(test_stock_setup_accepts_a_sealed_page_once),
                SERVICE_TEST(test_stock_setup_opens_a_bus_session),
                SERVICE_TEST(test_stock_refill_is_held_and_lands_in_the_page),
                SERVICE_TEST(test_refused_stock_refill_raises_max_but_no_oom),
                SERVICE_TEST(test_charge_refused_by_a_max_drains_the_stock_under_it_and_succeeds),
                SERVICE_TEST(test_kept_charge_refused_by_a_max_drains_the_stock_too),
                SERVICE_TEST(test_drain_leaves_stock_outside_the_refusing_group),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
