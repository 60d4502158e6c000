/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * Bus peers: what the daemon knows of one connection to the bus (one
 * unique name): the service's Peer for it, with the uid and pid the bus
 * daemon vouched for, asked once, when it first calls a method; its
 * session is opened by the service when an operation first needs it.
 * When it leaves the bus (the bus daemon's NameOwnerChanged), its session
 * ends and everything it holds is uncharged, as when a socket client
 * disconnects. Bus thread only.
 */

#include <systemd/sd-bus.h>

#include "service/service.h"

typedef struct BusManager BusManager;

typedef struct BusParkedCall BusParkedCall;

typedef struct BusPeer {
        char *name; /* unique name, the key */
        Peer *peer; /* the service's; its creds are the bus daemon's word */
        BusManager *manager;
        /* Its calls while one waits for reclaim (park.h): the held one
         * first, then those queued behind it, in order. */
        BusParkedCall *calls;
        unsigned ncalls;
        bool parked;              /* its first call waits: it is on the manager's list */
        struct BusPeer *parked_next;
} BusPeer;

/** bus_peer_find() - the peer known by the unique name @sender (NULL: none, or not known yet). */
BusPeer *bus_peer_find(BusManager *m, const char *sender);

/**
 * bus_peer_get() - the sender of @msg, known or asked for now (one
 * GetConnectionCredentials round trip).
 * Return: 0, or a negative errno with @error set (the peer is gone, or
 * the bus daemon would not say).
 */
int bus_peer_get(BusManager *m, sd_bus_message *msg, BusPeer **ret, sd_bus_error *error);

/**
 * bus_peers_watch() - forget each peer when it leaves the bus: one match
 * for every NameOwnerChanged, for the life of @m->bus, added before the
 * name is requested. Return: 0 or a negative errno.
 */
int bus_peers_watch(BusManager *m);

/** bus_peers_free() - forget every peer of @m (at shutdown). */
void bus_peers_free(BusManager *m);
