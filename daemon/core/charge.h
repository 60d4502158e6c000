/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * Charging a group: the limit check, the events it raises, the throttle
 * hint it returns and the statistics it updates.
 */

#include <stdbool.h>
#include <stdint.h>

#include "group.h"

typedef enum MemChargeFlags {
        MEM_CHARGE_FORCE = 1 << 0,  /* ignore max (page_counter_charge()) */
        MEM_CHARGE_NO_OOM = 1 << 1, /* a refusal the caller retries: raise max, not oom */
        MEM_CHARGE_DELEGATOR = 1 << 2, /* a kept charge the delegator made (group_uncharge_kept_as()) */
} MemChargeFlags;

/* Beyond this the kernel's high penalty is not applied (HZ/100). */
#define MEM_HIGH_DELAY_MIN_USEC 10000
/* MEMCG_MAX_HIGH_DELAY_JIFFIES: 2 s. */
#define MEM_HIGH_DELAY_MAX_USEC 2000000

typedef struct MemChargeResult {
        MemGroup *refused;      /* on -EDQUOT: the group whose max refused (a reference) */
        uint64_t over_high;     /* bytes the worst ancestor is above its high, or 0 */
        uint64_t throttle_usec; /* suggested back-off, 0 when none */
        bool over_max;          /* a forced charge left a group above its max */
        /* A device region's charge that succeeded: what the tightest max
         * on its path still admits (UINT64_MAX: none), read in the
         * charge's own read-side section; memory's is group_margin(). */
        uint64_t margin;
} MemChargeResult;

/** charge_result_done() - drop the reference a result may hold. */
void charge_result_done(MemChargeResult *r);

/**
 * charge_high_delay_usec() - the kernel's calculate_high_delay() for one
 * charge: quadratic in how far usage is over high, scaled by the charge
 * size in units of MEMCG_CHARGE_BATCH pages (at least one), in µs; 0 at
 * or below MEM_HIGH_DELAY_MIN_USEC, capped at MEM_HIGH_DELAY_MAX_USEC.
 */
uint64_t charge_high_delay_usec(int64_t usage, int64_t high, uint64_t bytes);

/**
 * group_charge() - charge @bytes to @g and its ancestors and account them
 * to @item. Raises max (and, without MEM_CHARGE_NO_OOM, oom) on the
 * refusing group, high on every group the charge leaves above high.
 * @ret: optional, filled in every case
 *
 * Return: 0; -EDQUOT (ret->refused set); -EOVERFLOW; -EINVAL (bad item).
 */
int group_charge(MemCore *core, MemGroup *g, uint64_t bytes, MemStatItem item, unsigned flags,
                 MemChargeResult *ret);

/** group_uncharge() - the reverse of group_charge(); the caller knows @bytes are held. */
void group_uncharge(MemCore *core, MemGroup *g, uint64_t bytes, MemStatItem item);

/**
 * group_charge_kept() - a charge that belongs to @g, not to a session: it
 * outlives the caller and is released by group_uncharge_kept().
 *
 * Return: as group_charge(), and -ENOENT if @g is being removed.
 */
int group_charge_kept(MemCore *core, MemGroup *g, uint64_t bytes, MemStatItem item,
                      unsigned flags, MemChargeResult *ret);

/**
 * group_uncharge_kept() - release kept bytes of @item.
 * Return: 0, -ERANGE if fewer are kept (nothing released), -EINVAL,
 * -EOVERFLOW above MEM_CHARGE_MAX, -ENOENT if @g has been removed (its
 * kept charges went with it).
 */
int group_uncharge_kept(MemCore *core, MemGroup *g, uint64_t bytes, MemStatItem item);

/**
 * group_uncharge_kept_as() - release kept bytes of @item for one side of
 * a delegation. Of what @g keeps, the bytes charged with
 * MEM_CHARGE_DELEGATOR are the delegator's: with @delegate, only the
 * others may be released; without (the delegator, as
 * group_uncharge_kept()), any, the delegator's first.
 * Return: as group_uncharge_kept(); -ERANGE also when, with @delegate,
 * fewer than @bytes are not the delegator's (nothing released).
 */
int group_uncharge_kept_as(MemCore *core, MemGroup *g, uint64_t bytes, MemStatItem item, bool delegate);

/**
 * group_kept_delegator() - of @g's kept bytes of @item, the delegator's
 * (MEM_CHARGE_DELEGATOR), at most what it keeps. A relaxed read; exact
 * when nothing charges @g at the same time. 0 for a bad @item.
 */
uint64_t group_kept_delegator(MemGroup *g, MemStatItem item);
