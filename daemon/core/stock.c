/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The core's charge stock (stock.h)
 *
 * Each registered thread has MEM_STOCK_SLOTS slots, each a counter and
 * the bytes charged to it and not yet handed out: NR_MEMCG_STOCK cached
 * memcgs per CPU in the kernel. The owner takes from a slot with a
 * compare-and-swap and adds to it with an atomic add, both on its own
 * line; other threads only ever empty a slot (exchange with 0, under the
 * stock's lock) and uncharge what they took. A slot's counter changes
 * under the lock, by the owner alone, so the owner reads it without.
 *
 * Why the races are benign:
 * - a drain racing the owner's add may leave the add in the slot: those
 *   bytes stay charged and stocked, as they would had the add come just
 *   after the drain (the kernel's drain_all_stock() is as loose: it
 *   schedules the drains and goes on);
 * - a drain racing the owner's take either empties the slot first (the
 *   take fails and the charge goes to the counters) or after it (the
 *   bytes taken were handed out; the rest is drained);
 * - a slot keeps its counter pointer after a drain emptied it; a group's
 *   or region's removal drains its counters after a grace period in
 *   which nothing could charge them, so an emptied stale slot is never
 *   added to again; a counter later allocated at the same address is
 *   another's only to the owner that charged it, which is right;
 * - a drainer walks a slot's counter up to its ancestors only when the
 *   slot holds bytes, and in core_read_lock(): a counter with bytes
 *   stocked is live, and its memory outlives the section.
 */

#include <stdlib.h>

#include "core.h"
#include "region.h"
#include "stock.h"

MemStock *stock_new(unsigned n) {
        MemStock *v = cacheline_alloc((size_t) n * sizeof(*v));

        if (!v)
                return NULL;
        for (unsigned i = 0; i < n; i++) {
                v[i] = (MemStock) {};
                pthread_mutex_init(&v[i].lock, NULL);
        }
        return v;
}

MemStock *stock_free(MemStock *v, unsigned n) {
        for (unsigned i = 0; v && i < n; i++)
                pthread_mutex_destroy(&v[i].lock);
        free(v);
        return NULL;
}

static MemStock *my_stock(MemCore *core) {
        return &core->stocks[core_thread_slot(core)];
}

static MemStockSlot *stock_slot_find(MemStock *st, const MemCounter *c) {
        for (unsigned i = 0; i < MEM_STOCK_SLOTS; i++)
                if (atomic_load_explicit(&st->slot[i].counter, memory_order_relaxed) == c)
                        return &st->slot[i];
        return NULL;
}

bool stock_consume(MemCore *core, MemCounter *c, int64_t bytes) {
        MemStockSlot *s = stock_slot_find(my_stock(core), c);
        int64_t v;

        if (!s)
                return false;
        v = atomic_load_explicit(&s->bytes, memory_order_relaxed);
        do {
                if (v < bytes)
                        return false;
        } while (!atomic_compare_exchange_weak_explicit(&s->bytes, &v, v - bytes, memory_order_relaxed,
                                                        memory_order_relaxed));
        return true;
}

/* Keep at most two batches: the excess above one goes to the counters,
 * as refill_stock() drains a stock past MEMCG_CHARGE_BATCH. */
static void slot_trim(MemStockSlot *s, MemCounter *c) {
        int64_t v = atomic_load_explicit(&s->bytes, memory_order_relaxed);

        while (v > 2 * MEM_STOCK_BATCH)
                if (atomic_compare_exchange_weak_explicit(&s->bytes, &v, MEM_STOCK_BATCH, memory_order_relaxed,
                                                          memory_order_relaxed)) {
                        counter_uncharge(c, NULL, (uint64_t) (v - MEM_STOCK_BATCH));
                        return;
                }
}

void stock_refill(MemCore *core, MemCounter *c, int64_t bytes) {
        MemStock *st = my_stock(core);
        MemStockSlot *s = stock_slot_find(st, c);
        MemCounter *old;
        int64_t b;

        if (s) {
                atomic_fetch_add_explicit(&s->bytes, bytes, memory_order_relaxed);
                slot_trim(s, c);
                return;
        }
        /* A new counter: the next slot's goes back, as drain_stock() when
         * refill_stock() finds the stock holding another memcg. */
        pthread_mutex_lock(&st->lock);
        s = &st->slot[st->next++ % MEM_STOCK_SLOTS];
        old = atomic_load_explicit(&s->counter, memory_order_relaxed);
        b = atomic_exchange_explicit(&s->bytes, 0, memory_order_relaxed);
        if (old && b > 0)
                counter_uncharge(old, NULL, (uint64_t) b);
        atomic_store_explicit(&s->counter, c, memory_order_relaxed);
        atomic_store_explicit(&s->bytes, bytes, memory_order_relaxed);
        pthread_mutex_unlock(&st->lock);
        slot_trim(s, c);
}

static bool counter_below(const MemCounter *c, const MemCounter *under) {
        for (; c; c = c->parent)
                if (c == under)
                        return true;
        return false;
}

/* Empty the slots of every stock that @match takes, uncharging them. */
static int64_t drain_where(MemCore *core, bool (*match)(const MemCounter *c, const MemCounter *arg),
                           const MemCounter *arg) {
        int64_t released = 0;

        for (unsigned t = 0; core->stocks && t < core->config.max_threads; t++) {
                MemStock *st = &core->stocks[t];

                pthread_mutex_lock(&st->lock);
                core_read_lock();
                for (unsigned i = 0; i < MEM_STOCK_SLOTS; i++) {
                        MemStockSlot *s = &st->slot[i];
                        MemCounter *c = atomic_load_explicit(&s->counter, memory_order_relaxed);
                        int64_t b;

                        if (!c || atomic_load_explicit(&s->bytes, memory_order_relaxed) <= 0 || !match(c, arg))
                                continue;
                        b = atomic_exchange_explicit(&s->bytes, 0, memory_order_relaxed);
                        if (b > 0) {
                                counter_uncharge(c, NULL, (uint64_t) b);
                                released += b;
                        }
                }
                core_read_unlock();
                pthread_mutex_unlock(&st->lock);
        }
        return released;
}

static bool match_below(const MemCounter *c, const MemCounter *under) {
        return !under || counter_below(c, under);
}

static bool match_same(const MemCounter *c, const MemCounter *arg) {
        return c == arg;
}

int64_t stock_drain(MemCore *core, const MemCounter *under) {
        return drain_where(core, match_below, under);
}

void stock_drain_counter(MemCore *core, const MemCounter *c) {
        (void) drain_where(core, match_same, c);
}

void stock_drain_mine(MemCore *core) {
        MemStock *st = my_stock(core);

        pthread_mutex_lock(&st->lock);
        core_read_lock();
        for (unsigned i = 0; i < MEM_STOCK_SLOTS; i++) {
                MemCounter *c = atomic_load_explicit(&st->slot[i].counter, memory_order_relaxed);
                int64_t b = atomic_exchange_explicit(&st->slot[i].bytes, 0, memory_order_relaxed);

                if (c && b > 0)
                        counter_uncharge(c, NULL, (uint64_t) b);
        }
        core_read_unlock();
        pthread_mutex_unlock(&st->lock);
}

void core_stock_drain(MemCore *core, MemGroup *g) {
        if (!core->stocks)
                return;
        (void) stock_drain(core, &g->counter);
        core_read_lock();
        for (unsigned slot = 1; slot < MEM_REGION_MAX; slot++) {
                MemRegionState *s = region_state(g, slot);

                if (s)
                        (void) stock_drain(core, &s->counter);
        }
        core_read_unlock();
}
