/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * The charge stock's policy: consume, refill sizing, surplus return and the
 * near-limit exact fallback, against a page of counters and a transport
 * given as callbacks, so that tests can drive it with a fake of both.
 */

#include <errno.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "macro.h"

/*
 * The shared page (memacct.proto, StockSetup): one counter per stat item
 * of memory, then, written by the daemon alone, what its refills added to
 * each and what its drains took from each, in total (see held in Stock);
 * then the same three rows for device regions, one counter per region
 * slot of the daemon's (1 to STOCK_REGIONS; a refill's reply says which).
 *
 * The stock's lines: memory's stat items first (line = item = index in
 * the page), then device regions, one line per region name the caller
 * asked for (memacct_stock_region()), whose page index is learned from
 * its first refill on each page (StockItem.index).
 */
#define STOCK_ITEMS 8
#define STOCK_REGIONS 31
#define STOCK_LINES (STOCK_ITEMS + STOCK_REGIONS)
#define STOCK_PAGE_SIZE 4096
#define STOCK_REFILLED(item) (STOCK_ITEMS + (item))
#define STOCK_DRAINED(item) (2 * STOCK_ITEMS + (item))
#define STOCK_REGION_INDEX(slot) (3 * STOCK_ITEMS + (slot))
#define STOCK_REGION_ROW (STOCK_REGIONS + 1)

/* The page indexes of the totals beside counter @index. */
static inline unsigned stock_refilled_index(unsigned index) {
        return index < STOCK_REGION_INDEX(0) ? STOCK_REFILLED(index) : index + STOCK_REGION_ROW;
}

static inline unsigned stock_drained_index(unsigned index) {
        return index < STOCK_REGION_INDEX(0) ? STOCK_DRAINED(index) : index + 2 * STOCK_REGION_ROW;
}

/* Refill batch bounds in bytes: a batch grows from 64 KiB to at most 4 MiB
 * (less if the daemon's charge-batch says so), and the page holds at most
 * about two batches per item: the over-charge bound memacct.h documents. */
#define STOCK_MIN_BATCH (UINT64_C(64) * 1024)
#define STOCK_MAX_BATCH (UINT64_C(4) * 1024 * 1024)
/* A refill never asks for more than 1/STOCK_MARGIN_DIV of the margin the
 * tightest max still admits. */
#define STOCK_MARGIN_DIV 8
/* Refills this close together mean the stock turns over fast: double the
 * batch. Refills this far apart mean a quiet client: halve it. */
#define STOCK_GROW_NSEC (UINT64_C(10) * 1000 * 1000)
#define STOCK_SHRINK_NSEC (UINT64_C(1000) * 1000 * 1000)
/* A refill is asked for ahead of need when the page falls below
 * batch / STOCK_LOW_DIV; surplus above STOCK_HIGH_MUL * batch is returned. */
#define STOCK_LOW_DIV 4
#define STOCK_HIGH_MUL 2

/*
 * The transport. Every callback but trylock() is called with the lock
 * held (taken through lock()/trylock()). The callbacks that read replies
 * (poll(), wait(), charge_exact()) deliver the replies of earlier refills
 * and returns to stock_refill_done() and stock_return_done() as they come.
 */
typedef struct StockOps {
        /* Send Charge{bytes, item, stock: true} without waiting for its reply. */
        int (*refill_send)(void *userdata, unsigned item, uint64_t bytes);
        /* Send Uncharge{bytes, item} (a surplus return) without waiting. */
        int (*return_send)(void *userdata, unsigned item, uint64_t bytes);
        /* Process the replies that have arrived; never blocks. */
        int (*poll)(void *userdata);
        /* Block until the refill of @item in flight has been answered. */
        int (*wait)(void *userdata, unsigned item);
        /* A synchronous exact session charge; on success *ret_margin is the
         * reply's margin (UINT64_MAX when it has none). */
        int (*charge_exact)(void *userdata, unsigned item, uint64_t bytes, uint64_t *ret_margin);
        /* A synchronous exact session uncharge (a region line without a
         * counter on the page gives back so). */
        int (*uncharge_exact)(void *userdata, unsigned item, uint64_t bytes);
        void (*lock)(void *userdata);
        bool (*trylock)(void *userdata);
        void (*unlock)(void *userdata);
        uint64_t (*now_nsec)(void *userdata);
} StockOps;

typedef struct StockItem {
        /* Read on the fast path, written under the lock. */
        _Atomic int32_t index;      /* in the page; -1: not known on this page yet */
        _Atomic uint64_t low_mark;  /* refill ahead below this */
        _Atomic uint64_t high_mark; /* return the surplus above this */
        _Atomic uint64_t poll_mark; /* with a refill in flight, look for its reply below this */
        _Atomic bool inflight;      /* a refill was sent and its reply not read yet */
        /* Under the lock only. */
        uint64_t batch;
        uint64_t inflight_bytes;
        uint64_t last_refill_nsec;
        /* A device region's: the last margin the daemon reported for it
         * (memory's items share Stock.margin); and whether the daemon
         * gives it no counter on this page (exact charges only). */
        uint64_t margin;
        bool exact_only;
} StockItem;

typedef struct StockStats {
        uint64_t refills;        /* refills sent */
        uint64_t refills_ahead;  /* of which ahead of need (the caller did not wait) */
        uint64_t refills_failed; /* refused or lost */
        uint64_t waits;          /* times a charge waited for a refill */
        uint64_t exact;          /* exact charges made instead of a refill */
        uint64_t returns;        /* surplus returns */
        uint64_t returned_bytes;
} StockStats;

typedef struct Stock {
        /* The page shared with the daemon; NULL until set up. Replaced (never
         * unmapped here) on reconnection. */
        _Atomic(_Atomic uint64_t *) page;
        /*
         * What the caller holds (handed out by the stock or charged
         * exactly, not yet uncharged: what a reconnection replays) is not
         * counted on the fast path; it is derived (stock_held()):
         *
         *   held = direct + refilled - drained - page
         *
         * with refilled and drained the daemon's totals in the page and
         * direct, per item, the bytes charged to the session other than
         * through the page: exact charges, less exact uncharges, less
         * what the handle took out of the page itself (surplus returns,
         * drains, a dead session's page). direct changes on slow paths
         * only, never on a stocked charge or uncharge: those are one
         * atomic operation on the page each.
         */
        _Atomic int64_t direct[STOCK_LINES] _cacheline_aligned_;
        StockItem items[STOCK_LINES] _cacheline_aligned_;
        /* Under the lock only. */
        uint64_t margin; /* memory's last margin the daemon reported; UINT64_MAX: no max */
        uint64_t max_batch;
        StockStats stats;
        const StockOps *ops;
        void *userdata;
} Stock;

/** stock_init() - an empty stock without a page; @max_batch 0 means STOCK_MAX_BATCH. */
void stock_init(Stock *s, const StockOps *ops, void *userdata, uint64_t max_batch);

/**
 * stock_set_page() - use @page (zero) from now on, and forget refills in
 * flight, the margins and the regions' indexes: a new session. Called with
 * the lock held. The old page, if any, is the caller's to keep mapped: a
 * concurrent fast path may still read it.
 */
void stock_set_page(Stock *s, _Atomic uint64_t *page);

/**
 * stock_refill_size() - the refill to ask for @item when a charge of
 * @bytes (0: ahead of need) cannot be served: the item's batch, at most
 * 1/STOCK_MARGIN_DIV of the margin, page aligned. Lock held.
 *
 * Return: the bytes, or 0 when the charge must be exact (near the limit, or
 * @bytes larger than a batch).
 */
uint64_t stock_refill_size(const Stock *s, unsigned item, uint64_t bytes);

/* stock_page_consume()'s "the page does not cover it". */
#define STOCK_NONE UINT64_MAX

/**
 * stock_page_consume() - consume_stock(): take @bytes from @c if it has
 * them. Relaxed: the counters publish no other data (client-stock.c).
 * Return: what is left, or STOCK_NONE (nothing taken).
 */
static inline uint64_t stock_page_consume(_Atomic uint64_t *c, uint64_t bytes) {
        uint64_t v = atomic_load_explicit(c, memory_order_relaxed);

        do {
                if (v < bytes)
                        return STOCK_NONE;
        } while (!atomic_compare_exchange_weak_explicit(c, &v, v - bytes, memory_order_relaxed,
                                                        memory_order_relaxed));
        return v - bytes;
}

/* The slow paths of the inline functions below (client-stock.c). */
int stock_charge_slow(Stock *s, unsigned item, uint64_t bytes) __attribute__((cold, noinline));
void stock_refill_ahead(Stock *s, _Atomic uint64_t *page, unsigned item) __attribute__((noinline));
int stock_uncharge_slow(Stock *s, _Atomic uint64_t *page, unsigned item) __attribute__((cold, noinline));
int stock_uncharge_exact(Stock *s, unsigned item, uint64_t bytes) __attribute__((cold, noinline));

/**
 * stock_held_on() - the bytes of @item the caller holds, its counter
 * being at @index of @page (-1: none on it):
 *
 *   held = direct + refilled - drained - page (Stock.direct),
 *
 * read in the order that errs high, never low, against the daemon's
 * updates: it adds to refilled before it adds a refill to the page, and
 * takes a drain from the page before it adds it to drained; so drained is
 * read before the page, and refilled after it. direct moves after the
 * page too (a return, a take), and is read first. Clamped at 0: the page
 * is the client's memory, and a caller that gives back more than it
 * holds must not wrap it. On x86 every one of these loads is a plain mov.
 */
static inline uint64_t stock_held_on(const Stock *s, unsigned item, _Atomic uint64_t *page, int32_t index) {
        int64_t direct = atomic_load_explicit(&((Stock *) s)->direct[item], memory_order_seq_cst);
        uint64_t held;

        if (!page || index < 0)
                return (uint64_t) MAX(direct, 0);
        held = (uint64_t) direct -
               atomic_load_explicit(&page[stock_drained_index((unsigned) index)], memory_order_seq_cst);
        held -= atomic_load_explicit(&page[index], memory_order_seq_cst);
        held += atomic_load_explicit(&page[stock_refilled_index((unsigned) index)], memory_order_seq_cst);
        return (int64_t) held < 0 ? 0 : held;
}

/* stock_held() - stock_held_on() of the current page. */
static inline uint64_t stock_held(const Stock *s, unsigned item) {
        Stock *w = (Stock *) s;

        if (item >= STOCK_LINES)
                return 0;
        return stock_held_on(s, item, atomic_load_explicit(&w->page, memory_order_acquire),
                             atomic_load_explicit(&w->items[item].index, memory_order_acquire));
}

/**
 * stock_charge() - charge @bytes of @item through the stock. One
 * compare-and-swap on the page when it covers them (and a refill ahead
 * of need is only tried with trylock()); else takes the lock, waits for a
 * refill and, failing that, charges exactly. Any thread, concurrently.
 *
 * Return: 0; -EINVAL (a bad @item); -ENXIO (no page); an error of
 * charge_exact() or of the transport.
 */
static inline int stock_charge(Stock *s, unsigned item, uint64_t bytes) {
        _Atomic uint64_t *page;
        StockItem *it;
        uint64_t left;
        int32_t index;

        if (_unlikely_(item >= STOCK_LINES))
                return -EINVAL;
        if (_unlikely_(bytes == 0))
                return 0;
        /* Acquire: pairs with stock_set_page(). */
        page = atomic_load_explicit(&s->page, memory_order_acquire);
        if (_unlikely_(!page))
                return -ENXIO;
        it = &s->items[item];
        /* Relaxed: the index only changes with the lock held and the page
         * replaced (a reconnection), or from -1 to the region's index. */
        index = atomic_load_explicit(&it->index, memory_order_relaxed);
        if (_unlikely_(index < 0))
                return stock_charge_slow(s, item, bytes);
        left = stock_page_consume(&page[index], bytes);
        if (_unlikely_(left == STOCK_NONE))
                return stock_charge_slow(s, item, bytes);
        if (_unlikely_(left < atomic_load_explicit(&it->low_mark, memory_order_relaxed)) &&
            (!atomic_load_explicit(&it->inflight, memory_order_relaxed) ||
             left < atomic_load_explicit(&it->poll_mark, memory_order_relaxed)))
                stock_refill_ahead(s, page, item);
        return 0;
}

/**
 * stock_uncharge() - give @bytes of @item back to the page: one atomic
 * add; if the page then holds more than two batches, return the surplus
 * above one batch. Any thread, concurrently.
 *
 * The check against what the caller holds is a check, not a count (held
 * is derived): it never refuses bytes the caller holds, its own charges
 * being all seen by it; two threads giving back more than they hold
 * together may both pass, and the daemon then refuses the surplus return
 * or trusts the page no further than the session holds.
 *
 * Return: 0; -ERANGE (the caller holds fewer bytes of @item: nothing
 * changed); -EINVAL; -ENXIO (no page); a transport error from the return
 * (the bytes are then out of the page and not returned; the caller's
 * session is broken anyway).
 */
static inline int stock_uncharge(Stock *s, unsigned item, uint64_t bytes) {
        _Atomic uint64_t *page;
        uint64_t v;
        int32_t index;

        if (_unlikely_(item >= STOCK_LINES))
                return -EINVAL;
        if (_unlikely_(bytes == 0))
                return 0;
        page = atomic_load_explicit(&s->page, memory_order_acquire);
        if (_unlikely_(!page))
                return -ENXIO;
        index = atomic_load_explicit(&s->items[item].index, memory_order_acquire);
        if (_unlikely_(stock_held_on(s, item, page, index) < bytes))
                return -ERANGE;
        if (_unlikely_(index < 0))
                return stock_uncharge_exact(s, item, bytes);
        v = atomic_fetch_add_explicit(&page[index], bytes, memory_order_relaxed) + bytes;
        if (_likely_(v <= atomic_load_explicit(&s->items[item].high_mark, memory_order_relaxed)))
                return 0;
        return stock_uncharge_slow(s, page, item);
}

/**
 * stock_refill_done() - the reply to a refill of @item: @r 0 or its error,
 * @margin the reply's margin (UINT64_MAX: none), @index the page counter
 * a device region's refill went to (a region line learns its index so).
 * -EBUSY on a region line: the daemon has no counter for the region on
 * this page; the line charges exactly from then on. Adapts the batch. Lock held.
 */
void stock_refill_done(Stock *s, unsigned item, int r, uint64_t margin, uint32_t index);

/** stock_return_done() - the reply to a surplus return. Lock held. */
void stock_return_done(Stock *s, unsigned item, uint64_t bytes, int r);

/**
 * stock_note_margin() - the margin of a reply to a charge of memory that
 * did not go through the stock (an exact session charge). Lock held.
 */
void stock_note_margin(Stock *s, uint64_t margin);

/** stock_note_charged() - the caller now holds @bytes more of @item (an exact session charge). */
void stock_note_charged(Stock *s, unsigned item, uint64_t bytes);

/**
 * stock_note_uncharged() - the caller holds @bytes less of @item.
 * Return: 0, or -ERANGE (holds fewer; nothing changed).
 */
int stock_note_uncharged(Stock *s, unsigned item, uint64_t bytes);

/**
 * stock_take() - empty the page's @item (exchange with 0), as
 * drain_stock() does. Return: the bytes taken.
 */
uint64_t stock_take(Stock *s, unsigned item);


/** stock_peek() - the bytes of @item in the page now (0 without a page). */
uint64_t stock_peek(const Stock *s, unsigned item);
