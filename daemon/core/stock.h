/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * The core's own charge stock: the kernel's per-CPU memcg_stock
 * (consume_stock(), refill_stock(), drain_stock(), drain_all_stock() in
 * mm/memcontrol.c), per registered thread (docs/kernel.md, "The core's
 * charge stock"). Off unless MemCoreConfig.charge_stock asks for it.
 *
 * A charge a thread's stock covers takes from it and touches no shared
 * line; one it does not charges a batch (MEM_STOCK_BATCH) to the counters
 * and keeps the surplus; an uncharge gives back to the stock, above two
 * batches down to one. The bytes in stocks are charged to their counters,
 * as the kernel's stocked pages are in memory.current: a read sees them.
 * A refusal drains every thread's stock under the refusing counter and is
 * retried; a limit change, a group's or a region's removal, and a
 * thread's end drain what concerns them.
 */

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "core.h"
#include "counter.h"
#include "macro.h"

#define MEM_STOCK_SLOTS 4
/* MEMCG_CHARGE_BATCH: 64 pages. */
#define MEM_STOCK_BATCH ((int64_t) 64 * 4096)

typedef struct MemStockSlot {
        /* Changed by the owner thread under the lock only; a drainer never
         * changes it (only the bytes), so the owner reads it without. */
        MemCounter *_Atomic counter;
        _Atomic int64_t bytes;
} MemStockSlot;

typedef struct MemStock {
        pthread_mutex_t lock; /* the owner's slot changes; every drain */
        MemStockSlot slot[MEM_STOCK_SLOTS];
        unsigned next;        /* the owner's next victim */
} _cacheline_aligned_ MemStock;

/** stock_init() - @n stocks, all empty. Return: the array, NULL on -ENOMEM. */
MemStock *stock_new(unsigned n);
MemStock *stock_free(MemStock *v, unsigned n);

/**
 * stock_consume() - take @bytes of @c from the calling thread's stock.
 * In core_read_lock(). Return: whether it covered them.
 */
bool stock_consume(MemCore *core, MemCounter *c, int64_t bytes);

/**
 * stock_refill() - keep @bytes, charged to @c already, in the calling
 * thread's stock (a batch's surplus, or an uncharge); above two batches
 * the excess over one goes back to the counters. In core_read_lock().
 */
void stock_refill(MemCore *core, MemCounter *c, int64_t bytes);

/**
 * stock_drain() - empty every thread's stock of the counters at or below
 * @under (NULL: all), uncharging what they held. Any thread.
 * Return: the bytes released.
 */
int64_t stock_drain(MemCore *core, const MemCounter *under);

/** stock_drain_counter() - stock_drain() of @c's own slots only (its removal). */
void stock_drain_counter(MemCore *core, const MemCounter *c);

/* stock_charge()'s "not served": go to the counters as without a stock. */
#define MEM_STOCK_MISS 2

/**
 * stock_charge() - try_charge_memcg()'s stock part: @bytes from the
 * calling thread's stock, else a batch charged to @c and its surplus
 * stocked. Without a stock, or when even the batch is refused, nothing
 * is charged: the caller charges the exact bytes, and a refusal of those
 * is its to report. In core_read_lock().
 * Return: 0 or 1 (charged; 1: some counter above high, as
 * counter_try_charge()); MEM_STOCK_MISS.
 */
static inline int stock_charge(MemCore *core, MemCounter *c, uint64_t bytes) {
        int r;

        if (_likely_(!core->stocks))
                return MEM_STOCK_MISS;
        if (stock_consume(core, c, (int64_t) bytes))
                return 0;
        /* Larger than a batch: charged exactly, as the kernel charges
         * max(MEMCG_CHARGE_BATCH, nr_pages). */
        if (bytes >= (uint64_t) MEM_STOCK_BATCH)
                return MEM_STOCK_MISS;
        r = counter_try_charge_batch(c, (uint64_t) MEM_STOCK_BATCH);
        if (r < 0)
                return MEM_STOCK_MISS;
        stock_refill(core, c, MEM_STOCK_BATCH - (int64_t) bytes);
        return r;
}

/** stock_uncharge() - an uncharge: into the stock when there is one, else counter_uncharge(). */
static inline void stock_uncharge(MemCore *core, MemCounter *c, uint64_t bytes) {
        if (_likely_(!core->stocks) || bytes > (uint64_t) MEM_STOCK_BATCH)
                counter_uncharge(c, NULL, bytes);
        else
                stock_refill(core, c, (int64_t) bytes);
}

typedef struct MemGroup MemGroup;

/**
 * core_stock_drain() - give back what the threads' charge stocks hold of
 * @g's subtree, in memory and in every region (stock.h), so that a read
 * right after sees no stocked bytes there. Any registered thread.
 */
void core_stock_drain(MemCore *core, MemGroup *g);

/** stock_drain_mine() - empty the calling thread's stock (its unregistration). */
void stock_drain_mine(MemCore *core);
