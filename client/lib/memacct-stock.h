/* SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef MEMACCT_STOCK_H
#define MEMACCT_STOCK_H

/*
 * libmemacct's charge stock. Part of memacct.h, which includes it where
 * the types it uses are declared; include memacct.h, not this file.
 *
 * The charge stock.  memacct_charge_stocked() and
 * memacct_uncharge_stocked() are the kernel's per-cpu charge stock
 * (consume_stock()/refill_stock() in mm/memcontrol.c) moved across the IPC
 * boundary. The handle shares one page with the daemon (a sealed memfd,
 * one 64-bit counter per stat item) holding bytes already charged to the
 * session and not yet handed out. A charge the page can cover is taken from
 * it with one compare-and-swap: no system call, no message. When the page
 * runs low, a refill of one batch is requested ahead of need without
 * waiting; the daemon adds the batch to the page when its charge succeeds.
 * Only when the page cannot cover a charge does the caller wait: for the
 * refill in flight, else for a new one, and if that is refused (or the
 * group is near its max) the charge is made exactly, as the kernel retries
 * with exactly n pages when a batch fails. The batch is sized in bytes,
 * between 64 KiB and 4 MiB (or the daemon's charge-batch, if smaller,
 * from HelloReply): it grows while refills follow each other
 * quickly and is never more than 1/8 of the margin the tightest max still
 * admits (ChargeReply.margin); near the limit the stock is bypassed.
 * Uncharges go back to the page; when it holds more than two batches, the
 * surplus above one batch is returned to the daemon.
 *
 * Over-charge.  The bytes in the page are charged but unused. Per stat item
 * and handle they are at most about two batches (2 x the batch cap), so a group's
 * usage exceeds what its clients really use by at most that much per item
 * per stocked handle - the kernel's "64 pages per cpu" slack, here "two
 * batches per handle". The daemon may empty a page at any time (it
 * exchanges each counter with 0 and uncharges what it took) when a charge
 * elsewhere under the same max would otherwise be refused, as the kernel's
 * drain_all_stock() does; the library needs nothing for that but to find
 * the page empty at its next charge, which then refills or charges exactly.
 * A client is thus never refused while capacity sits in another's stock.
 */

#include "memacct.h"

#ifdef __cplusplus
extern "C" {
#endif

/**
 * memacct_charge_stocked() - charge @bytes of @item to the attached group
 * through the charge stock (see the top of this header). The first call
 * sets the stock up. Safe to call from several threads at once.
 *
 * Return: 0; -EDQUOT (the exact charge was refused); -ENOTCONN (not
 * attached); -EINVAL; a transport error.
 */
int memacct_charge_stocked(memacct *m, uint64_t bytes, int item);

/**
 * memacct_uncharge_stocked() - give back @bytes of @item charged to the
 * session (through the stock or with memacct_charge() without a path):
 * they go back to the stock, and the surplus above a bound to the daemon.
 * Safe to call from several threads at once.
 *
 * Return: 0; -ERANGE (the session holds fewer bytes of @item for the
 * caller; nothing changed); -EINVAL.
 */
int memacct_uncharge_stocked(memacct *m, uint64_t bytes, int item);

/**
 * memacct_stock_prepare() - set the charge stock up now (the page shared
 * with the daemon: one round trip), rather than in the first stocked
 * charge, which then costs at most its refill. Nothing is charged. A
 * second call does nothing.
 *
 * Return: 0; -EOPNOTSUPP (a bus handle); a transport error.
 */
int memacct_stock_prepare(memacct *m);

/**
 * memacct_stock_drain() - return all unused stock to the daemon now (the
 * kernel's drain_stock()) and wait for the reply, e.g. before going idle.
 *
 * Return: 0 or a transport error.
 */
int memacct_stock_drain(memacct *m);

/**
 * memacct_stock_get() - the bytes of @item in the stock page now and the
 * current refill batch (for tests and diagnostics; either may be NULL).
 *
 * Return: 0; -EINVAL (bad item); -ENXIO (no stock set up yet).
 */
int memacct_stock_get(memacct *m, int item, uint64_t *ret_stocked, uint64_t *ret_batch);

#ifdef __cplusplus
}
#endif

#endif /* MEMACCT_STOCK_H */
