/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * Bus peers: what the daemon knows of one connection to the bus (one
 * unique name). Its uid and pid, asked of the bus daemon once, when it
 * first calls a Manager method; and its session, made when it first
 * charges without keep or attaches. The peer is tracked (sd_bus_track):
 * when it leaves the bus, its session ends and everything it holds is
 * uncharged, as when a socket client disconnects. Bus thread only.
 */

#include <sys/types.h>
#include <systemd/sd-bus.h>

#include "manager.h"
#include "request.h"
#include "session.h"

typedef struct BusPeer {
        char *name; /* unique name, the key */
        uid_t uid;  /* as the bus daemon vouched: GetConnectionCredentials */
        pid_t pid;
        sd_bus_track *track;
        DispatchConn *conn; /* its session; NULL until first needed */
        BusManager *manager;
} BusPeer;

/**
 * bus_peer_get() - the sender of @msg, known or asked for now (one
 * GetConnectionCredentials round trip, and a NameOwnerChanged match).
 * Return: 0, or a negative errno with @error set (the peer is gone, or
 * the bus daemon would not say).
 */
int bus_peer_get(BusManager *m, sd_bus_message *msg, BusPeer **ret, sd_bus_error *error);

/**
 * bus_peer_session() - @p's session, made on first use.
 * Return: 0, or -EUSERS (the uid's sessions are used up) / -ENOMEM with
 * @error set.
 */
int bus_peer_session(BusPeer *p, MemSession **ret, sd_bus_error *error);

/** bus_peer_has_session() - @p's session if it has one, else NULL. */
MemSession *bus_peer_has_session(BusPeer *p);

/** bus_peers_free() - forget every peer of @m (at shutdown). */
void bus_peers_free(BusManager *m);
