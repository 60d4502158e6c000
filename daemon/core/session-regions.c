/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A session's charges in device regions (docs/regions.md): memory's
 * session path (the move protocol of fast path 3 around each charge,
 * session.c) with the sums by region slot in region_held, and the
 * client's stock in a region: one page counter per region slot
 * (MEM_STOCK_REGION()), refilled, drained and trusted no further than
 * the session holds, as memory's stat items are.
 *
 * region_held is written by the session's thread on every charge. A
 * drain on another thread takes from it, but only once the session has a
 * stock page (core_drain_stock() walks those sessions alone): until then
 * the owner updates it with a plain load and store, as memory's held[],
 * and with atomic read-modify-writes after (session-internal.h,
 * held_add()).
 */

#include <stdlib.h>

#include "region.h"
#include "session-internal.h"

/* @s's sums by region slot, allocated on its first region charge. */
static _Atomic int64_t *region_held_obtain(MemSession *s) {
        _Atomic int64_t *held = atomic_load_explicit(&s->region_held, memory_order_relaxed);

        if (held)
                return held;
        held = calloc(MEM_REGION_MAX, sizeof(*held));
        /* Release: a mover or drainer that sees the array sees it zeroed. */
        if (held)
                atomic_store_explicit(&s->region_held, held, memory_order_release);
        return held;
}

typedef struct RegionChargeArgs {
        MemSession *s;
        int key;
        uint64_t bytes;
        unsigned caller_flags;
} RegionChargeArgs;

static _always_inline_ int region_charge_once(MemSession *s, int key, uint64_t bytes, unsigned flags,
                                              MemChargeResult *ret) {
        _Atomic int64_t *held = region_held_obtain(s);
        MemGroup *g;
        bool locked;
        int r;

        if (!held) {
                *ret = (MemChargeResult) {};
                return -ENOMEM;
        }
        core_read_lock();
        g = session_begin_update(s, &locked);
        if (!g) {
                *ret = (MemChargeResult) {};
                r = -ENOTCONN;
        } else {
                r = region_charge(s->core, g, key, bytes, flags, ret);
                if (r == 0)
                        held_add(s, &held[region_slot(key)], (int64_t) bytes);
        }
        session_end_update(g, locked);
        core_read_unlock();
        return r;
}

static int region_charge_again(void *ctx, unsigned flags, MemChargeResult *ret) {
        RegionChargeArgs *a = ctx;

        return region_charge_once(a->s, a->key, a->bytes, flags | (a->caller_flags & MEM_CHARGE_NO_OOM), ret);
}

int session_charge_region(MemSession *s, int key, uint64_t bytes, unsigned flags, MemChargeResult *ret) {
        MemChargeResult own, *res = ret ? ret : &own;
        unsigned first = flags;
        int r;

        /* region_charge() fills *res on every path it reaches. */
        if (key <= MEM_REGION_MEMORY) {
                *res = (MemChargeResult) {};
                return -EINVAL;
        }
        if (flags & MEM_CHARGE_DRAIN)
                first |= MEM_CHARGE_NO_OOM;
        r = region_charge_once(s, key, bytes, first & ~MEM_CHARGE_DRAIN, res);
        if (_unlikely_(r == -EDQUOT)) {
                RegionChargeArgs args = { .s = s, .key = key, .bytes = bytes, .caller_flags = flags };

                r = charge_drain_retry(s->core, key, r, flags, res, region_charge_again, &args);
        }
        if (!ret)
                charge_result_done(&own);
        return r;
}

int session_charge_region_stock(MemSession *s, int key, uint64_t bytes, MemChargeResult *ret, unsigned *ret_index) {
        unsigned slot = region_slot(key);
        int r;

        if (!s->stock)
                return -ENXIO;
        if (s->stock_region_key[slot] != 0 && s->stock_region_key[slot] != key)
                return -EBUSY;
        r = session_charge_region(s, key, bytes, MEM_CHARGE_NO_OOM, ret);
        if (r == 0) {
                /* The total first, the page after (session_charge_stock()). */
                atomic_fetch_add(&s->stock[MEM_STOCK_REGION_REFILLED(slot)], bytes);
                atomic_fetch_add(&s->stock[MEM_STOCK_REGION(slot)], bytes);
                s->stock_region_key[slot] = key;
                *ret_index = MEM_STOCK_REGION(slot);
        }
        return r;
}

int session_uncharge_region(MemSession *s, int key, uint64_t bytes) {
        _Atomic int64_t *held = atomic_load_explicit(&s->region_held, memory_order_relaxed);
        MemGroup *g;
        bool locked;
        int r = 0;

        if (key <= MEM_REGION_MEMORY)
                return -EINVAL;
        if (bytes > MEM_CHARGE_MAX)
                return -EOVERFLOW;
        core_read_lock();
        g = session_begin_update(s, &locked);
        if (!g)
                r = -ENOTCONN;
        else if (!region_find(s->core, key))
                r = -ENOENT;
        else if (!held || !held_take(s, &held[region_slot(key)], (int64_t) bytes))
                r = -ERANGE;
        else if (bytes > 0)
                region_uncharge(s->core, g, key, bytes);
        session_end_update(g, locked);
        core_read_unlock();
        return r;
}

uint64_t session_drain_region(MemSession *s, MemGroup *g, int key) {
        _Atomic int64_t *held = atomic_load_explicit(&s->region_held, memory_order_acquire);
        unsigned slot = region_slot(key);
        uint64_t take = stock_counter_drain(s, MEM_STOCK_REGION(slot), MEM_STOCK_REGION_DRAINED(slot),
                                            held ? &held[slot] : NULL);

        if (take > 0)
                region_uncharge(s->core, g, key, take);
        return take;
}

uint64_t session_held_region(MemSession *s, int key) {
        _Atomic int64_t *held = atomic_load_explicit(&s->region_held, memory_order_acquire);

        if (key <= MEM_REGION_MEMORY || !held)
                return 0;
        return (uint64_t) MAX(load64(&held[region_slot(key)]), 0);
}
