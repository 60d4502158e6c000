/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * Events pushed to a socket connection from other threads (conn-push.c):
 * the socket's EventDelivery, and the queue and wake-up each connection
 * keeps for it.
 */

#include <stdint.h>

#include "service/service.h"
#include "sock/conn.h"

/* The socket's encoding of events and its push; the userdata is the SockConn. */
extern const EventDelivery conn_push_delivery;

/**
 * conn_push_init() - @c's push lock, its bound (@c->host->limits.max_output)
 * and the event that wakes its worker when a frame was pushed. Before @c is
 * given to the service as a subscriber; conn_free() undoes it.
 * Return: 0, -ENOMEM (the lock is initialised even then).
 */
int conn_push_init(SockConn *c);

/**
 * conn_push_wake() - wake @userdata's (a SockConn's) worker to serve what
 * waits: the round of reclaim its request waits for ended
 * (PeerReclaim.wake). Any thread, while the connection's peer lives.
 */
void conn_push_wake(void *userdata);

/**
 * conn_push_set_max() - pushed frames may queue up to @max bytes on @c
 * from now on. On @c's host thread; pushes may run meanwhile.
 */
void conn_push_set_max(SockConn *c, uint64_t max);
