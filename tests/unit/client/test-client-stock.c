/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The charge stock's policy (client/lib/client-stock.c) against a fake page and
 * a fake daemon: a session with a usage and a max, which adds a refill's
 * bytes to the page when the refill's charge fits, as memacctd does. No
 * socket, no daemon. After every scenario the fake daemon's usage must
 * equal what the caller holds plus what sits in the page: no byte lost or
 * counted twice. Device region lines run against the same fake: their
 * page counter is the one the fake's refill replies name.
 */

#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "client-stock.h"

#define KiB (UINT64_C(1024))
#define MiB (UINT64_C(1024) * 1024)
#define ANON 0
#define FILE_ 1
#define MAX_INFLIGHT 64

typedef struct FakeReply {
        bool refill;
        unsigned item;
        uint64_t bytes;
} FakeReply;

typedef struct Fake {
        /* The stock, the daemon's refilled and drained totals, then the
         * same for regions (client-stock.h). */
        _Atomic uint64_t page[STOCK_PAGE_SIZE / sizeof(uint64_t)] _cacheline_aligned_;
        Stock stock;
        pthread_mutex_t mutex;

        /* The fake daemon. */
        uint64_t usage;
        uint64_t limit; /* UINT64_MAX: no max */
        FakeReply inflight[MAX_INFLIGHT];
        size_t n_inflight;
        bool deliver_on_poll; /* replies arrive before the next poll() */
        unsigned region_slot[STOCK_REGIONS]; /* a region line's slot; 0: its own (line - 7) */
        bool region_busy[STOCK_REGIONS];     /* refills of the line answer -EBUSY */

        uint64_t now;
        uint64_t now_step; /* added on every clock read */
        bool lock_busy;    /* trylock() fails: another thread holds the handle */

        unsigned refill_sends, return_sends, exact_calls, polls, waits;
        uint64_t last_refill_bytes, last_return_bytes;
        uint64_t refill_log[32]; /* the first refills' sizes */
} Fake;

static uint64_t fake_margin(const Fake *f) {
        return f->limit == UINT64_MAX ? UINT64_MAX : f->limit - f->usage;
}

/* The page counter of stock line @line, as the daemon numbers it. */
static unsigned fake_index(const Fake *f, unsigned line) {
        unsigned r = line - STOCK_ITEMS;

        if (line < STOCK_ITEMS)
                return line;
        return STOCK_REGION_INDEX(f->region_slot[r] ? f->region_slot[r] : r + 1);
}

/* The daemon serves one request: a refill charges and fills the page. */
static void fake_deliver_one(Fake *f) {
        FakeReply rep = f->inflight[0];
        unsigned index = fake_index(f, rep.item);

        memmove(f->inflight, f->inflight + 1, (f->n_inflight - 1) * sizeof(FakeReply));
        f->n_inflight--;
        if (!rep.refill) {
                assert_true(f->usage >= rep.bytes);
                f->usage -= rep.bytes;
                stock_return_done(&f->stock, rep.item, rep.bytes, 0);
                return;
        }
        if (rep.item >= STOCK_ITEMS && f->region_busy[rep.item - STOCK_ITEMS]) {
                stock_refill_done(&f->stock, rep.item, -EBUSY, 0, 0);
                return;
        }
        if (f->limit != UINT64_MAX && f->usage + rep.bytes > f->limit) {
                stock_refill_done(&f->stock, rep.item, -EDQUOT, 0, 0);
                return;
        }
        f->usage += rep.bytes;
        /* As the daemon: the refill's total first, then the page. */
        atomic_fetch_add(&f->page[stock_refilled_index(index)], rep.bytes);
        atomic_fetch_add(&f->page[index], rep.bytes);
        stock_refill_done(&f->stock, rep.item, 0, fake_margin(f), rep.item >= STOCK_ITEMS ? index : 0);
}

static void fake_deliver_all(Fake *f) {
        while (f->n_inflight > 0)
                fake_deliver_one(f);
}

static int fake_push(Fake *f, bool refill, unsigned item, uint64_t bytes) {
        assert_true(f->n_inflight < MAX_INFLIGHT);
        f->inflight[f->n_inflight++] = (FakeReply) { refill, item, bytes };
        return 0;
}

static int op_refill_send(void *userdata, unsigned item, uint64_t bytes) {
        Fake *f = userdata;

        if (f->refill_sends < ELEMENTSOF(f->refill_log))
                f->refill_log[f->refill_sends] = bytes;
        f->refill_sends++;
        f->last_refill_bytes = bytes;
        return fake_push(f, true, item, bytes);
}

static int op_return_send(void *userdata, unsigned item, uint64_t bytes) {
        Fake *f = userdata;

        f->return_sends++;
        f->last_return_bytes = bytes;
        return fake_push(f, false, item, bytes);
}

static int op_poll(void *userdata) {
        Fake *f = userdata;

        f->polls++;
        if (f->deliver_on_poll)
                fake_deliver_all(f);
        return 0;
}

static int op_wait(void *userdata, unsigned item) {
        Fake *f = userdata;

        f->waits++;
        while (atomic_load(&f->stock.items[item].inflight)) {
                assert_true(f->n_inflight > 0);
                fake_deliver_one(f);
        }
        return 0;
}

static int op_charge_exact(void *userdata, unsigned item, uint64_t bytes, uint64_t *ret_margin) {
        Fake *f = userdata;

        (void) item;
        f->exact_calls++;
        fake_deliver_all(f); /* replies come in order: earlier ones first */
        if (f->limit != UINT64_MAX && f->usage + bytes > f->limit)
                return -EDQUOT;
        f->usage += bytes;
        *ret_margin = fake_margin(f);
        return 0;
}

static int op_uncharge_exact(void *userdata, unsigned item, uint64_t bytes) {
        Fake *f = userdata;

        (void) item;
        fake_deliver_all(f);
        assert_true(f->usage >= bytes);
        f->usage -= bytes;
        return 0;
}

static void op_lock(void *userdata) {
        pthread_mutex_lock(&((Fake *) userdata)->mutex);
}

static bool op_trylock(void *userdata) {
        Fake *f = userdata;

        if (f->lock_busy)
                return false;
        return pthread_mutex_trylock(&f->mutex) == 0;
}

static void op_unlock(void *userdata) {
        pthread_mutex_unlock(&((Fake *) userdata)->mutex);
}

static uint64_t op_now_nsec(void *userdata) {
        Fake *f = userdata;

        f->now += f->now_step;
        return f->now;
}

static const StockOps fake_ops = {
        .refill_send = op_refill_send,
        .return_send = op_return_send,
        .poll = op_poll,
        .wait = op_wait,
        .charge_exact = op_charge_exact,
        .uncharge_exact = op_uncharge_exact,
        .lock = op_lock,
        .trylock = op_trylock,
        .unlock = op_unlock,
        .now_nsec = op_now_nsec,
};

static int setup(void **state) {
        Fake *f;

        f = aligned_alloc(CACHELINE_SIZE, sizeof(Fake));
        assert_non_null(f);
        memset(f, 0, sizeof(*f));
        pthread_mutex_init(&f->mutex, NULL);
        f->limit = UINT64_MAX;
        f->now = 1000000000;
        f->now_step = 0;
        stock_init(&f->stock, &fake_ops, f, 0);
        stock_set_page(&f->stock, f->page);
        *state = f;
        return 0;
}

static int teardown(void **state) {
        Fake *f = *state;

        pthread_mutex_destroy(&f->mutex);
        free(f);
        return 0;
}

/* The daemon's usage is what the caller holds plus what the page holds. */
static void assert_conserved(Fake *f) {
        uint64_t sum = 0;

        fake_deliver_all(f);
        for (unsigned i = 0; i < STOCK_LINES; i++)
                sum += stock_held(&f->stock, i) + stock_peek(&f->stock, i);
        assert_int_equal(f->usage, sum);
}

/* Pre-charge @bytes into the page, as a refill would. */
static void fake_fill(Fake *f, unsigned item, uint64_t bytes) {
        f->usage += bytes;
        atomic_fetch_add(&f->page[STOCK_REFILLED(item)], bytes);
        atomic_fetch_add(&f->page[item], bytes);
}

static void test_consume_served_from_page_without_transport(void **state) {
        Fake *f = *state;

        fake_fill(f, ANON, 1 * MiB);
        for (int i = 0; i < 16; i++)
                assert_int_equal(stock_charge(&f->stock, ANON, 4 * KiB), 0);
        assert_int_equal(atomic_load(&f->page[ANON]), 1 * MiB - 16 * 4 * KiB);
        assert_int_equal(stock_held(&f->stock, ANON), 16 * 4 * KiB);
        assert_int_equal(f->refill_sends, 0);
        assert_int_equal(f->exact_calls, 0);
        assert_int_equal(f->polls, 0);
        assert_conserved(f);
}

static void test_empty_page_refills_one_batch_then_consumes(void **state) {
        Fake *f = *state;

        assert_int_equal(stock_charge(&f->stock, ANON, 4 * KiB), 0);
        assert_int_equal(f->refill_sends, 1);
        assert_int_equal(f->last_refill_bytes, STOCK_MIN_BATCH);
        assert_int_equal(f->waits, 1);
        assert_int_equal(f->exact_calls, 0);
        assert_int_equal(atomic_load(&f->page[ANON]), STOCK_MIN_BATCH - 4 * KiB);
        assert_int_equal(f->usage, STOCK_MIN_BATCH);
        assert_conserved(f);
}

static void test_refill_ahead_below_low_mark_without_waiting(void **state) {
        Fake *f = *state;
        uint64_t low = STOCK_MIN_BATCH / STOCK_LOW_DIV, charged = 0;
        unsigned waits;

        assert_int_equal(stock_charge(&f->stock, ANON, 4 * KiB), 0);
        charged = 4 * KiB;
        waits = f->waits;
        /* Consume until the page is just below the low mark. */
        while (STOCK_MIN_BATCH - charged >= low) {
                assert_int_equal(stock_charge(&f->stock, ANON, 4 * KiB), 0);
                charged += 4 * KiB;
        }
        assert_int_equal(f->refill_sends, 2);
        assert_int_equal(f->stock.stats.refills_ahead, 1);
        assert_int_equal(f->waits, waits); /* nobody waited */
        assert_true(atomic_load(&f->stock.items[ANON].inflight));
        /* Charges go on from what is left while the refill is in flight. */
        assert_int_equal(stock_charge(&f->stock, ANON, 4 * KiB), 0);
        charged += 4 * KiB;
        assert_int_equal(f->refill_sends, 2);
        /* The daemon serves it; the page is topped up by the daemon alone. */
        fake_deliver_all(f);
        assert_int_equal(atomic_load(&f->page[ANON]), 2 * STOCK_MIN_BATCH - charged);
        assert_int_equal(stock_held(&f->stock, ANON), charged);
        assert_conserved(f);
}

static void test_refill_ahead_skipped_when_lock_busy(void **state) {
        Fake *f = *state;

        fake_fill(f, ANON, STOCK_MIN_BATCH / STOCK_LOW_DIV);
        f->lock_busy = true;
        assert_int_equal(stock_charge(&f->stock, ANON, 4 * KiB), 0);
        assert_int_equal(f->refill_sends, 0);
        f->lock_busy = false;
        assert_int_equal(stock_charge(&f->stock, ANON, 4 * KiB), 0);
        assert_int_equal(f->refill_sends, 1);
        assert_int_equal(f->stock.stats.refills_ahead, 1);
        assert_conserved(f);
}

static void test_reply_collected_by_poll_below_poll_mark(void **state) {
        Fake *f = *state;
        uint64_t batch = STOCK_MIN_BATCH;

        /* A refill in flight whose reply nobody read, though the daemon
         * already filled the page: the flag must clear once the page runs
         * low again, so the next refill can be sent. */
        assert_int_equal(stock_charge(&f->stock, ANON, 4 * KiB), 0);
        f->deliver_on_poll = true;
        for (uint64_t c = 4 * KiB; c < 3 * batch; c += 4 * KiB)
                assert_int_equal(stock_charge(&f->stock, ANON, 4 * KiB), 0);
        assert_true(f->refill_sends >= 3);
        assert_int_equal(f->exact_calls, 0);
        assert_conserved(f);
}

static void test_batch_grows_with_quick_refills_up_to_max(void **state) {
        Fake *f = *state;
        uint64_t expect = STOCK_MIN_BATCH;

        f->now_step = STOCK_GROW_NSEC / 10; /* refills well within 10 ms of each other */
        for (int i = 0; i < 20; i++) {
                uint64_t batch = f->stock.items[ANON].batch;

                assert_int_equal(batch, expect);
                /* Exhaust the page: the next charge must refill. */
                assert_int_equal(stock_charge(&f->stock, ANON, batch), 0);
                if (i > 0)
                        expect = MIN(expect * 2, STOCK_MAX_BATCH);
        }
        assert_int_equal(f->stock.items[ANON].batch, STOCK_MAX_BATCH);
        assert_int_equal(atomic_load(&f->stock.items[ANON].low_mark),
                         STOCK_MAX_BATCH / STOCK_LOW_DIV);
        assert_conserved(f);
}

static void test_batch_shrinks_when_refills_are_rare(void **state) {
        Fake *f = *state;

        f->now_step = STOCK_GROW_NSEC / 10;
        for (int i = 0; i < 4; i++)
                assert_int_equal(stock_charge(&f->stock, ANON, f->stock.items[ANON].batch), 0);
        assert_int_equal(f->stock.items[ANON].batch, STOCK_MIN_BATCH << 3);
        f->now_step = 2 * STOCK_SHRINK_NSEC;
        assert_int_equal(stock_charge(&f->stock, ANON, f->stock.items[ANON].batch), 0);
        assert_int_equal(f->stock.items[ANON].batch, STOCK_MIN_BATCH << 2);
        assert_conserved(f);
}

static void test_refill_never_above_fraction_of_margin(void **state) {
        Fake *f = *state;
        const uint64_t page_mask = ~(uint64_t) (STOCK_PAGE_SIZE - 1);
        uint64_t margin;

        f->limit = 4 * MiB;
        f->now_step = 2 * STOCK_GROW_NSEC; /* keep the batch where it is */
        f->stock.items[ANON].batch = STOCK_MAX_BATCH;
        f->stock.margin = 1 * MiB; /* as an earlier reply would have said */
        margin = f->stock.margin;
        assert_int_equal(stock_refill_size(&f->stock, ANON, 4 * KiB),
                         (margin / STOCK_MARGIN_DIV) & page_mask);

        assert_int_equal(stock_charge(&f->stock, ANON, 4 * KiB), 0);
        assert_int_equal(f->refill_log[0], (margin / STOCK_MARGIN_DIV) & page_mask);
        /* The reply's margin sizes the next refill (sent ahead at once,
         * since the page is below a quarter of the 4 MiB batch). */
        margin = f->limit - f->refill_log[0];
        assert_int_equal(f->refill_sends, 2);
        assert_int_equal(f->refill_log[1],
                         MIN(STOCK_MAX_BATCH, margin / STOCK_MARGIN_DIV) & page_mask);
        fake_deliver_all(f);
        assert_int_equal(f->stock.margin, fake_margin(f));
        assert_true(f->usage <= f->limit);
        assert_conserved(f);
}

static void test_near_limit_charges_exactly(void **state) {
        Fake *f = *state;
        unsigned refills;

        /* Room for less than 8 minimal batches: no refill may be asked. */
        f->limit = STOCK_MIN_BATCH * STOCK_MARGIN_DIV - 4 * KiB;
        f->stock.margin = fake_margin(f);
        assert_int_equal(stock_refill_size(&f->stock, ANON, 4 * KiB), 0);
        for (int i = 0; i < 10; i++)
                assert_int_equal(stock_charge(&f->stock, ANON, 4 * KiB), 0);
        assert_int_equal(f->refill_sends, 0);
        assert_int_equal(f->exact_calls, 10);
        assert_int_equal(f->usage, 10 * 4 * KiB);
        assert_int_equal(atomic_load(&f->page[ANON]), 0);

        /* Once memory is free again (the margin grows), refills resume. */
        f->limit = UINT64_MAX;
        refills = f->refill_sends;
        assert_int_equal(stock_charge(&f->stock, ANON, 4 * KiB), 0); /* exact: reports the margin */
        assert_int_equal(stock_charge(&f->stock, ANON, 4 * KiB), 0);
        assert_int_equal(f->refill_sends, refills + 1);
        assert_conserved(f);
}

static void test_refused_refill_falls_back_to_exact(void **state) {
        Fake *f = *state;

        /* The margin is unknown (no reply yet): the batch is tried and
         * refused; the exact 4 KiB fits. try_charge_memcg() steps 3-4. */
        f->limit = STOCK_MIN_BATCH / 2;
        assert_int_equal(stock_charge(&f->stock, ANON, 4 * KiB), 0);
        assert_int_equal(f->refill_sends, 1);
        assert_int_equal(f->stock.stats.refills_failed, 1);
        assert_int_equal(f->exact_calls, 1);
        assert_int_equal(f->usage, 4 * KiB);
        assert_int_equal(stock_held(&f->stock, ANON), 4 * KiB);
        /* The reply's margin now keeps the stock out of the way. */
        assert_int_equal(stock_charge(&f->stock, ANON, 4 * KiB), 0);
        assert_int_equal(f->refill_sends, 1);
        assert_int_equal(f->exact_calls, 2);
        assert_conserved(f);
}

static void test_refused_exact_charge_is_edquot_and_holds_nothing(void **state) {
        Fake *f = *state;

        f->limit = 2 * KiB;
        assert_int_equal(stock_charge(&f->stock, ANON, 4 * KiB), -EDQUOT);
        assert_int_equal(stock_held(&f->stock, ANON), 0);
        assert_int_equal(f->usage, 0);
        assert_conserved(f);
}

static void test_charge_larger_than_batch_is_exact(void **state) {
        Fake *f = *state;

        assert_int_equal(stock_charge(&f->stock, ANON, 1 * MiB), 0);
        assert_int_equal(f->refill_sends, 0);
        assert_int_equal(f->exact_calls, 1);
        assert_int_equal(stock_held(&f->stock, ANON), 1 * MiB);
        /* ...unless the page happens to cover it. */
        fake_fill(f, ANON, 2 * MiB);
        assert_int_equal(stock_charge(&f->stock, ANON, 1 * MiB), 0);
        assert_int_equal(f->exact_calls, 1);
        assert_conserved(f);
}

static void test_uncharge_returns_surplus_above_two_batches(void **state) {
        Fake *f = *state;
        uint64_t batch = STOCK_MIN_BATCH, page, held;

        /* Refills neither quick nor rare: the batch stays put. */
        f->now_step = 2 * STOCK_GROW_NSEC;
        /* One batch, through a refill; then another refill goes ahead. */
        assert_int_equal(stock_charge(&f->stock, ANON, batch), 0);
        fake_deliver_all(f);
        assert_int_equal(f->stock.items[ANON].batch, batch);
        assert_int_equal(stock_charge(&f->stock, ANON, 3 * batch), 0); /* exact */
        held = stock_held(&f->stock, ANON);
        assert_int_equal(held, 4 * batch);
        page = atomic_load(&f->page[ANON]);

        /* Back into the page, up to two batches: no message. */
        assert_int_equal(stock_uncharge(&f->stock, ANON, 2 * batch - page), 0);
        assert_int_equal(f->return_sends, 0);
        assert_int_equal(atomic_load(&f->page[ANON]), 2 * batch);
        /* One byte over the bound: what exceeds one batch goes back. */
        assert_int_equal(stock_uncharge(&f->stock, ANON, 4 * KiB), 0);
        assert_int_equal(f->return_sends, 1);
        assert_int_equal(f->last_return_bytes, batch + 4 * KiB);
        assert_int_equal(atomic_load(&f->page[ANON]), batch);
        assert_conserved(f);
}

static void test_surplus_bound_holds_with_refill_in_flight(void **state) {
        Fake *f = *state;
        uint64_t batch = STOCK_MIN_BATCH, held;

        f->now_step = 2 * STOCK_GROW_NSEC; /* the batch stays put */
        assert_int_equal(stock_charge(&f->stock, ANON, 4 * batch), 0); /* exact */
        fake_fill(f, ANON, batch / STOCK_LOW_DIV);
        /* Below the low mark: a refill of one batch goes ahead, unanswered. */
        assert_int_equal(stock_charge(&f->stock, ANON, 4 * KiB), 0);
        assert_true(atomic_load(&f->stock.items[ANON].inflight));
        /* Everything comes back while it is in flight... */
        held = stock_held(&f->stock, ANON);
        for (uint64_t done = 0; done < held; done += 4 * KiB)
                assert_int_equal(stock_uncharge(&f->stock, ANON, 4 * KiB), 0);
        assert_true(atomic_load(&f->page[ANON]) <= STOCK_HIGH_MUL * batch - batch);
        /* ...and once it lands the page is still within two batches. */
        fake_deliver_all(f);
        assert_true(atomic_load(&f->page[ANON]) <= STOCK_HIGH_MUL * batch);
        assert_int_equal(atomic_load(&f->stock.items[ANON].high_mark), STOCK_HIGH_MUL * batch);
        assert_conserved(f);
}

static void test_uncharge_beyond_held_is_erange(void **state) {
        Fake *f = *state;

        assert_int_equal(stock_charge(&f->stock, FILE_, 8 * KiB), 0);
        assert_int_equal(stock_uncharge(&f->stock, FILE_, 12 * KiB), -ERANGE);
        assert_int_equal(stock_held(&f->stock, FILE_), 8 * KiB);
        assert_int_equal(stock_uncharge(&f->stock, ANON, 4 * KiB), -ERANGE);
        assert_int_equal(stock_uncharge(&f->stock, FILE_, 8 * KiB), 0);
        assert_int_equal(stock_held(&f->stock, FILE_), 0);
        assert_conserved(f);
}

static void test_daemon_drain_to_zero_is_tolerated(void **state) {
        Fake *f = *state;
        uint64_t v;

        assert_int_equal(stock_charge(&f->stock, ANON, 4 * KiB), 0);
        /* drain_all_stock() on the daemon's side: exchange with 0, uncharge. */
        v = atomic_exchange(&f->page[ANON], 0);
        atomic_fetch_add(&f->page[STOCK_DRAINED(ANON)], v);
        f->usage -= v;
        assert_conserved(f);
        assert_int_equal(stock_charge(&f->stock, ANON, 4 * KiB), 0);
        assert_int_equal(stock_held(&f->stock, ANON), 8 * KiB);
        assert_int_equal(f->refill_sends, 2);
        assert_conserved(f);
}

static void test_items_are_independent(void **state) {
        Fake *f = *state;

        fake_fill(f, FILE_, 1 * MiB);
        assert_int_equal(stock_charge(&f->stock, ANON, 4 * KiB), 0);
        assert_int_equal(f->refill_sends, 1);
        assert_int_equal(atomic_load(&f->page[FILE_]), 1 * MiB);
        assert_int_equal(stock_held(&f->stock, FILE_), 0);
        assert_int_equal(stock_charge(&f->stock, STOCK_LINES, 4 * KiB), -EINVAL);
        assert_conserved(f);
}

static void test_no_page_is_enxio(void **state) {
        Fake *f = *state;

        stock_set_page(&f->stock, NULL);
        assert_int_equal(stock_charge(&f->stock, ANON, 4 * KiB), -ENXIO);
        assert_int_equal(stock_uncharge(&f->stock, ANON, 4 * KiB), -ENXIO);
}

#define THREAD_ROUNDS 20000

static void *charger(void *userdata) {
        Fake *f = userdata;
        uint64_t mine = 0;

        for (unsigned i = 0; i < THREAD_ROUNDS; i++) {
                uint64_t n = 4 * KiB * (1 + i % 7);

                assert_int_equal(stock_charge(&f->stock, ANON, n), 0);
                mine += n;
                if (i % 3 == 2) {
                        assert_int_equal(stock_uncharge(&f->stock, ANON, mine), 0);
                        mine = 0;
                }
        }
        assert_int_equal(stock_uncharge(&f->stock, ANON, mine), 0);
        return NULL;
}

static void test_concurrent_charges_conserve_bytes(void **state) {
        Fake *f = *state;
        pthread_t t[4];

        f->now_step = 1000;
        for (size_t i = 0; i < ELEMENTSOF(t); i++)
                assert_int_equal(pthread_create(&t[i], NULL, charger, f), 0);
        for (size_t i = 0; i < ELEMENTSOF(t); i++)
                assert_int_equal(pthread_join(t[i], NULL), 0);
        assert_int_equal(stock_held(&f->stock, ANON), 0);
        assert_conserved(f);
        /* The stock kept the slack bounded: at most two batches. */
        assert_true(atomic_load(&f->page[ANON]) <= STOCK_HIGH_MUL * f->stock.items[ANON].batch);
}

#define GPU0 (STOCK_ITEMS + 0)
#define GPU1 (STOCK_ITEMS + 1)

static void test_region_line_learns_its_counter_then_runs_fast(void **state) {
        Fake *f = *state;
        unsigned index;

        assert_int_equal(atomic_load(&f->stock.items[GPU0].index), -1);
        /* The first charge has no counter: a refill, whose reply names it. */
        assert_int_equal(stock_charge(&f->stock, GPU0, 4 * KiB), 0);
        index = fake_index(f, GPU0);
        assert_int_equal(atomic_load(&f->stock.items[GPU0].index), index);
        assert_int_equal(f->refill_sends, 1);
        assert_int_equal(f->exact_calls, 0);
        for (int i = 0; i < 8; i++)
                assert_int_equal(stock_charge(&f->stock, GPU0, 4 * KiB), 0);
        assert_int_equal(f->refill_sends, 1);
        assert_int_equal(atomic_load(&f->page[index]), STOCK_MIN_BATCH - 9 * 4 * KiB);
        assert_int_equal(stock_held(&f->stock, GPU0), 9 * 4 * KiB);
        /* Memory's items and the other region are untouched. */
        assert_int_equal(stock_held(&f->stock, ANON), 0);
        assert_int_equal(stock_held(&f->stock, GPU1), 0);
        assert_int_equal(atomic_load(&f->page[ANON]), 0);
        assert_int_equal(stock_uncharge(&f->stock, GPU0, 9 * 4 * KiB), 0);
        assert_int_equal(stock_uncharge(&f->stock, GPU0, 4 * KiB), -ERANGE);
        assert_int_equal(stock_held(&f->stock, GPU0), 0);
        assert_conserved(f);
}

static void test_region_lines_have_their_own_counters_and_margins(void **state) {
        Fake *f = *state;

        assert_int_equal(stock_charge(&f->stock, GPU0, 4 * KiB), 0);
        assert_int_equal(stock_charge(&f->stock, GPU1, 8 * KiB), 0);
        assert_int_equal(stock_charge(&f->stock, ANON, 12 * KiB), 0);
        assert_int_not_equal(atomic_load(&f->stock.items[GPU0].index), atomic_load(&f->stock.items[GPU1].index));
        assert_int_equal(stock_held(&f->stock, GPU0), 4 * KiB);
        assert_int_equal(stock_held(&f->stock, GPU1), 8 * KiB);
        assert_int_equal(stock_held(&f->stock, ANON), 12 * KiB);
        /* A refused region refill zeroes that region's margin only. */
        stock_refill_done(&f->stock, GPU1, -EDQUOT, 0, 0);
        assert_int_equal(f->stock.items[GPU1].margin, 0);
        assert_int_equal(stock_refill_size(&f->stock, GPU1, 0), 0);
        assert_true(stock_refill_size(&f->stock, GPU0, 0) > 0);
        assert_true(stock_refill_size(&f->stock, ANON, 0) > 0);
        assert_conserved(f);
}

static void test_region_line_relearns_its_counter_on_a_new_page(void **state) {
        Fake *f = *state;
        _Atomic uint64_t *page2 = calloc(STOCK_PAGE_SIZE / sizeof(uint64_t), sizeof(*page2));
        uint64_t usage;

        assert_non_null(page2);
        assert_int_equal(stock_charge(&f->stock, GPU0, 4 * KiB), 0);
        fake_deliver_all(f);
        /* A reconnection: the old session died with what it held; the
         * caller still holds its 4 KiB, now in direct, and replays them. */
        (void) stock_take(&f->stock, GPU0);
        stock_set_page(&f->stock, page2);
        assert_int_equal(atomic_load(&f->stock.items[GPU0].index), -1);
        assert_int_equal(atomic_load(&f->stock.items[ANON].index), ANON);
        assert_int_equal(stock_held(&f->stock, GPU0), 4 * KiB);
        /* Until it learns the counter, an uncharge goes exact. */
        usage = f->usage;
        assert_int_equal(stock_uncharge(&f->stock, GPU0, 4 * KiB), 0);
        assert_int_equal(f->usage, usage - 4 * KiB);
        assert_int_equal(stock_held(&f->stock, GPU0), 0);
        stock_set_page(&f->stock, f->page);
        free((void *) page2);
}

static void test_region_counter_of_another_region_charges_exactly(void **state) {
        Fake *f = *state;
        unsigned refills;

        /* The daemon answers -EBUSY: the slot's counter is an earlier
         * region's on this page. The line falls back to exact charges and
         * never asks for a refill again on this page. */
        f->region_busy[0] = true;
        assert_int_equal(stock_charge(&f->stock, GPU0, 4 * KiB), 0);
        assert_int_equal(f->exact_calls, 1);
        assert_true(f->stock.items[GPU0].exact_only);
        refills = f->refill_sends;
        assert_int_equal(stock_charge(&f->stock, GPU0, 4 * KiB), 0);
        assert_int_equal(f->refill_sends, refills);
        assert_int_equal(f->exact_calls, 2);
        assert_int_equal(stock_held(&f->stock, GPU0), 8 * KiB);
        assert_int_equal(stock_uncharge(&f->stock, GPU0, 8 * KiB), 0);
        assert_int_equal(stock_held(&f->stock, GPU0), 0);
        assert_conserved(f);
}

static void test_region_counter_index_out_of_range_is_ignored(void **state) {
        Fake *f = *state;

        /* A reply naming memory's rows, or past the regions', is not trusted. */
        stock_refill_done(&f->stock, GPU0, 0, UINT64_MAX, ANON);
        assert_int_equal(atomic_load(&f->stock.items[GPU0].index), -1);
        stock_refill_done(&f->stock, GPU0, 0, UINT64_MAX, STOCK_REGION_INDEX(STOCK_REGIONS + 1));
        assert_int_equal(atomic_load(&f->stock.items[GPU0].index), -1);
        /* Nor one another line has. */
        assert_int_equal(stock_charge(&f->stock, GPU1, 4 * KiB), 0);
        stock_refill_done(&f->stock, GPU0, 0, UINT64_MAX, fake_index(f, GPU1));
        assert_int_equal(atomic_load(&f->stock.items[GPU0].index), -1);
        assert_conserved(f);
}

static void test_region_drain_by_the_daemon_keeps_what_is_held(void **state) {
        Fake *f = *state;
        unsigned index;
        uint64_t v;

        assert_int_equal(stock_charge(&f->stock, GPU0, 4 * KiB), 0);
        index = fake_index(f, GPU0);
        v = atomic_exchange(&f->page[index], 0);
        atomic_fetch_add(&f->page[stock_drained_index(index)], v);
        f->usage -= v;
        assert_int_equal(stock_held(&f->stock, GPU0), 4 * KiB);
        assert_conserved(f);
}

int main(void) {
        const struct CMUnitTest tests[] = {
#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)
                T(test_consume_served_from_page_without_transport),
                T(test_empty_page_refills_one_batch_then_consumes),
                T(test_refill_ahead_below_low_mark_without_waiting),
                T(test_refill_ahead_skipped_when_lock_busy),
                T(test_reply_collected_by_poll_below_poll_mark),
                T(test_batch_grows_with_quick_refills_up_to_max),
                T(test_batch_shrinks_when_refills_are_rare),
                T(test_refill_never_above_fraction_of_margin),
                T(test_near_limit_charges_exactly),
                T(test_refused_refill_falls_back_to_exact),
                T(test_refused_exact_charge_is_edquot_and_holds_nothing),
                T(test_charge_larger_than_batch_is_exact),
                T(test_uncharge_returns_surplus_above_two_batches),
                T(test_surplus_bound_holds_with_refill_in_flight),
                T(test_uncharge_beyond_held_is_erange),
                T(test_daemon_drain_to_zero_is_tolerated),
                T(test_items_are_independent),
                T(test_no_page_is_enxio),
                T(test_concurrent_charges_conserve_bytes),
                T(test_region_line_learns_its_counter_then_runs_fast),
                T(test_region_lines_have_their_own_counters_and_margins),
                T(test_region_line_relearns_its_counter_on_a_new_page),
                T(test_region_counter_of_another_region_charges_exactly),
                T(test_region_counter_index_out_of_range_is_ignored),
                T(test_region_drain_by_the_daemon_keeps_what_is_held),
#undef T
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
