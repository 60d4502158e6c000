/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * The manager's methods over D-Bus: the BusOps entries of the public calls
 * of the same names. Each takes the lock; each returns as its public call.
 */

#include <stdint.h>
#include <sys/types.h>

#include <systemd/sd-bus.h>

#include "memacct.h"

/** bus_limits_append() - the members @l->set names onto @msg as an a{st}. Return: >= 0, or an sd-bus error. */
int bus_limits_append(sd_bus_message *msg, const memacct_limits *l);

/** bus_create_group() - memacct_create_group() on a bus handle. */
int bus_create_group(memacct *m, const char *path, const memacct_limits *limits, uint32_t owner);

/** bus_create_transient_group() - memacct_create_transient_group() on a bus handle. */
int bus_create_transient_group(memacct *m, const char *path, const memacct_limits *limits, uint32_t owner);

/** bus_remove_group() - memacct_remove_group() on a bus handle. */
int bus_remove_group(memacct *m, const char *path);

/** bus_set_owner() - memacct_set_owner() on a bus handle. */
int bus_set_owner(memacct *m, const char *path, uint32_t owner);

/** bus_set_limits() - memacct_set_limits() on a bus handle. */
int bus_set_limits(memacct *m, const char *path, const memacct_limits *limits, unsigned flags);

/** bus_reset_peak() - memacct_reset_peak() on a bus handle. */
int bus_reset_peak(memacct *m, const char *path);

/**
 * bus_charge_reply_locked() - the reply of a Charge or ChargeRegion call
 * (@r its outcome): (t throttle_usec, t over_high) into @ret; drops
 * @reply. Lock held. Return: @r, or -EBADMSG with @malformed as the
 * error's words.
 */
int bus_charge_reply_locked(memacct *m, int r, sd_bus_message *reply, const char *malformed,
                            memacct_charge_result *ret);

/**
 * bus_charge_with_flags_locked() - ChargeWithFlags of @bytes to @path
 * (NULL: the session's group) in @region ("": memory), stat item @stat
 * (NULL: none), with MEMACCT_KEEP and MEMACCT_NO_WAIT of @flags. Lock held.
 * Return: as bus_call_locked().
 */
int bus_charge_with_flags_locked(memacct *m, const char *path, const char *region, uint64_t bytes,
                                 const char *stat, unsigned flags, sd_bus_message **ret_reply);

/** bus_charge() - memacct_charge() on a bus handle: no MEMACCT_FORCE, no margin. */
int bus_charge(memacct *m, const char *path, uint64_t bytes, unsigned item, unsigned flags,
               memacct_charge_result *ret);

/** bus_uncharge() - memacct_uncharge() on a bus handle. */
int bus_uncharge(memacct *m, const char *path, uint64_t bytes, unsigned item, unsigned flags);

/** bus_attach() - memacct_attach() on a bus handle: the bus peer is the session. */
int bus_attach(memacct *m, const char *path);

/** bus_move() - memacct_move() on a bus handle. */
int bus_move(memacct *m, pid_t pid, const char *path, unsigned *ret_sessions);

/** bus_import_cgroups() - memacct_import_cgroups() on a bus handle. */
int bus_import_cgroups(memacct *m, const char *from, const char *under,
                       memacct_import_result *ret);

/** bus_get_client() - memacct_get_client() on a bus handle. */
int bus_get_client(memacct *m, pid_t pid, unsigned flags, memacct_client_info *ret);

/* Placement rules on a bus handle (client-bus-rules.c): memacct_rule_add(),
 * memacct_rule_remove(), memacct_rule_list(). */
int bus_rule_add(memacct *m, const char *cgroup, const char *group, unsigned flags);
int bus_rule_remove(memacct *m, const char *cgroup);
int bus_rule_list(memacct *m, memacct_rules **ret);
