/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * The handle (struct memacct), shared by the modules of libmemacct: the
 * socket's connection and session, the charge stock, the events, and on a
 * bus handle the D-Bus transport. Nothing here is exported.
 */

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "client-bus.h"
#include "client-conn.h"
#include "client-event-queue.h"
#include "client-stock.h"
#include "memacct.h"

#define CLIENT_DEFAULT_TIMEOUT_MSEC 30000u
#define CLIENT_DEFAULT_RECONNECT 10u

struct memacct {
        /* Everything below but the stock's fast-path fields is under lock. */
        pthread_mutex_t lock;

        char *socket_path;
        Conn conn; /* conn.fd -1: broken, reconnect before use */
        /* A D-Bus handle (memacct_connect_bus()): never NULL there, NULL on
         * a socket handle. Set once, before the handle is returned, and
         * only read after: tested at the entry of slow-path calls, never
         * on the stock's fast path (a bus handle has no page, so its
         * stocked calls fall to the slow path and stop there). */
        const BusOps *bus;
        BusConn *bus_conn;

        /* From Hello. */
        char *server;
        pid_t pid;

        /* The session, as a reconnection rebuilds it. */
        char *attached;
        char **subscriptions;
        size_t n_subscriptions;

        /* The charge stock. */
        Stock stock;
        bool stock_wanted; /* set up once: again after each reconnection */
        _Atomic uint64_t *page;
        void **old_pages; /* replaced pages, unmapped by memacct_close() */
        size_t n_old_pages;

        EventQueue events; /* from the unsolicited Event frames */

        unsigned timeout_msec;
        unsigned reconnect_attempts;
        unsigned reconnects;
        memacct_reconnect_fn reconnect_fn;
        void *reconnect_userdata;
        bool reconnecting;
};

/**
 * client_new() - a handle with no connection yet, defaults set, for
 * memacct_connect() and memacct_connect_bus(), which fill it in before
 * anyone else sees it.
 * Return: it, or NULL (out of memory).
 */
memacct *client_new(void);
