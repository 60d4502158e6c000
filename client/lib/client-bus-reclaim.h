/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * Reclaim over D-Bus (client-bus-reclaim.c): the BusOps entries of
 * memacct_set_reclaimable(), memacct_set_reclaimable_stat(),
 * memacct_fd(), memacct_process() and memacct_reclaim(), the answer to a
 * request, and reclaim's part of the transport's state.
 */

#include <stdbool.h>
#include <stdint.h>

#include "client-bus-conn.h"

/**
 * bus_set_reclaimable() - memacct_set_reclaimable() (@item < 0) or
 * memacct_set_reclaimable_stat() (memory's @item) on a bus handle:
 * SetReclaimable, the ReclaimRequest signal matched first. Takes the lock.
 */
int bus_set_reclaimable(memacct *m, const char *region, int item, memacct_reclaim_fn fn, void *userdata);

/** bus_reclaim_done() - ReclaimDone(@id, @cannot). Takes the lock. */
int bus_reclaim_done(memacct *m, uint64_t id, bool cannot);

/**
 * bus_fd() - memacct_fd() on a bus handle: a descriptor readable while
 * the bus fd is, or something waits in a queue. Takes the lock.
 */
int bus_fd(memacct *m);

/**
 * bus_process() - memacct_process() on a bus handle. Takes the lock, and
 * sleeps and serves without it.
 */
int bus_process(memacct *m, int timeout_msec);

/** bus_reclaim() - memacct_reclaim() on a bus handle: Reclaim. Takes the lock. */
int bus_reclaim(memacct *m, const char *path, const char *region, uint64_t bytes, uint64_t *ret_released);

/**
 * bus_reclaim_close() - drop the match, close memacct_fd()'s descriptors.
 * At memacct_close(), before the bus goes.
 */
void bus_reclaim_close(BusConn *c);
