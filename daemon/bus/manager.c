/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * org.memacct1.Manager: the bus's request handlers
 *
 * The bus's twin of dispatch.c, and as thin: each handler reads its
 * arguments, learns who calls (bus-peer.c), applies the rules of authz.c,
 * makes the core call, and replies. Failures are named D-Bus errors from
 * the one status table (proto/status.c) with the socket's message, word
 * for word, so that memacctctl and busctl tell the same story.
 *
 * What differs from the socket is only what the bus is: a peer's session
 * exists from its first session charge or Attach, not from a connect;
 * events are the Event signal, not a subscription; there is no stock and
 * no force on Charge. Changes made here emit the ObjectManager and
 * PropertiesChanged signals; changes made over the socket do not (the
 * bus does not watch the other transport).
 */

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "authz.h"
#include "manager.h"
#include "peer.h"
#include "charge.h"
#include "log.h"
#include "macro.h"
#include "session.h"
#include "status.h"

/* A ListGroups reply larger than this is refused, as the socket refuses
 * a list frame over 16 MiB: list a subtree instead. */
#define LIST_REPLY_MAX (16u << 20)

int bus_fail(sd_bus_error *error, int r, const char *fmt, ...) {
        char text[AUTHZ_MESSAGE_MAX];
        va_list ap;

        va_start(ap, fmt);
        vsnprintf(text, sizeof(text), fmt, ap);
        va_end(ap);
        return sd_bus_error_set(error, status_to_dbus_error(status_from_errno(r)), text);
}

bool bus_manager_may_broadcast(BusManager *m) {
        return !m->dispatch || dispatch_read_access(m->dispatch) == READ_ACCESS_ALL;
}

int bus_group_object_path(const char *path, char **ret) {
        return sd_bus_path_encode(BUS_GROUP_PREFIX, path, ret);
}

static void state_changed(BusManager *m) {
        if (m->changed)
                m->changed(m->changed_userdata);
}

/* The peer that sent @msg, with the error already set on failure. */
#define GET_PEER(m, msg, p, error)                                  \
        do {                                                        \
                int _r_ = bus_peer_get((m), (msg), &(p), (error));  \
                if (_r_ < 0)                                        \
                        return _r_;                                 \
        } while (0)

/* An authz_*() result: 0, or the error with its message in @text. */
static int check(sd_bus_error *error, int r, const char *text) {
        return r < 0 ? bus_fail(error, r, "%s", text) : 0;
}

/* The authz.c messages, as dispatch.c's fail_*() report them on the socket. */
static int fail_path(sd_bus_error *error, int r, const char *path) {
        char text[AUTHZ_MESSAGE_MAX];

        return check(error, authz_path_message(r, path, text, sizeof(text)), text);
}

static int fail_denied(sd_bus_error *error, const char *path) {
        char text[AUTHZ_MESSAGE_MAX];

        return check(error, authz_denied_message(path, text, sizeof(text)), text);
}

static int fail_refused(sd_bus_error *error, const char *path, const MemChargeResult *res) {
        char text[AUTHZ_MESSAGE_MAX];

        return check(error, authz_refused_message(path, res, text, sizeof(text)), text);
}

/* Look @path up with a reference; sets the error on failure. */
static int lookup(BusManager *m, const char *path, MemGroup **ret, sd_bus_error *error) {
        char text[AUTHZ_MESSAGE_MAX];
        int r;

        r = authz_lookup(m->core, path, ret, text, sizeof(text));
        return check(error, r, text);
}

/* Look @path up for @p to charge, attach to or move into; sets the error on failure. */
static int lookup_use(BusManager *m, BusPeer *p, const char *path, MemGroup **ret, sd_bus_error *error) {
        char text[AUTHZ_MESSAGE_MAX];
        int r;

        r = authz_lookup_use(m->core, p->uid, path, ret, text, sizeof(text));
        return check(error, r, text);
}

static int parse_stat(const char *s, MemStatItem *ret, sd_bus_error *error) {
        char text[AUTHZ_MESSAGE_MAX];
        int r;

        r = authz_parse_stat(s, ret, text, sizeof(text));
        return check(error, r, text);
}

/*
 * The start of a call whose only argument is a group's path: read it,
 * learn the caller, look the group up. In that order, so that a malformed
 * call is refused before the peer is asked about.
 */
static int read_group(BusManager *m, sd_bus_message *msg, BusPeer **ret_peer, MemGroup **ret,
                      sd_bus_error *error) {
        const char *path;
        int r;

        r = sd_bus_message_read(msg, "s", &path);
        if (r < 0)
                return r;
        r = bus_peer_get(m, msg, ret_peer, error);
        if (r < 0)
                return r;
        return lookup(m, path, ret, error);
}

/* ---- limits: a{st} of max, high, low, min ---- */

static int read_limits(sd_bus_message *msg, AuthzLimits *ret, sd_bus_error *error) {
        AuthzLimits l = {};
        const char *key;
        uint64_t value;
        int r;

        r = sd_bus_message_enter_container(msg, 'a', "{st}");
        if (r < 0)
                return r;
        while ((r = sd_bus_message_read(msg, "{st}", &key, &value)) > 0) {
                bool *has;
                uint64_t *v;

                if (strcmp(key, "max") == 0)
                        has = &l.has_max, v = &l.max;
                else if (strcmp(key, "high") == 0)
                        has = &l.has_high, v = &l.high;
                else if (strcmp(key, "low") == 0)
                        has = &l.has_low, v = &l.low;
                else if (strcmp(key, "min") == 0)
                        has = &l.has_min, v = &l.min;
                else
                        return bus_fail(error, -EINVAL, "unknown limit '%s' (max, high, low, min)", key);
                if (*has)
                        return bus_fail(error, -EINVAL, "limit '%s' given twice", key);
                *has = true;
                *v = value;
        }
        if (r < 0)
                return r;
        r = sd_bus_message_exit_container(msg);
        if (r < 0)
                return r;
        *ret = l;
        return 0;
}

/* PropertiesChanged for the limits @l set on @g. */
static void emit_limits_changed(BusManager *m, MemGroup *g, const AuthzLimits *l) {
        _cleanup_free_ char *object = NULL;
        const char *changed[5];
        size_t n = 0;
        int r;

        if (l->has_max)
                changed[n++] = "MemoryMax";
        if (l->has_high)
                changed[n++] = "MemoryHigh";
        if (l->has_low)
                changed[n++] = "MemoryLow";
        if (l->has_min)
                changed[n++] = "MemoryMin";
        changed[n] = NULL;
        if (n == 0 || !bus_manager_may_broadcast(m) || bus_group_object_path(g->path, &object) < 0)
                return;
        r = sd_bus_emit_properties_changed_strv(m->bus, object, BUS_GROUP_INTERFACE, (char **) changed);
        if (r < 0)
                log_debug_errno(r, "Cannot emit PropertiesChanged for %s, ignoring: %m", g->path);
}

static int apply_limits(MemGroup *g, const AuthzLimits *l, bool force, sd_bus_error *error) {
        char text[AUTHZ_MESSAGE_MAX];
        int r;

        r = authz_apply_limits(g, l, force, text, sizeof(text));
        return check(error, r, text);
}

/* ---- groups ---- */

static int method_create_group(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        BusManager *m = userdata;
        _cleanup_(group_unrefp) MemGroup *g = NULL;
        _cleanup_free_ char *object = NULL;
        char text[AUTHZ_MESSAGE_MAX];
        AuthzLimits limits;
        BusPeer *p;
        const char *path;
        uint32_t owner_arg;
        uid_t owner;
        int r;

        r = sd_bus_message_read(msg, "s", &path);
        if (r < 0)
                return r;
        r = read_limits(msg, &limits, error);
        if (r < 0)
                return r;
        r = sd_bus_message_read(msg, "u", &owner_arg);
        if (r < 0)
                return r;
        GET_PEER(m, msg, p, error);

        r = authz_check_create(m->core, p->uid, path, owner_arg != BUS_NO_OWNER, (uid_t) owner_arg, &owner,
                               text, sizeof(text));
        if (r < 0)
                return check(error, r, text);
        r = group_create(m->core, path, owner);
        if (r < 0)
                return fail_path(error, r, path);
        state_changed(m);
        r = bus_group_object_path(path, &object);
        if (r < 0)
                return r;
        if (limits.has_max || limits.has_high || limits.has_low || limits.has_min) {
                r = group_get(m->core, path, &g);
                if (r < 0)
                        return fail_path(error, r, path);
                r = apply_limits(g, &limits, false, error);
                state_changed(m);
                if (r < 0)
                        return r;
        }
        /* The object first, then its limits: a watcher of PropertiesChanged
         * alone sees them too. */
        if (bus_manager_may_broadcast(m)) {
                r = sd_bus_emit_object_added(m->bus, object);
                if (r < 0)
                        log_debug_errno(r, "Cannot emit InterfacesAdded for %s, ignoring: %m", path);
        }
        if (g)
                emit_limits_changed(m, g, &limits);
        return sd_bus_reply_method_return(msg, "o", object);
}

static int method_remove_group(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        BusManager *m = userdata;
        _cleanup_(group_unrefp) MemGroup *g = NULL;
        _cleanup_free_ char *object = NULL;
        BusPeer *p;
        int r;

        r = read_group(m, msg, &p, &g, error);
        if (r < 0)
                return r;
        /* g->path is the path asked for, to the letter: authz_lookup()
         * takes canonical paths only. */
        if (!authz_may_modify(p->uid, g))
                return fail_denied(error, g->path);
        r = group_remove(m->core, g->path);
        if (r == -EBUSY)
                return bus_fail(error, r, AUTHZ_MSG_REMOVE_BUSY, g->path);
        if (r < 0)
                return fail_path(error, r, g->path);
        state_changed(m);
        if (bus_manager_may_broadcast(m) && bus_group_object_path(g->path, &object) >= 0) {
                r = sd_bus_emit_interfaces_removed(m->bus, object, BUS_GROUP_INTERFACE, NULL);
                if (r < 0)
                        log_debug_errno(r, "Cannot emit InterfacesRemoved for %s, ignoring: %m", g->path);
        }
        return sd_bus_reply_method_return(msg, NULL);
}

static int method_set_limits(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        BusManager *m = userdata;
        _cleanup_(group_unrefp) MemGroup *g = NULL;
        AuthzLimits limits;
        const char *path;
        BusPeer *p;
        int force, r;

        r = sd_bus_message_read(msg, "s", &path);
        if (r < 0)
                return r;
        r = read_limits(msg, &limits, error);
        if (r < 0)
                return r;
        r = sd_bus_message_read(msg, "b", &force);
        if (r < 0)
                return r;
        GET_PEER(m, msg, p, error);

        r = lookup(m, path, &g, error);
        if (r < 0)
                return r;
        if (!authz_may_modify(p->uid, g))
                return fail_denied(error, path);
        r = apply_limits(g, &limits, force, error);
        state_changed(m);
        if (r < 0)
                return r;
        emit_limits_changed(m, g, &limits);
        return sd_bus_reply_method_return(msg, NULL);
}

static int method_get_group(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        BusManager *m = userdata;
        _cleanup_(group_unrefp) MemGroup *g = NULL;
        _cleanup_free_ char *object = NULL;
        BusPeer *p;
        int r;

        r = read_group(m, msg, &p, &g, error);
        if (r < 0)
                return r;
        if (!authz_may_read(dispatch_read_access(m->dispatch), p->uid, g))
                return fail_denied(error, g->path);
        r = bus_group_object_path(g->path, &object);
        if (r < 0)
                return r;
        return sd_bus_reply_method_return(msg, "o", object);
}

static int list_reply(BusManager *m, sd_bus_message *msg, const char *path, BusPeer *p, MemGroup **v,
                      size_t n, sd_bus_error *error) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        ReadAccess access = dispatch_read_access(m->dispatch);
        size_t bytes = 0;
        int r;

        r = sd_bus_message_new_method_return(msg, &reply);
        if (r < 0)
                return r;
        r = sd_bus_message_open_container(reply, 'a', "(so)");
        if (r < 0)
                return r;
        for (size_t i = 0; i < n; i++) {
                _cleanup_free_ char *object = NULL;

                if (!authz_may_read(access, p->uid, v[i]))
                        continue;
                r = bus_group_object_path(v[i]->path, &object);
                if (r < 0)
                        return r;
                bytes += strlen(v[i]->path) + strlen(object) + 16;
                if (bytes > LIST_REPLY_MAX)
                        return bus_fail(error, -ENOSPC, AUTHZ_MSG_LIST_TOO_LARGE,
                                        path);
                r = sd_bus_message_append(reply, "(so)", v[i]->path, object);
                if (r < 0)
                        return r;
        }
        r = sd_bus_message_close_container(reply);
        if (r < 0)
                return r;
        return sd_bus_send(NULL, reply, NULL);
}

static int method_list_groups(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        BusManager *m = userdata;
        _cleanup_(group_unrefp) MemGroup *top = NULL;
        MemGroup **v;
        const char *path;
        BusPeer *p;
        int recursive, r;
        size_t n;

        r = sd_bus_message_read(msg, "sb", &path, &recursive);
        if (r < 0)
                return r;
        GET_PEER(m, msg, p, error);

        if (!*path)
                path = "/";
        r = lookup(m, path, &top, error);
        if (r < 0)
                return r;
        r = authz_list_collect(top, recursive, &v, &n);
        if (r < 0)
                return bus_fail(error, r, AUTHZ_MSG_OUT_OF_MEMORY);
        r = list_reply(m, msg, path, p, v, n, error);
        for (size_t i = 0; i < n; i++)
                group_unref(v[i]);
        free(v);
        return r;
}

static int method_reset_peak(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        BusManager *m = userdata;
        _cleanup_(group_unrefp) MemGroup *g = NULL;
        BusPeer *p;
        int r;

        r = read_group(m, msg, &p, &g, error);
        if (r < 0)
                return r;
        if (!authz_may_reset_peak(p->uid, g))
                return fail_denied(error, g->path);
        group_reset_peak(g);
        return sd_bus_reply_method_return(msg, NULL);
}

/* ---- charges and sessions ---- */

/* The group a charge of @p without keep goes to, attaching its session if it must. */
static int session_target(BusManager *m, BusPeer *p, const char *path, MemSession **ret_session,
                          MemGroup **ret, sd_bus_error *error) {
        char text[AUTHZ_MESSAGE_MAX];
        int r;

        r = bus_peer_session(p, ret_session, error);
        if (r < 0)
                return r;
        r = authz_session_target(m->core, *ret_session, p->uid, path, ret, text, sizeof(text));
        return check(error, r, text);
}

/* A Charge or Uncharge call: its arguments, and where it goes (the group
 * for a kept one; the caller's session and its group otherwise). */
typedef struct ChargeCall {
        MemGroup *g; /* a reference */
        MemSession *s; /* NULL for keep */
        uint64_t bytes;
        MemStatItem item;
        int keep;
} ChargeCall;

static int charge_call_read(BusManager *m, sd_bus_message *msg, ChargeCall *ret,
                            sd_bus_error *error) {
        const char *path, *stat;
        BusPeer *p;
        int r;

        *ret = (ChargeCall) {};
        r = sd_bus_message_read(msg, "stsb", &path, &ret->bytes, &stat, &ret->keep);
        if (r < 0)
                return r;
        GET_PEER(m, msg, p, error);
        r = parse_stat(stat, &ret->item, error);
        if (r < 0)
                return r;
        if (ret->keep)
                return lookup_use(m, p, path, &ret->g, error);
        return session_target(m, p, path, &ret->s, &ret->g, error);
}

static int method_charge(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        BusManager *m = userdata;
        MemChargeResult res = {};
        ChargeCall c;
        int r;

        r = charge_call_read(m, msg, &c, error);
        if (r < 0)
                goto out;
        if (c.keep) {
                r = core_charge_kept(m->core, c.g, c.bytes, c.item, MEM_CHARGE_DRAIN, &res);
                if (r == 0)
                        state_changed(m);
        } else
                r = session_charge(c.s, c.bytes, c.item, MEM_CHARGE_DRAIN, &res);
        if (r == -EDQUOT)
                r = fail_refused(error, c.g->path, &res);
        else if (r < 0)
                r = bus_fail(error, r, "%s: %s", c.g->path, authz_errno_text(r));
        else
                r = sd_bus_reply_method_return(msg, "tt", res.throttle_usec, res.over_high);
        charge_result_done(&res);
out:
        group_unref(c.g);
        return r;
}

static int method_uncharge(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        BusManager *m = userdata;
        ChargeCall c;
        int r;

        r = charge_call_read(m, msg, &c, error);
        if (r < 0)
                goto out;
        if (c.keep) {
                r = group_uncharge_kept(m->core, c.g, c.bytes, c.item);
                if (r == 0)
                        state_changed(m);
        } else
                r = session_uncharge(c.s, c.bytes, c.item);
        if (r == -ERANGE)
                r = bus_fail(error, r, AUTHZ_MSG_UNCHARGE_RANGE, c.g->path,
                             (unsigned long long) c.bytes, mem_stat_item_to_string(c.item),
                             c.keep ? AUTHZ_MSG_HELD_BY_GROUP : AUTHZ_MSG_HELD_BY_SESSION);
        else if (r < 0)
                r = bus_fail(error, r, "%s: %s", c.g->path, authz_errno_text(r));
        else
                r = sd_bus_reply_method_return(msg, NULL);
out:
        group_unref(c.g);
        return r;
}

static int method_attach(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        BusManager *m = userdata;
        _cleanup_(group_unrefp) MemGroup *g = NULL;
        char buf[MEM_PATH_MAX + 1], text[AUTHZ_MESSAGE_MAX];
        const char *path;
        MemSession *s;
        BusPeer *p;
        int r;

        r = sd_bus_message_read(msg, "s", &path);
        if (r < 0)
                return r;
        GET_PEER(m, msg, p, error);

        /* "" and "auto": the mirror of the peer's kernel cgroup, as on the socket. */
        r = dispatch_attach_path(m->dispatch, p->pid, path, buf, sizeof(buf), &path, text, sizeof(text));
        if (r < 0)
                return check(error, r, text);
        r = lookup_use(m, p, path, &g, error);
        if (r < 0)
                return r;
        r = bus_peer_session(p, &s, error);
        if (r < 0)
                return r;
        r = session_attach(s, g);
        if (r == -EBUSY)
                return bus_fail(error, r, AUTHZ_MSG_ATTACH_BUSY);
        if (r < 0)
                return fail_path(error, r, path);
        return sd_bus_reply_method_return(msg, NULL);
}

static int method_import_cgroups(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        BusManager *m = userdata;
        char text[AUTHZ_MESSAGE_MAX];
        const char *from, *under;
        unsigned counts[3] = {};
        BusPeer *p;
        int r;

        r = sd_bus_message_read(msg, "ss", &from, &under);
        if (r < 0)
                return r;
        GET_PEER(m, msg, p, error);

        r = dispatch_cgroup_import(m->dispatch, p->uid, from, under, counts, text, sizeof(text));
        if (r < 0)
                return check(error, r, text);
        return sd_bus_reply_method_return(msg, "uuu", (uint32_t) counts[0], (uint32_t) counts[1],
                                          (uint32_t) counts[2]);
}

static int method_move_process(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        BusManager *m = userdata;
        _cleanup_(group_unrefp) MemGroup *g = NULL;
        MemChargeResult res = {};
        const char *path;
        MemSession *s;
        uint32_t pid;
        BusPeer *p;
        int r;

        r = sd_bus_message_read(msg, "us", &pid, &path);
        if (r < 0)
                return r;
        GET_PEER(m, msg, p, error);

        r = lookup_use(m, p, path, &g, error);
        if (r < 0)
                return r;
        if (!authz_may_move(p->uid, p->pid, (pid_t) pid))
                return bus_fail(error, -EPERM, AUTHZ_MSG_MOVE_DENIED);
        if (pid == 0) {
                /* The caller's own bus session: one that was never opened
                 * is not attached, as a fresh socket session is not. */
                s = bus_peer_has_session(p);
                r = s ? session_move(s, g, &res) : -ENOTCONN;
                if (r == 0)
                        r = 1;
        } else
                r = client_move(m->core, (pid_t) pid, g, &res);
        if (r == -EDQUOT)
                r = fail_refused(error, g->path, &res);
        else if (r == -ESRCH)
                r = bus_fail(error, r, AUTHZ_MSG_NO_CLIENT, (int) pid);
        else if (r < 0)
                r = bus_fail(error, r, "%s: %s", g->path, authz_errno_text(r));
        else
                r = sd_bus_reply_method_return(msg, "u", (uint32_t) r);
        charge_result_done(&res);
        return r;
}

static int method_get_client(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        BusManager *m = userdata;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        int64_t rss[_MEM_RSS_MAX];
        uint32_t pid_arg;
        BusPeer *p;
        pid_t pid;
        int exact, r;

        r = sd_bus_message_read(msg, "ub", &pid_arg, &exact);
        if (r < 0)
                return r;
        GET_PEER(m, msg, p, error);

        pid = pid_arg ? (pid_t) pid_arg : p->pid;
        if (!authz_may_read_client(dispatch_read_access(m->dispatch), p->uid, p->pid, pid))
                return bus_fail(error, -EPERM, AUTHZ_MSG_CLIENT_DENIED, (int) pid);
        r = client_read_rss(m->core, pid, exact, rss);
        if (r < 0)
                return bus_fail(error, r, AUTHZ_MSG_NO_CLIENT, (int) pid);

        r = sd_bus_message_new_method_return(msg, &reply);
        if (r < 0)
                return r;
        r = sd_bus_message_open_container(reply, 'a', "{st}");
        if (r < 0)
                return r;
        for (MemRss i = 0; i < _MEM_RSS_MAX; i++) {
                r = sd_bus_message_append(reply, "{st}", mem_rss_to_string(i), (uint64_t) rss[i]);
                if (r < 0)
                        return r;
        }
        r = sd_bus_message_close_container(reply);
        if (r < 0)
                return r;
        return sd_bus_send(NULL, reply, NULL);
}

/*
 * Every method is UNPRIVILEGED: without the flag sd-bus would demand
 * CAP_SYS_ADMIN of the caller (a round trip to ask), while who may do
 * what is authz.c's decision, on the uid, as on the socket.
 */
static const sd_bus_vtable manager_vtable[] = {
        SD_BUS_VTABLE_START(0),
        SD_BUS_METHOD_WITH_ARGS("CreateGroup",
                                SD_BUS_ARGS("s", path, "a{st}", limits, "u", owner),
                                SD_BUS_RESULT("o", group),
                                method_create_group, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("RemoveGroup",
                                SD_BUS_ARGS("s", path),
                                SD_BUS_NO_RESULT,
                                method_remove_group, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("SetLimits",
                                SD_BUS_ARGS("s", path, "a{st}", limits, "b", force),
                                SD_BUS_NO_RESULT,
                                method_set_limits, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("Charge",
                                SD_BUS_ARGS("s", path, "t", bytes, "s", stat, "b", keep),
                                SD_BUS_RESULT("t", throttle_usec, "t", over_high),
                                method_charge, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("Uncharge",
                                SD_BUS_ARGS("s", path, "t", bytes, "s", stat, "b", keep),
                                SD_BUS_NO_RESULT,
                                method_uncharge, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("Attach",
                                SD_BUS_ARGS("s", path),
                                SD_BUS_NO_RESULT,
                                method_attach, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("GetGroup",
                                SD_BUS_ARGS("s", path),
                                SD_BUS_RESULT("o", group),
                                method_get_group, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("ListGroups",
                                SD_BUS_ARGS("s", path, "b", recursive),
                                SD_BUS_RESULT("a(so)", groups),
                                method_list_groups, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("MoveProcess",
                                SD_BUS_ARGS("u", pid, "s", path),
                                SD_BUS_RESULT("u", sessions),
                                method_move_process, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("GetClient",
                                SD_BUS_ARGS("u", pid, "b", exact),
                                SD_BUS_RESULT("a{st}", rss),
                                method_get_client, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("ResetPeak",
                                SD_BUS_ARGS("s", path),
                                SD_BUS_NO_RESULT,
                                method_reset_peak, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("ImportCgroups",
                                SD_BUS_ARGS("s", from, "s", under),
                                SD_BUS_RESULT("u", created, "u", updated, "u", unchanged),
                                method_import_cgroups, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_SIGNAL_WITH_ARGS("Event",
                                SD_BUS_ARGS("s", path, "s", name, "t", count),
                                0),
        SD_BUS_VTABLE_END
};

int bus_manager_register(BusManager *m) {
        int r;

        r = sd_bus_add_object_vtable(m->bus, NULL, BUS_MANAGER_PATH, BUS_MANAGER_INTERFACE, manager_vtable,
                                     m);
        if (r < 0)
                return r;
        r = sd_bus_add_object_manager(m->bus, NULL, BUS_MANAGER_PATH);
        if (r < 0)
                return r;
        return bus_group_register(m);
}

void bus_manager_done(BusManager *m) {
        bus_peers_free(m);
}
