/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The manager's methods over D-Bus, one call each: groups (create, remove,
 * limits, peak, import), the session (charge, uncharge, attach, move) and
 * clients. What the daemon sees: the bus peer (our unique name) is the
 * session. Attach attaches it; charges without MEMACCT_KEEP belong to it
 * and are released by the daemon when the peer leaves the bus. Replies
 * are read into the public header's structs; one that does not match the
 * method's signature is -EBADMSG.
 */

#include <errno.h>
#include <string.h>

#include "client-bus-conn.h"
#include "client-bus-ops.h"
#include "client-error.h"
#include "client-stat.h"
#include "macro.h"

int bus_limits_append(sd_bus_message *msg, const memacct_limits *l) {
        int r;

        r = sd_bus_message_open_container(msg, 'a', "{st}");
        if (r >= 0 && (l->set & MEMACCT_LIMIT_MAX))
                r = sd_bus_message_append(msg, "{st}", "max", l->max);
        if (r >= 0 && (l->set & MEMACCT_LIMIT_HIGH))
                r = sd_bus_message_append(msg, "{st}", "high", l->high);
        if (r >= 0 && (l->set & MEMACCT_LIMIT_LOW))
                r = sd_bus_message_append(msg, "{st}", "low", l->low);
        if (r >= 0 && (l->set & MEMACCT_LIMIT_MIN))
                r = sd_bus_message_append(msg, "{st}", "min", l->min);
        if (r >= 0)
                r = sd_bus_message_close_container(msg);
        return r;
}

/* CreateGroup (s a{st} u) and SetLimits (s a{st} b): @path, @limits (NULL:
 * none) and one 32-bit argument of type @tail_type ("u" or "b": sd-bus reads
 * either as an int-sized vararg). Lock held. */
static int limits_call_locked(memacct *m, const char *member, const char *path,
                              const memacct_limits *limits, const char *tail_type, uint32_t tail) {
        static const memacct_limits none = {};
        sd_bus_message *call = NULL;
        int r;

        r = bus_manager_call_new(m, member, &call);
        if (r < 0)
                return r;
        r = sd_bus_message_append(call, "s", path);
        if (r >= 0)
                r = bus_limits_append(call, limits ? limits : &none);
        if (r >= 0)
                r = sd_bus_message_append(call, tail_type, tail);
        return bus_send_locked(m, call, r, NULL);
}

int bus_create_group(memacct *m, const char *path, const memacct_limits *limits,
                            uint32_t owner) {
        int r;

        bus_lock(m);
        r = limits_call_locked(m, "CreateGroup", path, limits, "u", owner);
        bus_unlock(m);
        return r;
}

int bus_create_transient_group(memacct *m, const char *path, const memacct_limits *limits,
                               uint32_t owner) {
        int r;

        bus_lock(m);
        r = limits_call_locked(m, "CreateTransientGroup", path, limits, "u", owner);
        bus_unlock(m);
        return r;
}

int bus_remove_group(memacct *m, const char *path) {
        return bus_manager_path_call(m, "RemoveGroup", path);
}

/* SetLimitsWithFlags's flags (org.memacct1(5)). */
#define BUS_LIMITS_FORCE UINT64_C(1)
#define BUS_LIMITS_NO_RECLAIM UINT64_C(2)

/* SetLimitsWithFlags (s s a{st} t) of memory: MEMACCT_FORCE and
 * MEMACCT_NO_WAIT (no_reclaim) of @flags. Lock held. */
static int set_limits_with_flags_locked(memacct *m, const char *path, const memacct_limits *limits,
                                        unsigned flags) {
        uint64_t f = (flags & MEMACCT_FORCE ? BUS_LIMITS_FORCE : 0) |
                     (flags & MEMACCT_NO_WAIT ? BUS_LIMITS_NO_RECLAIM : 0);
        sd_bus_message *call = NULL;
        int r;

        r = bus_manager_call_new(m, "SetLimitsWithFlags", &call);
        if (r < 0)
                return r;
        r = sd_bus_message_append(call, "ss", path, "");
        if (r >= 0)
                r = bus_limits_append(call, limits);
        if (r >= 0)
                r = sd_bus_message_append(call, "t", f);
        return bus_send_locked(m, call, r, NULL);
}

int bus_set_limits(memacct *m, const char *path, const memacct_limits *limits,
                          unsigned flags) {
        int r;

        bus_lock(m);
        /* SetLimits has no no_reclaim: only that needs the method with
         * flags, so a daemon from before it still takes every other. */
        if (flags & MEMACCT_NO_WAIT)
                r = set_limits_with_flags_locked(m, path, limits, flags);
        else
                r = limits_call_locked(m, "SetLimits", path, limits, "b", !!(flags & MEMACCT_FORCE));
        bus_unlock(m);
        return r;
}

int bus_set_owner(memacct *m, const char *path, uint32_t owner) {
        int r;

        bus_lock(m);
        r = bus_manager_call_locked(m, "SetOwner", NULL, "su", path, owner);
        bus_unlock(m);
        return r;
}

int bus_reset_peak(memacct *m, const char *path) {
        return bus_manager_path_call(m, "ResetPeak", path);
}

int bus_charge_reply_locked(memacct *m, int r, sd_bus_message *reply, const char *malformed,
                            memacct_charge_result *ret) {
        uint64_t throttle_usec = 0, over_high = 0;

        if (r >= 0 && sd_bus_message_read(reply, "tt", &throttle_usec, &over_high) < 0)
                r = client_error(m, -EBADMSG, malformed, NULL);
        sd_bus_message_unref(reply);
        if (r >= 0 && ret)
                /* The bus reply has no margin and no over-max flag (a forced
                 * charge, the only one that sets it, has no bus form). */
                *ret = (memacct_charge_result) {
                        .over_high = over_high,
                        .throttle_usec = throttle_usec,
                        .margin = MEMACCT_UNLIMITED,
                };
        return r;
}

/* ChargeWithFlags's flags (org.memacct1(5)). */
#define BUS_CHARGE_KEEP UINT64_C(1)
#define BUS_CHARGE_NO_WAIT UINT64_C(2)

int bus_charge_with_flags_locked(memacct *m, const char *path, const char *region, uint64_t bytes,
                                 const char *stat, unsigned flags, sd_bus_message **ret_reply) {
        uint64_t f = (flags & MEMACCT_KEEP ? BUS_CHARGE_KEEP : 0) |
                     (flags & MEMACCT_NO_WAIT ? BUS_CHARGE_NO_WAIT : 0);

        return bus_manager_call_locked(m, "ChargeWithFlags", ret_reply, "sstst", path ? path : "", region,
                                       bytes, stat ? stat : "", f);
}

int bus_charge(memacct *m, const char *path, uint64_t bytes, unsigned item, unsigned flags,
                      memacct_charge_result *ret) {
        sd_bus_message *reply = NULL;
        int r;

        if (flags & MEMACCT_FORCE)
                return client_bus_unsupported(m, "a forced charge");
        bus_lock(m);
        /* Charge has no no_wait: only that needs the method with flags, so
         * a daemon from before it still takes every other charge. Either
         * waits while reclaim runs, up to the daemon's rounds, within the
         * handle's timeout. */
        if (flags & MEMACCT_NO_WAIT)
                r = bus_charge_with_flags_locked(m, path, "", bytes, client_stat_name(item), flags, &reply);
        else
                r = bus_manager_call_locked(m, "Charge", &reply, "stsb", path ? path : "", bytes,
                                            client_stat_name(item), (int) !!(flags & MEMACCT_KEEP));
        r = bus_charge_reply_locked(m, r, reply, "malformed Charge reply", ret);
        bus_unlock(m);
        return r;
}

int bus_uncharge(memacct *m, const char *path, uint64_t bytes, unsigned item,
                        unsigned flags) {
        int r;

        bus_lock(m);
        r = bus_manager_call_locked(m, "Uncharge", NULL, "stsb", path ? path : "", bytes,
                                client_stat_name(item), (int) !!(flags & MEMACCT_KEEP));
        bus_unlock(m);
        return r;
}

int bus_attach(memacct *m, const char *path) {
        sd_bus_message *reply = NULL;
        const char *group = NULL;
        int r;

        bus_lock(m);
        r = bus_manager_call_locked(m, "Attach", &reply, "s", path);
        /* A daemon from before the reply named the group answers nothing:
         * then only a path given outright is known. */
        if (r >= 0 && sd_bus_message_read(reply, "s", &group) <= 0)
                group = *path && strcmp(path, "auto") != 0 ? path : NULL;
        if (r >= 0)
                r = client_attached_group_set(m, group);
        sd_bus_message_unref(reply);
        bus_unlock(m);
        return r;
}

int bus_move(memacct *m, pid_t pid, const char *path, unsigned *ret_sessions) {
        sd_bus_message *reply = NULL;
        uint32_t sessions = 0;
        int r;

        bus_lock(m);
        r = bus_manager_call_locked(m, "MoveProcess", &reply, "us", (uint32_t) pid, path);
        if (r >= 0 && sd_bus_message_read(reply, "u", &sessions) < 0)
                r = client_error(m, -EBADMSG, "malformed MoveProcess reply", NULL);
        sd_bus_message_unref(reply);
        bus_unlock(m);
        if (r >= 0 && ret_sessions)
                *ret_sessions = sessions;
        return r;
}

int bus_import_cgroups(memacct *m, const char *from, const char *under,
                              memacct_import_result *ret) {
        sd_bus_message *reply = NULL;
        uint32_t c = 0, u = 0, n = 0;
        int r;

        bus_lock(m);
        r = bus_manager_call_locked(m, "ImportCgroups", &reply, "ss", from ? from : "", under ? under : "");
        if (r >= 0 && sd_bus_message_read(reply, "uuu", &c, &u, &n) < 0)
                r = client_error(m, -EBADMSG, "malformed ImportCgroups reply", NULL);
        sd_bus_message_unref(reply);
        bus_unlock(m);
        if (r >= 0 && ret)
                *ret = (memacct_import_result) { .created = c, .updated = u, .unchanged = n };
        return r < 0 ? r : 0;
}

static int get_client_locked(memacct *m, pid_t pid, unsigned flags, memacct_client_info *ret) {
        sd_bus_message *reply = NULL;
        memacct_client_info info = { .pid = pid > 0 ? (uint32_t) pid : (uint32_t) m->pid };
        const char *name;
        uint64_t value;
        int r;

        r = bus_manager_call_locked(m, "GetClient", &reply, "ub", (uint32_t) pid,
                                (int) !!(flags & MEMACCT_EXACT));
        if (r < 0)
                return r;
        r = sd_bus_message_enter_container(reply, 'a', "{st}");
        while (r >= 0 && (r = sd_bus_message_read(reply, "{st}", &name, &value)) > 0) {
                if (strcmp(name, "file") == 0)
                        info.file = value;
                else if (strcmp(name, "anon") == 0)
                        info.anon = value;
                else if (strcmp(name, "swap") == 0)
                        info.swap = value;
                else if (strcmp(name, "shmem") == 0)
                        info.shmem = value;
        }
        if (r >= 0)
                r = sd_bus_message_exit_container(reply);
        sd_bus_message_unref(reply);
        if (r < 0)
                return client_error(m, -EBADMSG, "malformed GetClient reply", NULL);
        *ret = info;
        return 0;
}

int bus_get_client(memacct *m, pid_t pid, unsigned flags, memacct_client_info *ret) {
        int r;

        bus_lock(m);
        r = get_client_locked(m, pid, flags, ret);
        bus_unlock(m);
        return r;
}
