/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * The charge stock over the socket: the transport the stock's policy
 * (client-stock.c) is given, and the stock page's setup and drain.
 */

#include "client-stock.h"
#include "client.h"

/* The stock's transport on a socket handle; the userdata is the handle. */
extern const StockOps client_stock_ops;

/**
 * client_stock_setup_locked() - a new stock page for the current
 * connection: a sealed STOCK_PAGE_SIZE memfd, mapped shared, sent with
 * StockSetup. The page it replaces stays mapped until memacct_close(),
 * since another thread's fast path may still read it. Lock held.
 * Return: 0 or a recorded error.
 */
int client_stock_setup_locked(memacct *m);

/**
 * client_stock_drain_locked() - the kernel's drain_stock(): wait for the
 * refills in flight, then give the whole page back. Lock held.
 * Return: 0 or a recorded error.
 */
int client_stock_drain_locked(memacct *m);

/**
 * client_stock_charge_line_locked() - an exact session charge of @bytes
 * for stock line @line (a stat item, or a region line's region), with
 * MEMACCT_FORCE from @flags; the reply's margin in *@ret_margin (may be
 * NULL). Not noted in the stock: the caller does that. Lock held.
 * Return: 0 or a recorded error.
 */
int client_stock_charge_line_locked(memacct *m, unsigned line, uint64_t bytes, unsigned flags,
                                    uint64_t *ret_margin);

/**
 * client_stock_region_locked() - the stock line of device region @region,
 * given one on its first use for the life of the handle. Lock held.
 * Return: the line (>= STOCK_ITEMS); -ENOSPC (STOCK_REGIONS in use);
 * -ENOMEM.
 */
int client_stock_region_locked(memacct *m, const char *region);
