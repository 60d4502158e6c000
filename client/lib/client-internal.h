/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * libmemacct internals: the handle and the helpers the public calls share
 * (client.c). The connection (client-conn.h) stands below them and knows
 * nothing of them. Nothing here is exported.
 */

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "client-conn.h"
#include "client-deadline.h"
#include "client-event-queue.h"
#include "client-stock.h"
#include "macro.h"
#include "memacct.h"

#define MEMACCT_PROTOCOL_VERSION 1
#define CLIENT_DEFAULT_TIMEOUT_MSEC 30000u
#define CLIENT_DEFAULT_RECONNECT 10u

/* The D-Bus transport (client-bus.c), reached only through this table so
 * that the socket code has no link-time dependency on sd-bus: a handle
 * with a NULL bus is a socket handle. Each entry is called after the
 * public function checked its arguments, without the lock; it takes the
 * lock around its sd-bus use. Return: as the public function. */
typedef struct BusOps {
        int (*create_group)(memacct *m, const char *path, const memacct_limits *limits,
                            uint32_t owner);
        int (*remove_group)(memacct *m, const char *path);
        int (*set_limits)(memacct *m, const char *path, const memacct_limits *limits,
                          unsigned flags);
        int (*get_group)(memacct *m, const char *path, const char *reclaim_root, unsigned flags,
                         memacct_group_info **ret);
        int (*list_groups)(memacct *m, const char *path, unsigned flags,
                           memacct_group_list **ret);
        int (*charge)(memacct *m, const char *path, uint64_t bytes, unsigned item, unsigned flags,
                      memacct_charge_result *ret);
        int (*uncharge)(memacct *m, const char *path, uint64_t bytes, unsigned item,
                        unsigned flags);
        int (*attach)(memacct *m, const char *path);
        int (*move)(memacct *m, pid_t pid, const char *path, unsigned *ret_sessions);
        int (*get_client)(memacct *m, pid_t pid, unsigned flags, memacct_client_info *ret);
        int (*reset_peak)(memacct *m, const char *path);
        int (*import_cgroups)(memacct *m, const char *from, const char *under,
                              memacct_import_result *ret);
        int (*subscribe)(memacct *m, const char *path);
        int (*next_event)(memacct *m, int timeout_msec, memacct_event *ret);
        /* Leave the bus and free the transport's state (memacct_close()). */
        void (*close)(memacct *m);
} BusOps;

typedef struct BusConn BusConn;

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

typedef struct BatchOp {
        bool charge;
        char *path;
        uint64_t bytes;
        int item;
        unsigned flags;
        int result;
        char *refused_path;
} BatchOp;

struct memacct_group_list {
        memacct_group_info *groups;
        size_t n;
};

struct memacct_batch {
        memacct *m;
        BatchOp *ops;
        size_t n, size;
        size_t answered;
        bool committed;
};

/* client.c */

/** client_new() - a handle with no connection yet, defaults set. Return: it, or NULL. */
memacct *client_new(void);

/** client_bus_unsupported() - record and return -EOPNOTSUPP: @what has no D-Bus form. */
int client_bus_unsupported(const memacct *m, const char *what);

/** client_error() - record @r with @message (NULL: strerror) for memacct_last_error(). Return: @r. */
int client_error(const memacct *m, int r, const char *message, const char *refused_path);

/** client_response_error() - the errno of a reply's status, recorded. Return: 0 or -errno. */
int client_response_error(const memacct *m, const Response *resp);

/**
 * client_call_locked() - send @req and wait for its reply, lock held, no
 * reconnection. @fd_pass: a descriptor to pass, or -1.
 * Return: 0 and the reply (status OK) in @ret (may be NULL); the reply's
 * error; a transport error.
 */
int client_call_locked(memacct *m, Request *req, int fd_pass, Response **ret);

/**
 * client_call() - client_call_locked() with the lock taken, reconnecting
 * first if the connection is broken, and after a break during the call
 * when @repeatable (the request is sent again once).
 */
int client_call(memacct *m, Request *req, bool repeatable, Response **ret);

/** client_ensure_connected() - reconnect if broken. Lock held. Return: 0 or -errno. */
int client_ensure_connected(memacct *m);

/** client_stat_name() - the wire name of @item. */
const char *client_stat_name(unsigned item);

/** client_wait_msec() - the handle's timeout as conn_pump() takes it: -1 for none. Lock held. */
int client_wait_msec(const memacct *m);

/* client-ops.c */

/** client_group_info_done() - free what @g points to and zero it. */
void client_group_info_done(memacct_group_info *g);
