/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * The D-Bus transport as the handle sees it: a table of functions. A bus
 * handle (memacct_connect_bus()) points at the table, a socket handle has
 * none, so the socket code has no link-time dependency on sd-bus (the
 * socket sources alone link without it).
 */

#include <stdint.h>
#include <sys/types.h>

#include "memacct.h"

/* The transport's state, in the handle (client-bus-conn.h). */
typedef struct BusConn BusConn;

/* Each entry is called by the public function of its name after that
 * checked its arguments, without the lock; it takes the lock around its
 * sd-bus use. Return: as the public function. */
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
