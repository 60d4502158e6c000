/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * Events over D-Bus: the BusOps entries of memacct_subscribe() and
 * memacct_next_event(), and the events' part of the transport's state.
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
 * bus_events_done() - drop the Event match and free the subscriptions and
 * the events kept. At memacct_close(), before the bus goes.
 */
void bus_events_done(BusConn *c);
