/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * Device memory regions over D-Bus: the BusOps entries of the public
 * region calls of the same names (client-regions.c dispatches to them).
 * Each takes the lock; each returns as its public call. The
 * subscriptions and events of a region are the events module's
 * (client-bus-events.h).
 */

#include <stdint.h>

#include "memacct.h"

/** bus_add_region() - memacct_add_region() on a bus handle. */
int bus_add_region(memacct *m, const char *name, uint64_t capacity);

/** bus_remove_region() - memacct_remove_region() on a bus handle. */
int bus_remove_region(memacct *m, const char *name);

/** bus_list_regions() - memacct_list_regions() on a bus handle. */
int bus_list_regions(memacct *m, memacct_regions **ret);

/** bus_charge_region() - memacct_charge_region() on a bus handle: no MEMACCT_FORCE, no margin. */
int bus_charge_region(memacct *m, const char *path, const char *region, uint64_t bytes, unsigned flags,
                      memacct_charge_result *ret);

/** bus_uncharge_region() - memacct_uncharge_region() on a bus handle. */
int bus_uncharge_region(memacct *m, const char *path, const char *region, uint64_t bytes, unsigned flags);

/** bus_set_region_limits() - memacct_set_region_limits() on a bus handle. */
int bus_set_region_limits(memacct *m, const char *path, const char *region, const memacct_limits *limits);

/** bus_reset_region_peak() - memacct_reset_region_peak() on a bus handle. */
int bus_reset_region_peak(memacct *m, const char *path, const char *region);

/** bus_transfer() - memacct_transfer() on a bus handle. */
int bus_transfer(memacct *m, const char *from, const char *to, const char *region, uint64_t bytes);

/** bus_evict_valuable() - memacct_evict_valuable() on a bus handle. */
int bus_evict_valuable(memacct *m, const char *limit, const char *candidate, const char *region,
                       unsigned flags);
