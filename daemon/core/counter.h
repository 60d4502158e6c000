/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * Hierarchical memory counter with the kernel's page_counter semantics
 * (mm/page_counter.c), counting bytes instead of pages.
 */

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "macro.h"
#include "model.h"

/*
 * "No limit". Limits above it are clamped to it, as the kernel clamps to
 * PAGE_COUNTER_MAX, and it reads back as UINT64_MAX on every interface.
 * It leaves 2^62 of headroom below INT64_MAX, so usage can never wrap even
 * with every thread's speculative charge of MEM_CHARGE_MAX in flight.
 */
#define MEM_COUNTER_MAX ((int64_t) 1 << 62)
/* Largest single charge or uncharge (256 TiB); larger is -EOVERFLOW. */
#define MEM_CHARGE_MAX ((uint64_t) 1 << 48)

typedef struct MemCounter MemCounter;

/*
 * Field order follows include/linux/page_counter.h: 'usage' is written by
 * every charge and sits alone in its line; the protection bookkeeping that
 * children write sits in a second line; the read-mostly settings and
 * 'parent' sit in a third, so chargers never invalidate the line that
 * every other charger reads.
 */
struct MemCounter {
        _Atomic int64_t usage;
        _Atomic uint64_t failcnt;

        _Atomic int64_t min_usage _cacheline_aligned_;
        _Atomic int64_t children_min_usage;
        _Atomic int64_t low_usage;
        _Atomic int64_t children_low_usage;
        _Atomic int64_t watermark;

        _Atomic int64_t min _cacheline_aligned_;
        _Atomic int64_t low;
        _Atomic int64_t high;
        _Atomic int64_t max;
        MemCounter *parent;
};

/**
 * counter_init() - initialise a counter: usage 0, no limits.
 * @c: the counter
 * @parent: its parent, NULL for the root
 */
void counter_init(MemCounter *c, MemCounter *parent);

static inline int64_t counter_read(const MemCounter *c) {
        return atomic_load_explicit(&c->usage, memory_order_relaxed);
}

static inline int64_t counter_read_limit(const _Atomic int64_t *limit) {
        return atomic_load_explicit(limit, memory_order_relaxed);
}

/**
 * counter_charge() - charge @bytes to @c and its ancestors, ignoring max.
 *
 * The kernel's page_counter_charge(): used by forced charges.
 *
 * Return: 0, or 1 if some counter on the path is now above its max,
 * -EOVERFLOW if @bytes is above MEM_CHARGE_MAX or usage would pass
 * MEM_COUNTER_MAX (nothing is charged then).
 */
int counter_charge(MemCounter *c, uint64_t bytes);

/**
 * counter_try_charge() - charge @bytes to @c and its ancestors up to, and
 * excluding, @stop (NULL: to the root), honouring every max on the way.
 * @ret_fail: set to the counter that refused, on -EDQUOT
 *
 * Speculative add, compare, undo this level, then cancel the levels below
 * it: page_counter_try_charge().
 *
 * Return: 0; 1 when the charge left some counter on the path above its
 * high (the caller walks the path for its high events only then);
 * -EDQUOT (nothing charged; *@ret_fail set, its failcnt raised) or
 * -EOVERFLOW.
 */
int counter_try_charge(MemCounter *c, MemCounter *stop, uint64_t bytes, MemCounter **ret_fail);

/**
 * counter_try_charge_batch() - counter_try_charge() of a stock's batch to
 * the root: a refusal is not counted in failcnt, since the exact charge
 * that follows it is (the core's stock, stock.h; where the kernel counts
 * both). Return: as counter_try_charge().
 */
int counter_try_charge_batch(MemCounter *c, uint64_t bytes);

/**
 * counter_uncharge() - uncharge @bytes from @c up to, excluding, @stop.
 *
 * The caller guarantees @bytes is held (the core tracks every charge, so an
 * uncharge beyond what is held is refused before it gets here). Should the
 * caller be wrong, usage is clamped at 0 as page_counter_cancel() does.
 */
void counter_uncharge(MemCounter *c, MemCounter *stop, uint64_t bytes);

/**
 * counter_set_max() - set max, refusing if usage is above it
 * (page_counter_set_max()). Callers serialise setters of one counter.
 *
 * Return: 0 or -EBUSY (usage above @limit; max unchanged).
 */
int counter_set_max(MemCounter *c, int64_t limit);

/**
 * counter_set_max_force() - set max whatever the usage, as a cgroup v2
 * memory.max write does.
 *
 * Return: 0, or 1 when usage is above the new max.
 */
int counter_set_max_force(MemCounter *c, int64_t limit);

void counter_set_high(MemCounter *c, int64_t high);
void counter_set_min(MemCounter *c, int64_t min);
void counter_set_low(MemCounter *c, int64_t low);

/** counter_reset_watermark() - restart the peak from the current usage. */
void counter_reset_watermark(MemCounter *c);

/**
 * counter_clamp_limit() - map a limit from an interface (bytes, UINT64_MAX
 * for none) to the counter's range, as page_counter_memparse() clamps.
 */
static inline int64_t counter_clamp_limit(uint64_t bytes) {
        return bytes >= (uint64_t) MEM_COUNTER_MAX ? MEM_COUNTER_MAX : (int64_t) bytes;
}

/** counter_limit_to_u64() - the reverse: MEM_COUNTER_MAX reads as UINT64_MAX. */
static inline uint64_t counter_limit_to_u64(int64_t limit) {
        return limit >= MEM_COUNTER_MAX ? UINT64_MAX : (uint64_t) limit;
}

/**
 * counter_apply_limits() - set what @l names on @c, max first; a max
 * refused (usage above it, without @force) leaves everything as it was.
 * Callers serialise setters of one counter.
 * Return: 0; 1 when a forced max is below usage; -EBUSY.
 */
int counter_apply_limits(MemCounter *c, const MemLimits *l, bool force);

/**
 * counter_margin() - what the tightest max from @c up to the root still
 * admits; UINT64_MAX with no max on the way. Any thread.
 */
uint64_t counter_margin(const MemCounter *c);
