/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * The handle (struct memacct), shared by the modules of libmemacct: the
 * socket's connection and session, the charge stock, the events, and on a
 * bus handle the table of the D-Bus transport. Nothing here is exported.
 */

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "client-conn.h"
#include "client-event-queue.h"
#include "client-regions.h"
#include "client-stock.h"
#include "memacct.h"

#define CLIENT_DEFAULT_TIMEOUT_MSEC 30000u
#define CLIENT_DEFAULT_RECONNECT 10u

/* A subscription, as a reconnection renews it. */
typedef struct ClientSubscription {
        char *path;
        char *region; /* NULL: memory's, as a Subscribe without the field */
} ClientSubscription;

/* A region whose charges the session can give back, and who is asked (client-reclaim.c). */
typedef struct ClientReclaimer {
        char *region; /* NULL: memory */
        uint32_t items; /* memory declared item by item (bits of MEMACCT_STAT_*); 0: all of it */
        memacct_reclaim_fn fn;
        void *userdata;
} ClientReclaimer;

/* A ReclaimRequest read, not served yet. */
typedef struct ClientReclaimAsk {
        uint64_t id;
        uint64_t bytes;
        char *region; /* NULL: memory */
} ClientReclaimAsk;

/* The D-Bus transport's state (client-bus-conn.h). */
typedef struct BusConn BusConn;

/*
 * The D-Bus transport as the handle reaches it: a table of functions,
 * filled by the transport (client-bus.c), so that the socket code has no
 * link-time dependency on sd-bus (the socket sources alone link without
 * it) and the dependency goes from the bus to the handle, never back.
 * Each entry is called by the public function of its name after that
 * checked its arguments, without the lock; it takes the lock around its
 * sd-bus use. Return: as the public function.
 */
typedef struct BusOps {
        int (*create_group)(memacct *m, const char *path, const memacct_limits *limits,
                            uint32_t owner);
        int (*create_transient_group)(memacct *m, const char *path, const memacct_limits *limits,
                                      uint32_t owner);
        int (*remove_group)(memacct *m, const char *path);
        int (*set_owner)(memacct *m, const char *path, uint32_t owner);
        int (*get_info)(memacct *m, memacct_server_info **ret);
        int (*list_sessions)(memacct *m, const char *path, memacct_sessions **ret);
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
        int (*rule_add)(memacct *m, const char *cgroup, const char *group, unsigned flags);
        int (*rule_remove)(memacct *m, const char *cgroup);
        int (*rule_list)(memacct *m, memacct_rules **ret);
        int (*prune_mirrors)(memacct *m, memacct_pruned **ret);
        int (*next_event)(memacct *m, int timeout_msec, memacct_event *ret);
        int (*event_requester)(memacct *m, uint32_t *ret_pid, uint32_t *ret_uid);
        /* Device memory regions (client-regions.c dispatches to these). */
        int (*add_region)(memacct *m, const char *name, uint64_t capacity);
        int (*remove_region)(memacct *m, const char *name);
        int (*list_regions)(memacct *m, memacct_regions **ret);
        int (*charge_region)(memacct *m, const char *path, const char *region, uint64_t bytes, unsigned flags,
                             memacct_charge_result *ret);
        int (*uncharge_region)(memacct *m, const char *path, const char *region, uint64_t bytes,
                               unsigned flags);
        int (*set_region_limits)(memacct *m, const char *path, const char *region, const memacct_limits *limits);
        int (*reset_region_peak)(memacct *m, const char *path, const char *region);
        int (*transfer)(memacct *m, const char *from, const char *to, const char *region, uint64_t bytes);
        int (*evict_valuable)(memacct *m, const char *limit, const char *candidate, const char *region,
                              unsigned flags);
        int (*subscribe_region)(memacct *m, const char *path, const char *region);
        int (*event_region)(memacct *m, const char **ret);
        /* Reclaim (client-reclaim.c dispatches to these): a declaration,
         * @item < 0 for @region whole, else memory's stat item @item; the
         * answer to a request, once its callback returned; memacct_fd(),
         * memacct_process() and memacct_reclaim(). */
        int (*set_reclaimable)(memacct *m, const char *region, int item, memacct_reclaim_fn fn,
                               void *userdata);
        int (*reclaim_done)(memacct *m, uint64_t id, bool cannot);
        int (*fd)(memacct *m);
        int (*process)(memacct *m, int timeout_msec);
        int (*reclaim)(memacct *m, const char *path, const char *region, uint64_t bytes,
                       uint64_t *ret_released);
        /* Leave the bus and free the transport's state (memacct_close()). */
        void (*close)(memacct *m);
} BusOps;

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
        /* The group the daemon said the last Attach attached to (for
         * "auto", the one it chose); NULL before one was answered.
         * memacct_attached_group() reads it. */
        char *attached_group;
        ClientSubscription *subscriptions;
        size_t n_subscriptions;
        /* Reclaim (client-reclaim.c): the declarations, renewed after a
         * reconnection, and the requests read and not served yet. */
        ClientReclaimer *reclaimers;
        size_t n_reclaimers;
        ClientReclaimAsk *reclaim_q;
        size_t n_reclaim_q;
        /* The session's charges in device regions (client-regions.c). */
        ClientRegionHeld *region_held;
        size_t n_region_held;

        /* The charge stock. */
        Stock stock;
        /* The device region of each region line (client-stock.h): set
         * once, under the lock, and freed by memacct_close(). */
        char *stock_regions[STOCK_REGIONS];
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

/**
 * client_attach_from_env() - attach the session of the new handle @m to
 * $MEMACCT_GROUP when it is set and not empty (memacctctl run names its
 * group so); the last step of memacct_connect() and memacct_connect_bus().
 * Return: 0, or memacct_attach()'s error, its words prefixed with the
 * variable.
 */
int client_attach_from_env(memacct *m);

/**
 * client_attached_group_set() - note @group (NULL: unknown) as the one
 * the last Attach attached to, for memacct_attached_group(); lock held.
 * Both transports call it on an Attach's success.
 * Return: 0, or -ENOMEM (recorded).
 */
int client_attached_group_set(memacct *m, const char *group);
