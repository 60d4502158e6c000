/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The charge stock: the kernel's per-cpu memcg stock (consume_stock(),
 * refill_stock(), drain_stock() and the batch retry of try_charge_memcg() in
 * mm/memcontrol.c) moved across the IPC boundary.
 *
 * The page holds, per stat item, bytes already charged to the session and
 * not yet handed out. Three parties change it:
 *   - the client's threads take from it (compare-and-swap, never below 0)
 *     and give back to it (add);
 *   - the daemon adds a refill's bytes when the refill's charge succeeded;
 *   - the daemon empties it (exchange with 0, then uncharges what it took)
 *     when a charge elsewhere under the same max would be refused.
 * Every change is one atomic read-modify-write of one counter, so no byte
 * is counted twice whatever the interleaving; the counters publish no other
 * data, which is why relaxed ordering is enough for all of them.
 *
 * Invariant, per item, between calls: the daemon's session holds
 * held + page[item] (+ refills in flight, once they land; - returns in
 * flight, once they land). held is what a daemon restart must replay; it
 * is derived, not counted (Stock.direct says how), so that a stocked
 * charge and uncharge are one locked instruction each.
 *
 * Policy, per item:
 *   - consume: the fast path, no lock, no system call;
 *   - refill ahead: when a consume leaves less than batch/4, a refill of one
 *     batch is sent without waiting (trylock: if another thread holds the
 *     handle, it is simply tried again by a later charge); its reply is read
 *     later by whichever call next touches the socket;
 *   - a charge the page cannot cover takes the lock, reads the replies that
 *     arrived, waits for a refill in flight, else sends one and waits; if
 *     none helps (refused, near the limit, or a charge larger than a batch),
 *     it charges exactly the bytes asked (try_charge_memcg() steps 3-4);
 *   - the batch doubles (up to 4 MiB) while refills follow each other
 *     within 10 ms and halves (down to 64 KiB) when they are a second apart
 *     or refused; a refill never asks for more than 1/8 of the margin the
 *     daemon last reported, and below 64 KiB of that the stock is bypassed;
 *   - uncharge: add back; above two batches, return what exceeds one batch
 *     (refill_stock()'s drain, but keeping a batch for the next charges).
 *
 * So the page holds at most about two batches per item (while a refill is
 * in flight, the surplus bound is lowered by its size, so that it cannot
 * land on top of two batches): the over-charge bound documented in
 * memacct.h.
 */

#include <errno.h>
#include <stddef.h>

#include "client-stock.h"

#define PAGE_ALIGN_DOWN(x) ((x) & ~(uint64_t) (STOCK_PAGE_SIZE - 1))

static void item_set_batch(StockItem *it, uint64_t batch) {
        it->batch = batch;
        /* Relaxed: the fast path only uses these as hints; a stale value
         * delays or hastens one refill or return, it never miscounts. */
        atomic_store_explicit(&it->low_mark, batch / STOCK_LOW_DIV, memory_order_relaxed);
        atomic_store_explicit(&it->high_mark, batch * STOCK_HIGH_MUL, memory_order_relaxed);
}

/* The margin that bounds refills of @item: memory's items share one. */
static uint64_t *line_margin(Stock *s, unsigned item) {
        return item < STOCK_ITEMS ? &s->margin : &s->items[item].margin;
}

void stock_init(Stock *s, const StockOps *ops, void *userdata, uint64_t max_batch) {
        *s = (Stock) {
                .ops = ops,
                .userdata = userdata,
                .margin = UINT64_MAX,
                .max_batch = max_batch > 0 ? MAX(MIN(max_batch, STOCK_MAX_BATCH), STOCK_MIN_BATCH)
                                           : STOCK_MAX_BATCH,
        };
        atomic_init(&s->page, NULL);
        for (unsigned i = 0; i < STOCK_LINES; i++) {
                atomic_init(&s->direct[i], 0);
                atomic_init(&s->items[i].index, i < STOCK_ITEMS ? (int32_t) i : -1);
                atomic_init(&s->items[i].inflight, false);
                atomic_init(&s->items[i].poll_mark, 0);
                s->items[i].margin = UINT64_MAX;
                item_set_batch(&s->items[i], STOCK_MIN_BATCH);
        }
}

void stock_set_page(Stock *s, _Atomic uint64_t *page) {
        for (unsigned i = 0; i < STOCK_LINES; i++) {
                StockItem *it = &s->items[i];

                /* What the caller holds stays what it held: the old page's
                 * totals move into direct, the new page's start at 0. A
                 * region's counter on the new page is learned anew. */
                atomic_store_explicit(&s->direct[i], (int64_t) stock_held(s, i), memory_order_relaxed);
                if (i >= STOCK_ITEMS) {
                        atomic_store_explicit(&it->index, -1, memory_order_relaxed);
                        it->margin = UINT64_MAX;
                        it->exact_only = false;
                }
                atomic_store_explicit(&it->inflight, false, memory_order_relaxed);
                it->inflight_bytes = 0;
                it->last_refill_nsec = 0;
                item_set_batch(it, STOCK_MIN_BATCH);
        }
        s->margin = UINT64_MAX;
        /* Release: a thread that sees the new page sees the state above. */
        atomic_store_explicit(&s->page, page, memory_order_release);
}

uint64_t stock_refill_size(const Stock *s, unsigned item, uint64_t bytes) {
        uint64_t b = s->items[item].batch, margin = *line_margin((Stock *) s, item);

        if (s->items[item].exact_only)
                return 0;
        if (margin != UINT64_MAX)
                b = MIN(b, margin / STOCK_MARGIN_DIV);
        b = PAGE_ALIGN_DOWN(b);
        if (b < STOCK_MIN_BATCH || b < bytes)
                return 0;
        return b;
}

/* Send a refill of @item. Lock held. */
static int stock_send_refill(Stock *s, unsigned item, uint64_t size, bool ahead) {
        StockItem *it = &s->items[item];
        int r;

        r = s->ops->refill_send(s->userdata, item, size);
        if (r < 0)
                return r;
        it->inflight_bytes = size;
        atomic_store_explicit(&it->inflight, true, memory_order_relaxed);
        /* The refill lands on top of whatever uncharges bring back
         * meanwhile: lower the bound by it, so the page stays within two
         * batches once it has landed. */
        atomic_store_explicit(&it->high_mark, it->batch * STOCK_HIGH_MUL - size,
                              memory_order_relaxed);
        /* Look for the reply once another 1/16 batch is consumed. */
        atomic_store_explicit(&it->poll_mark,
                              atomic_load_explicit(&it->low_mark, memory_order_relaxed) * 3 / 4,
                              memory_order_relaxed);
        s->stats.refills++;
        if (ahead)
                s->stats.refills_ahead++;
        return 0;
}

/*
 * The page fell below the low mark: collect a refill reply that arrived,
 * and send the next refill, without ever waiting for the lock. A failure is
 * not the caller's: its charge succeeded; the next charge that needs the
 * socket meets the error.
 */
void stock_refill_ahead(Stock *s, _Atomic uint64_t *page, unsigned item) {
        StockItem *it = &s->items[item];
        uint64_t left, size;
        int32_t index;

        if (!s->ops->trylock(s->userdata))
                return;
        /* Reconnected meanwhile: the page is another; leave it to the next charge. */
        index = atomic_load_explicit(&it->index, memory_order_relaxed);
        if (atomic_load_explicit(&s->page, memory_order_relaxed) != page || index < 0)
                goto out;
        (void) s->ops->poll(s->userdata);
        left = atomic_load_explicit(&page[index], memory_order_relaxed);
        if (atomic_load_explicit(&it->inflight, memory_order_relaxed)) {
                /* Its reply is not there yet: look again a little lower. */
                atomic_store_explicit(&it->poll_mark, left * 3 / 4, memory_order_relaxed);
                goto out;
        }
        if (left >= atomic_load_explicit(&it->low_mark, memory_order_relaxed))
                goto out;
        size = stock_refill_size(s, item, 0);
        if (size > 0)
                (void) stock_send_refill(s, item, size, true);
out:
        s->ops->unlock(s->userdata);
}

int stock_charge_slow(Stock *s, unsigned item, uint64_t bytes) {
        StockItem *it = &s->items[item];
        _Atomic uint64_t *page;
        uint64_t left, size, margin;
        unsigned sent = 0;
        int32_t index;
        int r;

        s->ops->lock(s->userdata);
        page = atomic_load_explicit(&s->page, memory_order_relaxed);
        if (!page) {
                r = -ENXIO;
                goto out;
        }
        for (unsigned round = 0; round < 8; round++) {
                r = s->ops->poll(s->userdata);
                if (r < 0)
                        goto out;
                index = atomic_load_explicit(&it->index, memory_order_relaxed);
                left = index >= 0 ? stock_page_consume(&page[index], bytes) : STOCK_NONE;
                if (left != STOCK_NONE) {
                        r = 0;
                        /* Served, but low: ask for the next batch now. */
                        if (left < atomic_load_explicit(&it->low_mark, memory_order_relaxed) &&
                            !atomic_load_explicit(&it->inflight, memory_order_relaxed)) {
                                size = stock_refill_size(s, item, 0);
                                if (size > 0)
                                        (void) stock_send_refill(s, item, size, true);
                        }
                        goto out;
                }
                if (atomic_load_explicit(&it->inflight, memory_order_relaxed)) {
                        s->stats.waits++;
                        r = s->ops->wait(s->userdata, item);
                        if (r < 0)
                                goto out;
                        continue;
                }
                /* Two refills of our own did not cover it (other threads
                 * took them, or the daemon drained them): charge exactly. */
                if (sent >= 2)
                        break;
                size = stock_refill_size(s, item, bytes);
                if (size == 0)
                        break;
                r = stock_send_refill(s, item, size, false);
                if (r < 0)
                        goto out;
                sent++;
        }

        /* try_charge_memcg() step 4: the batch failed or is not worth it;
         * only the exact amount is tried. */
        s->stats.exact++;
        r = s->ops->charge_exact(s->userdata, item, bytes, &margin);
        if (r >= 0) {
                *line_margin(s, item) = margin;
                atomic_fetch_add_explicit(&s->direct[item], (int64_t) bytes, memory_order_relaxed);
                r = 0;
        }
out:
        s->ops->unlock(s->userdata);
        return r;
}

/* Return what exceeds one batch of @item. Lock held. */
static int stock_return_surplus(Stock *s, _Atomic uint64_t *page, unsigned item) {
        StockItem *it = &s->items[item];
        int32_t index = atomic_load_explicit(&it->index, memory_order_relaxed);
        uint64_t v, keep, surplus;
        int r;

        if (index < 0)
                return 0;
        keep = MIN(it->batch, atomic_load_explicit(&it->high_mark, memory_order_relaxed));
        v = atomic_load_explicit(&page[index], memory_order_relaxed);
        do {
                if (v <= atomic_load_explicit(&it->high_mark, memory_order_relaxed))
                        return 0; /* another thread returned it, or it was consumed */
                surplus = v - keep;
        } while (!atomic_compare_exchange_weak_explicit(&page[index], &v, v - surplus,
                                                        memory_order_relaxed, memory_order_relaxed));
        /* Out of the page, and no longer the session's once the return
         * lands: the caller holds what it held (after the page's update,
         * so that a concurrent stock_held() errs high, never low). */
        atomic_fetch_sub_explicit(&s->direct[item], (int64_t) surplus, memory_order_seq_cst);
        r = s->ops->return_send(s->userdata, item, surplus);
        if (r < 0)
                return r;
        s->stats.returns++;
        s->stats.returned_bytes += surplus;
        return 0;
}

int stock_uncharge_slow(Stock *s, _Atomic uint64_t *page, unsigned item) {
        int r = 0;

        s->ops->lock(s->userdata);
        /* A reconnection in between emptied the old page for good. */
        if (atomic_load_explicit(&s->page, memory_order_relaxed) == page)
                r = stock_return_surplus(s, page, item);
        s->ops->unlock(s->userdata);
        return r;
}

/* A region line's page counter: @index, unless it is out of the region
 * rows or another line's (the daemon never gives one to two regions on
 * one page: it answers -EBUSY instead; a page from elsewhere is not
 * trusted with it either). Lock held. */
static void line_learn_index(Stock *s, unsigned item, uint32_t index) {
        StockItem *it = &s->items[item];

        if (item < STOCK_ITEMS || atomic_load_explicit(&it->index, memory_order_relaxed) >= 0)
                return;
        if (index <= STOCK_REGION_INDEX(0) || index > STOCK_REGION_INDEX(STOCK_REGIONS))
                return;
        for (unsigned i = STOCK_ITEMS; i < STOCK_LINES; i++)
                if (atomic_load_explicit(&s->items[i].index, memory_order_relaxed) == (int32_t) index)
                        return;
        /* Release: stock_held() on another thread reads the page's totals
         * at this index only after it sees the index. */
        atomic_store_explicit(&it->index, (int32_t) index, memory_order_release);
}

int stock_uncharge_exact(Stock *s, unsigned item, uint64_t bytes) {
        int r;

        s->ops->lock(s->userdata);
        /* Everything the line holds is direct (no counter on this page):
         * give the bytes back to the session itself. */
        r = s->ops->uncharge_exact(s->userdata, item, bytes);
        if (r >= 0)
                r = stock_note_uncharged(s, item, bytes);
        s->ops->unlock(s->userdata);
        return r;
}

void stock_refill_done(Stock *s, unsigned item, int r, uint64_t margin, uint32_t index) {
        StockItem *it;
        uint64_t now, batch;

        if (item >= STOCK_LINES)
                return;
        it = &s->items[item];
        batch = it->batch;
        atomic_store_explicit(&it->inflight, false, memory_order_relaxed);
        it->inflight_bytes = 0;
        if (r < 0) {
                s->stats.refills_failed++;
                if (r == -EDQUOT) {
                        /* Near the limit: exact charges until one reports a
                         * margin again; a smaller batch after that. */
                        *line_margin(s, item) = 0;
                        batch = MAX(batch / 2, STOCK_MIN_BATCH);
                }
                if (r == -EBUSY && item >= STOCK_ITEMS)
                        it->exact_only = true;
                item_set_batch(it, batch); /* also restores the surplus bound */
                return;
        }
        line_learn_index(s, item, index);
        *line_margin(s, item) = margin;
        now = s->ops->now_nsec(s->userdata);
        if (it->last_refill_nsec > 0 && now - it->last_refill_nsec < STOCK_GROW_NSEC)
                batch = MIN(batch * 2, s->max_batch);
        else if (it->last_refill_nsec > 0 && now - it->last_refill_nsec > STOCK_SHRINK_NSEC)
                batch = MAX(batch / 2, STOCK_MIN_BATCH);
        it->last_refill_nsec = now;
        item_set_batch(it, batch);
}

void stock_return_done(Stock *s, unsigned item, uint64_t bytes, int r) {
        uint64_t *margin;

        if (r < 0 || item >= STOCK_LINES)
                return;
        margin = line_margin(s, item);
        if (*margin == UINT64_MAX)
                return;
        /* The bytes are free again under every max on the path. */
        if (__builtin_add_overflow(*margin, bytes, margin) || *margin == UINT64_MAX)
                *margin = UINT64_MAX - 1;
}

void stock_note_margin(Stock *s, uint64_t margin) {
        s->margin = margin;
}

void stock_note_charged(Stock *s, unsigned item, uint64_t bytes) {
        if (item < STOCK_LINES)
                atomic_fetch_add_explicit(&s->direct[item], (int64_t) bytes, memory_order_seq_cst);
}

int stock_note_uncharged(Stock *s, unsigned item, uint64_t bytes) {
        if (item >= STOCK_LINES)
                return -EINVAL;
        if (stock_held(s, item) < bytes)
                return -ERANGE;
        atomic_fetch_sub_explicit(&s->direct[item], (int64_t) bytes, memory_order_seq_cst);
        return 0;
}

uint64_t stock_take(Stock *s, unsigned item) {
        _Atomic uint64_t *page = atomic_load_explicit(&s->page, memory_order_acquire);
        int32_t index;
        uint64_t v;

        if (!page || item >= STOCK_LINES)
                return 0;
        index = atomic_load_explicit(&s->items[item].index, memory_order_acquire);
        if (index < 0)
                return 0;
        v = atomic_exchange_explicit(&page[index], 0, memory_order_seq_cst);
        /* Out of the page by our hand: the caller holds what it held. */
        atomic_fetch_sub_explicit(&s->direct[item], (int64_t) v, memory_order_seq_cst);
        return v;
}

uint64_t stock_peek(const Stock *s, unsigned item) {
        _Atomic uint64_t *page = atomic_load_explicit(&((Stock *) s)->page, memory_order_acquire);
        int32_t index;

        if (!page || item >= STOCK_LINES)
                return 0;
        index = atomic_load_explicit(&s->items[item].index, memory_order_acquire);
        return index < 0 ? 0 : atomic_load_explicit(&page[index], memory_order_relaxed);
}
