/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * Events over D-Bus: the BusOps entries of memacct_subscribe(),
 * memacct_subscribe_region(), memacct_next_event() and the requester and
 * region of the event it returned, and the events' part of the
 * transport's state.
 */

#include "client-bus-conn.h"

/** bus_subscribe() - memacct_subscribe() on a bus handle. Takes the lock. */
int bus_subscribe(memacct *m, const char *path);

/**
 * bus_next_event() - memacct_next_event() on a bus handle. Takes the lock,
 * and sleeps without it.
 */
int bus_next_event(memacct *m, int timeout_msec, memacct_event *ret);

/** bus_event_requester() - memacct_event_requester() on a bus handle. */
int bus_event_requester(memacct *m, uint32_t *ret_pid, uint32_t *ret_uid);

/**
 * bus_subscribe_region() - memacct_subscribe_region() on a bus handle:
 * @region NULL, "" or "memory" is memacct_subscribe(), "*" every region.
 * Takes the lock.
 */
int bus_subscribe_region(memacct *m, const char *path, const char *region);

/** bus_event_region() - memacct_event_region() on a bus handle. Takes the lock. */
int bus_event_region(memacct *m, const char **ret);

/**
 * bus_events_done() - drop the matches and free the subscriptions and
 * the events kept. At memacct_close(), before the bus goes.
 */
void bus_events_done(BusConn *c);
