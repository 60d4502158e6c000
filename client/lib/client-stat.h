/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * The names of the stat items, as the wire, the bus and memacctctl spell
 * them, in the order of enum memacct_stat and of the stock page.
 */

/** client_stat_name() - the wire name of @item, or NULL past the last. Any thread. */
const char *client_stat_name(unsigned item);
