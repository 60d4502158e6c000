/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * Calls that wait for a round of reclaim, on the bus (the socket holds
 * its frame, sock/conn.c). A charge refused at a max, a SetLimits that
 * lowers a max below usage, and a Reclaim wait while the holders below
 * are asked to give back (service-reclaim.c): the service answers
 * -EINPROGRESS, and the call is held here, unanswered, while the bus
 * thread serves everyone else. When the round ends (every holder
 * answered: the service wakes us from whatever thread took the last
 * answer; or its deadline passed: our timer) the same call is served
 * again from its first argument, and answers or waits once more.
 *
 * A peer's calls are served in order while one of its calls waits: the
 * service keeps one round per peer, as the socket serves a connection's
 * frames one after the other. Calls of the peer that come meanwhile wait
 * behind it, at most BUS_PARK_QUEUE_MAX (a refusal after that: the bus
 * daemon bounds a peer's pending calls too, 128 on a system bus). A peer
 * that leaves the bus takes its calls with it, unanswered.
 *
 * Bus thread only, but bus_park_wake(), which any thread may call.
 */

#include <stdbool.h>
#include <systemd/sd-bus.h>

#include "bus/call.h"

#define BUS_PARK_QUEUE_MAX 128u

/** bus_park_wake() - a round a held call waits for ended (PeerReclaim.wake); any thread, never blocks. */
void bus_park_wake(void *userdata);

/**
 * bus_call_park() - hold @c, whose service call answered -EINPROGRESS,
 * until its round ends. Return: 1 (sd-bus: handled, the reply comes later).
 */
int bus_call_park(BusCall *c);

/**
 * bus_park_behind() - when the sender of @msg has a call held, queue
 * @msg (served by @fn, counted as @op) behind it. Return: 1 queued; 0 the
 * sender has none held (serve it now); a negative errno with @error set.
 */
int bus_park_behind(BusManager *m, sd_bus_message *msg, BusMethodFn fn, ServiceOp op, sd_bus_error *error);

/** bus_park_serve() - serve again each held call whose round ended; arm the timer for the next deadline. */
void bus_park_serve(BusManager *m);

/** bus_park_drop() - @p leaves: its held and queued calls go unanswered. */
void bus_park_drop(BusManager *m, BusPeer *p);

/** bus_park_done() - the connection closes: every held call is dropped, the timer with them. */
void bus_park_done(BusManager *m);
