/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * The D-Bus transport's objects (org.memacct1(5)): the manager object
 * /org/memacct1 (interface org.memacct1.Manager, plus the ObjectManager)
 * and, through groups.c, one object per group. proto/org.memacct1.xml is
 * the reference; the vtables match it (tests/dbus checks). The manager's
 * vtable is the one table of its methods; their handlers are in
 * hierarchy.c, sessions.c, mirrors.c, regions.c and info.c (call.h).
 *
 * Everything here runs on the bus thread (thread.c), which owns the
 * sd_bus and is registered with the service: sd-bus is not thread-safe.
 */

#include <stdio.h>
#include <systemd/sd-bus.h>

#include "bus/groups.h"
#include "bus/held.h"
#include "bus/peer.h"
#include "bus/signals.h"
#include "service/service.h"

/* Groups above which GetManagedObjects is refused, shared among the
 * regions registered, memory included (manager.c says why). */
#define BUS_MANAGED_OBJECTS_MAX 4096u

typedef struct BusManager {
        sd_bus *bus;
        Service *service;    /* NULL: only introspection is served */
        BusSignals *signals; /* NULL: none (introspection) */
        void *peers;         /* tsearch() tree of BusPeer, by unique name */
        BusGroupView view;   /* the group the last find callback read (groups.c) */
        BusHeldReply *held;  /* replies waiting for a save, in no order */
        /* Peers with a call waiting for reclaim (park.h), the timer of the
         * nearest deadline, and the wake-up of a round that ended early
         * (the bus thread's eventfd). */
        BusPeer *parked;
        sd_event_source *park_timer;
        int park_fd;
} BusManager;

/**
 * bus_manager_register() - add the manager's and the groups' vtables, the
 * node enumerator and the ObjectManager to @m->bus. The slots live as long
 * as the connection. Return: 0 or a negative errno.
 */
int bus_manager_register(BusManager *m);

/**
 * bus_manager_release() - a save ended: send every held reply whose change
 * is saved, or the refusal that replaces it when the save failed
 * (bus_held_release()).
 */
void bus_manager_release(BusManager *m);

/** bus_manager_done() - drop held replies and forget every peer: their sessions end, their charges are released. */
void bus_manager_done(BusManager *m);

/** bus_manager_may_broadcast() - may signals carry group data? Only while reads are open to all. */
bool bus_manager_may_broadcast(BusManager *m);

/** bus_manager_flush() - emit the signals queued so far (bus_signals_flush()); logs drops. */
uint64_t bus_manager_flush(BusManager *m);
