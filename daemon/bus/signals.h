/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * What the bus says of every change: the service's events, queued from
 * whatever thread made them and emitted as signals on the bus thread.
 *
 * - a memory event: the manager's Event(path, name, count) signal, then
 *   EventBy; one of a device region: RegionEvent(path, region, name,
 *   count), then RegionEventBy, and never Event;
 * - a group added or removed: the ObjectManager's InterfacesAdded /
 *   InterfacesRemoved for its object;
 * - limits set: PropertiesChanged of MemoryMax, MemoryHigh, MemoryLow,
 *   MemoryMin on its object, or of DeviceMemoryMax and the like for a
 *   device region's (the values are read when it is emitted).
 *
 * The queue is bounded (BUS_EVENTS_MAX), and so is sd-bus's queue of
 * messages not yet written to the bus daemon: when the bus cannot keep
 * up the rest are dropped and counted, and the threads that made the
 * changes never wait for it.
 */

#include <stdbool.h>
#include <stdint.h>
#include <systemd/sd-bus.h>

#include "service/events.h"

/* Events queued for the bus beyond this are dropped (and counted): the
 * groups' properties stay exact, only the signals are lost. */
#define BUS_EVENTS_MAX 4096

typedef struct BusSignals BusSignals;

/** bus_signals_new() - an empty queue and its eventfd. Return: 0, -ENOMEM, -errno of eventfd(). */
int bus_signals_new(BusSignals **ret);
BusSignals *bus_signals_free(BusSignals *s);

/** bus_signals_fd() - readable when something is queued: the bus thread polls it. */
int bus_signals_fd(BusSignals *s);

/**
 * bus_signals_sink() - an EventsSinkFn (@userdata is the BusSignals):
 * copy @ev into the queue and wake the bus thread. Any thread; a mutex
 * and a malloc at most.
 */
void bus_signals_sink(const EventItem *ev, void *userdata);

/**
 * bus_signals_send_to() - queue @ev (EVENT_RECLAIM) as a signal to the
 * peer with the unique name @destination alone, sent whatever the read
 * access; any thread, never blocks, as bus_signals_sink().
 */
void bus_signals_send_to(BusSignals *s, const char *destination, const EventItem *ev);

/**
 * bus_signals_flush() - emit everything queued, in order, on @bus (or,
 * when not @broadcast, drop all but the requests to one peer: the
 * signals carry group data that not everyone may read; @bus NULL: drop
 * everything). On the bus thread: when its eventfd is readable,
 * and before the reply of a call that made a change, so that its signals
 * go out first. Return: the events dropped since the last flush.
 */
uint64_t bus_signals_flush(BusSignals *s, sd_bus *bus, bool broadcast);
