/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libmemacct's D-Bus backend for device memory regions, called through a
 * bus handle's table (BusOps, client/lib/client.h) as the public region
 * calls reach it once they have checked their arguments
 * (bus-client-backend.c): test-bus-client checks the backend itself,
 * every entry of the table. Each returns as its public call; @m must be
 * a bus handle (memacct_connect_bus()).
 */
#pragma once

#include <stdint.h>

#include <memacct.h>

/** backend_is_bus() - @m has the bus backend's table, with every region entry filled. */
int backend_is_bus(memacct *m);

int backend_add_region(memacct *m, const char *name, uint64_t capacity);
int backend_remove_region(memacct *m, const char *name);
int backend_list_regions(memacct *m, memacct_regions **ret);
int backend_charge_region(memacct *m, const char *path, const char *region, uint64_t bytes, unsigned flags,
                          memacct_charge_result *ret);
int backend_uncharge_region(memacct *m, const char *path, const char *region, uint64_t bytes,
                            unsigned flags);
int backend_set_region_limits(memacct *m, const char *path, const char *region,
                              const memacct_limits *limits);
int backend_reset_region_peak(memacct *m, const char *path, const char *region);
int backend_transfer(memacct *m, const char *from, const char *to, const char *region, uint64_t bytes);
int backend_evict_valuable(memacct *m, const char *limit, const char *candidate, const char *region,
                           unsigned flags);
int backend_subscribe_region(memacct *m, const char *path, const char *region);
int backend_event_region(memacct *m, const char **ret);
