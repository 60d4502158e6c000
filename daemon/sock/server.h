/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * The protobuf socket server: an acceptor on the main thread's event base
 * and N worker threads, each with its own event base, serving the
 * connections handed to them round-robin. Each worker is a thread of its
 * own with an event base; a connection stays on its worker for life.
 */

#include "service/service.h"
#include "sock/conn.h"

struct event_base;

typedef struct SockServer SockServer;

/**
 * sock_server_new() - set up @nworkers workers (not started).
 * Return: 0, -EINVAL (no workers), -ENOMEM, or the errno of eventfd().
 */
int sock_server_new(Service *svc, const SockLimits *limits, unsigned nworkers, SockServer **ret);

/**
 * sock_server_start() - start the worker threads; each registers with the
 * service (service_thread_register()) before it serves anything. Signals are blocked in them.
 * Return: 0 or a negative errno (logged; workers already started are stopped).
 */
int sock_server_start(SockServer *s);

/**
 * sock_server_listen() - accept on the listening socket @fd from @base
 * (the main thread's), handing each connection to the next worker. @fd
 * is made non-blocking, and is closed by sock_server_stop() or
 * sock_server_free(); on failure it stays the caller's. One more
 * descriptor is kept in reserve, to accept root's connections with when
 * the process runs out of them.
 * Return: 0, -ENOMEM, or the errno of opening /dev/null.
 */
int sock_server_listen(SockServer *s, struct event_base *base, int fd);

/**
 * sock_server_set_limits() - SIGHUP: new bounds for every connection,
 * applied by each worker on its own thread. Main thread.
 */
void sock_server_set_limits(SockServer *s, const SockLimits *limits);

/**
 * sock_server_stop_accepting() - close the listening socket: no new
 * connections. Main thread; idempotent.
 */
void sock_server_stop_accepting(SockServer *s);

/**
 * sock_server_stop() - stop accepting; every connection answers the
 * frames it already read, writes its output and closes (those still
 * writing after @grace_msec are closed anyway); then the workers exit and
 * are joined. Every session is gone when this returns. Main thread.
 */
void sock_server_stop(SockServer *s, unsigned grace_msec);

/** sock_server_free() - stop (with no grace) if needed and free. */
SockServer *sock_server_free(SockServer *s);
