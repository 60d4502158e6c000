/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * org.memacct1.Manager: the bus's request handlers
 *
 * Each handler reads its arguments, learns who calls (peer.c), makes one
 * service call and replies (the methods about kernel cgroups are in
 * mirrors.c, those about the daemon and its sessions in who.c); a refusal is the service's, as a named D-Bus
 * error (error.c) with the socket's message word for word, so that
 * memacctctl and busctl tell the same story on either transport.
 *
 * What differs from the socket is only what the bus is: a peer's session
 * exists from its first session charge or Attach, not from a connect;
 * events are the Event signal, not a subscription; there is no stock and
 * no force on Charge. Every change, whichever transport made it, is
 * signalled (signals.c); a change made here has its signals sent before
 * its reply.
 *
 * The OK of a durable change (a group, limits, a kept charge) is sent
 * once the change is saved: the reply is built at once and held (held.c;
 * bus_manager_release() sends it after the save), and the thread goes on
 * serving other calls.
 */

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "bus/error.h"
#include "bus/group-limits.h"
#include "bus/manager.h"
#include "bus/mirrors.h"
#include "bus/names.h"
#include "bus/peer.h"
#include "bus/who.h"
#include "macro.h"
#include "base/log.h"
#include "base/selfstats.h"
#include "status.h"

int bus_manager_reply_send(BusManager *m, BusPeer *p, sd_bus_message *call, sd_bus_message *reply) {
        uint64_t seq = service_peer_take_wait(p->peer);

        return bus_held_send(&m->held, m->service, seq, call, reply);
}

int bus_manager_reply_return(BusManager *m, BusPeer *p, sd_bus_message *call, const char *types, ...) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        va_list ap;
        int r;

        r = sd_bus_message_new_method_return(call, &reply);
        if (r < 0)
                return r;
        if (types) {
                va_start(ap, types);
                r = sd_bus_message_appendv(reply, types, ap);
                va_end(ap);
                if (r < 0)
                        return r;
        }
        return bus_manager_reply_send(m, p, call, reply);
}

void bus_manager_release(BusManager *m) {
        bus_held_release(&m->held, m->service);
}

bool bus_manager_may_broadcast(BusManager *m) {
        return !m->service || service_reads_open(m->service);
}

uint64_t bus_manager_flush(BusManager *m) {
        if (!m->signals)
                return 0;
        return bus_signals_flush(m->signals, m->bus, bus_manager_may_broadcast(m));
}

/* A service result as the reply: the refusal, or (after the signals of
 * the change it made) an empty return. */
static int reply(BusManager *m, BusPeer *p, sd_bus_message *msg, int r, const Refusal *rf, sd_bus_error *error) {
        if (r < 0)
                return bus_refusal(error, rf);
        (void) bus_manager_flush(m);
        return bus_manager_reply_return(m, p, msg, NULL);
}

int bus_manager_caller(BusManager *m, sd_bus_message *msg, BusPeer **ret, sd_bus_error *error) {
        service_request_served(m->service);
        return bus_peer_get(m, msg, ret, error);
}

/* The peer that sent @msg into @p, or return the error (already set). */
#define GET_PEER(m, msg, p, error)                                          \
        do {                                                                \
                int _r_ = bus_manager_caller((m), (msg), &(p), (error));    \
                                                                            \
                if (_r_ < 0)                                                \
                        return _r_;                                         \
        } while (0)

int bus_manager_path_call(BusManager *m, sd_bus_message *msg, BusPathOp op, sd_bus_error *error) {
        const char *path;
        BusPeer *p;
        Refusal rf;
        int r;

        r = sd_bus_message_read(msg, "s", &path);
        if (r < 0)
                return r;
        GET_PEER(m, msg, p, error);

        refusal_init(&rf);
        r = op(m->service, p->peer, path, &rf);
        return reply(m, p, msg, r, &rf, error);
}

/* ---- groups ---- */

/* CreateGroup and CreateTransientGroup: the same arguments, the same reply. */
static int create_group(sd_bus_message *msg, void *userdata, sd_bus_error *error, bool transient) {
        BusManager *m = userdata;
        _cleanup_free_ char *object = NULL;
        MemLimits limits;
        const char *path;
        uint32_t owner;
        BusPeer *p;
        Refusal rf;
        int r;

        r = sd_bus_message_read(msg, "s", &path);
        if (r >= 0)
                r = bus_read_limits(msg, &limits, error);
        if (r >= 0)
                r = sd_bus_message_read(msg, "u", &owner);
        if (r < 0)
                return r;
        GET_PEER(m, msg, p, error);

        refusal_init(&rf);
        r = (transient ? service_create_transient_group : service_create_group)(
                m->service, p->peer, path, &limits, owner != BUS_NO_OWNER, (uid_t) owner, &rf);
        if (r < 0)
                return bus_refusal(error, &rf);
        r = bus_group_object_path(path, &object);
        if (r < 0)
                return r;
        (void) bus_manager_flush(m);
        return bus_manager_reply_return(m, p, msg, "o", object);
}

static int method_create_group(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        return create_group(msg, userdata, error, false);
}

static int method_create_transient_group(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        return create_group(msg, userdata, error, true);
}

static int method_remove_group(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        return bus_manager_path_call(userdata, msg, service_remove_group, error);
}

static int method_set_limits(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        BusManager *m = userdata;
        MemLimits limits;
        const char *path;
        BusPeer *p;
        Refusal rf;
        int force, r;

        r = sd_bus_message_read(msg, "s", &path);
        if (r >= 0)
                r = bus_read_limits(msg, &limits, error);
        if (r >= 0)
                r = sd_bus_message_read(msg, "b", &force);
        if (r < 0)
                return r;
        GET_PEER(m, msg, p, error);

        refusal_init(&rf);
        r = service_set_limits(m->service, p->peer, path, &limits, force, &rf);
        return reply(m, p, msg, r, &rf, error);
}

static int method_set_owner(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        BusManager *m = userdata;
        const char *path;
        uint32_t owner;
        BusPeer *p;
        Refusal rf;
        int r;

        r = sd_bus_message_read(msg, "su", &path, &owner);
        if (r < 0)
                return r;
        GET_PEER(m, msg, p, error);

        refusal_init(&rf);
        r = service_set_owner(m->service, p->peer, path, (uid_t) owner, &rf);
        return reply(m, p, msg, r, &rf, error);
}

/* ServiceGroupFn of GetGroup: the object path of the one group. */
static int got_group(void *userdata, const char *path, const MemGroupInfo *info) {
        (void) info;
        return bus_group_object_path(path, userdata);
}

static int method_get_group(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        BusManager *m = userdata;
        _cleanup_free_ char *object = NULL;
        const char *path;
        BusPeer *p;
        Refusal rf;
        int r;

        r = sd_bus_message_read(msg, "s", &path);
        if (r < 0)
                return r;
        GET_PEER(m, msg, p, error);

        refusal_init(&rf);
        r = service_get_group(m->service, p->peer, path, NULL, SERVICE_READ_PATHS, got_group, &object, &rf);
        if (r < 0)
                return bus_refusal(error, &rf);
        return sd_bus_reply_method_return(msg, "o", object);
}

typedef struct ListReply {
        sd_bus_message *reply;
        size_t bytes;
} ListReply;

/* ServiceGroupFn of ListGroups: one (so) more, within the reply bound. */
static int listed_group(void *userdata, const char *path, const MemGroupInfo *info) {
        ListReply *l = userdata;
        _cleanup_free_ char *object = NULL;
        int r;

        (void) info;
        r = bus_group_object_path(path, &object);
        if (r < 0)
                return r;
        l->bytes += strlen(path) + strlen(object) + 16;
        if (l->bytes > SERVICE_LIST_REPLY_MAX)
                return -ENOSPC;
        r = sd_bus_message_append(l->reply, "(so)", path, object);
        return r < 0 ? r : 0; /* > 0 would end a page */
}

/* ServiceGroupFn of ListGroupsPage: as listed_group(), but a full reply ends the page (> 0). */
static int paged_group(void *userdata, const char *path, const MemGroupInfo *info) {
        ListReply *l = userdata;
        size_t before = l->bytes;
        int r = listed_group(userdata, path, info);

        if (r == -ENOSPC && before > 0)
                return 1;
        return r;
}

/*
 * ListGroups, and with @paged ListGroupsPage: ListGroups a page at a
 * time, with the socket's cursor: the groups after @after (the previous
 * page's next; "": from the start), at most @limit (0: as many as fit a
 * reply), and where the list stands. A page costs what it lists
 * (service_list_groups_page()).
 */
static int list_groups(sd_bus_message *msg, BusManager *m, bool paged, sd_bus_error *error) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        ServiceListPage page = {};
        const char *path;
        int recursive, r;
        ListReply l = {};
        unsigned flags;
        BusPeer *p;
        Refusal rf;

        if (paged)
                r = sd_bus_message_read(msg, "sbsu", &path, &recursive, &page.after, &page.limit);
        else
                r = sd_bus_message_read(msg, "sb", &path, &recursive);
        if (r < 0)
                return r;
        GET_PEER(m, msg, p, error);

        r = sd_bus_message_new_method_return(msg, &reply);
        if (r >= 0)
                r = sd_bus_message_open_container(reply, 'a', "(so)");
        if (r < 0)
                return r;
        l.reply = reply;
        refusal_init(&rf);
        flags = SERVICE_READ_PATHS | (recursive ? SERVICE_READ_RECURSIVE : 0);
        if (paged)
                r = service_list_groups_page(m->service, p->peer, path, flags, &page, paged_group, &l, &rf);
        else
                r = service_list_groups(m->service, p->peer, path, flags, listed_group, &l, &rf);
        if (r < 0)
                return bus_refusal(error, &rf);
        r = sd_bus_message_close_container(reply);
        if (r >= 0 && paged)
                r = sd_bus_message_append(reply, "sbb", page.more ? page.next : "", page.more, page.restarted);
        if (r < 0)
                return r;
        return sd_bus_send(NULL, reply, NULL);
}

static int method_list_groups(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        return list_groups(msg, userdata, false, error);
}

static int method_list_groups_page(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        return list_groups(msg, userdata, true, error);
}

static int method_reset_peak(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        return bus_manager_path_call(userdata, msg, service_reset_peak, error);
}

/* ---- charges and sessions ---- */

/* A Charge or Uncharge call's arguments: path, bytes, stat item, keep. */
static int read_charge(sd_bus_message *msg, ServiceCharge *ret) {
        int keep, r;

        *ret = (ServiceCharge) { .has_bytes = true };
        r = sd_bus_message_read(msg, "stsb", &ret->path, &ret->bytes, &ret->stat, &keep);
        ret->keep = keep;
        return r;
}

static int method_charge(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        BusManager *m = userdata;
        ServiceChargeResult res;
        ServiceCharge c;
        BusPeer *p;
        Refusal rf;
        int r;

        r = read_charge(msg, &c);
        if (r < 0)
                return r;
        GET_PEER(m, msg, p, error);

        refusal_init(&rf);
        r = service_charge(m->service, p->peer, &c, &res, &rf);
        if (r < 0)
                return bus_refusal(error, &rf);
        return bus_manager_reply_return(m, p, msg, "tt", res.throttle_usec, res.over_high);
}

static int method_uncharge(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        BusManager *m = userdata;
        ServiceCharge c;
        BusPeer *p;
        Refusal rf;
        int r;

        r = read_charge(msg, &c);
        if (r < 0)
                return r;
        GET_PEER(m, msg, p, error);

        refusal_init(&rf);
        r = service_uncharge(m->service, p->peer, &c, &rf);
        return r < 0 ? bus_refusal(error, &rf) : bus_manager_reply_return(m, p, msg, NULL);
}

static int method_attach(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        BusManager *m = userdata;
        char group[MEM_PATH_MAX + 1];
        const char *path;
        BusPeer *p;
        Refusal rf;
        int r;

        r = sd_bus_message_read(msg, "s", &path);
        if (r < 0)
                return r;
        GET_PEER(m, msg, p, error);

        refusal_init(&rf);
        r = service_attach_to(m->service, p->peer, path, group, sizeof(group), &rf);
        if (r < 0)
                return bus_refusal(error, &rf);
        (void) bus_manager_flush(m);
        return bus_manager_reply_return(m, p, msg, "s", group);
}

static int method_move_process(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        BusManager *m = userdata;
        const char *path;
        uint32_t pid;
        BusPeer *p;
        Refusal rf;
        int r;

        r = sd_bus_message_read(msg, "us", &pid, &path);
        if (r < 0)
                return r;
        GET_PEER(m, msg, p, error);

        refusal_init(&rf);
        r = service_move(m->service, p->peer, (pid_t) pid, path, &rf);
        if (r < 0)
                return bus_refusal(error, &rf);
        return sd_bus_reply_method_return(msg, "u", (uint32_t) r);
}

static int method_get_client(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        BusManager *m = userdata;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        uint64_t rss[_MEM_RSS_MAX];
        uint32_t pid_arg;
        int exact, r;
        BusPeer *p;
        Refusal rf;
        pid_t pid;

        r = sd_bus_message_read(msg, "ub", &pid_arg, &exact);
        if (r < 0)
                return r;
        GET_PEER(m, msg, p, error);

        refusal_init(&rf);
        r = service_get_client(m->service, p->peer, (pid_t) pid_arg, exact, &pid, rss, &rf);
        if (r < 0)
                return bus_refusal(error, &rf);
        r = sd_bus_message_new_method_return(msg, &reply);
        if (r >= 0)
                r = sd_bus_message_open_container(reply, 'a', "{st}");
        for (MemRss i = 0; r >= 0 && i < _MEM_RSS_MAX; i++)
                r = sd_bus_message_append(reply, "{st}", mem_rss_to_string(i), rss[i]);
        if (r >= 0)
                r = sd_bus_message_close_container(reply);
        if (r < 0)
                return r;
        return sd_bus_send(NULL, reply, NULL);
}

/* The wire status of a method's end: a refusal's error name maps back through the one table. */
static unsigned method_status(int r, const sd_bus_error *error) {
        if (sd_bus_error_is_set(error)) {
                for (MemStatus s = 1; s < _MEM_STATUS_MAX; s++)
                        if (sd_bus_error_has_name(error, status_to_dbus_error(s)))
                                return s;
                return status_from_errno(r < 0 ? r : -EIO);
        }
        return status_from_errno(r < 0 ? r : 0);
}

/*
 * Each method of the vtable through a counting wrapper: the bus's one
 * dispatch point for the request counts (memacctd_requests_total and its
 * duration), with the status only the handler's return knows. A reply
 * held for a save counts when the handler returns, before the save.
 */
#define COUNTED(handler, op)                                                                   \
        static int handler##_counted(sd_bus_message *msg, void *userdata, sd_bus_error *error) { \
                uint64_t start = selfstats_clock_nsec();                                       \
                int r = handler(msg, userdata, error);                                         \
                                                                                               \
                selfstats_request(SERVICE_TRANSPORT_BUS, op, method_status(r, error), start);  \
                return r;                                                                      \
        }
COUNTED(method_create_group, SERVICE_OP_CREATE_GROUP)
COUNTED(method_create_transient_group, SERVICE_OP_CREATE_TRANSIENT_GROUP)
COUNTED(method_remove_group, SERVICE_OP_REMOVE_GROUP)
COUNTED(method_set_limits, SERVICE_OP_SET_LIMITS)
COUNTED(method_charge, SERVICE_OP_CHARGE)
COUNTED(method_uncharge, SERVICE_OP_UNCHARGE)
COUNTED(method_attach, SERVICE_OP_ATTACH)
COUNTED(method_get_group, SERVICE_OP_GET_GROUP)
COUNTED(method_list_groups, SERVICE_OP_LIST_GROUPS)
COUNTED(method_list_groups_page, SERVICE_OP_LIST_GROUPS)
COUNTED(method_move_process, SERVICE_OP_MOVE)
COUNTED(method_get_client, SERVICE_OP_GET_CLIENT)
COUNTED(method_reset_peak, SERVICE_OP_RESET_PEAK)
COUNTED(bus_method_import_cgroups, SERVICE_OP_IMPORT_CGROUPS)
COUNTED(bus_method_prune_mirrors, SERVICE_OP_PRUNE_MIRRORS)
COUNTED(bus_method_import_cgroups_keeping_limits, SERVICE_OP_IMPORT_CGROUPS)
COUNTED(bus_method_add_placement_rule, SERVICE_OP_ADD_RULE)
COUNTED(bus_method_remove_placement_rule, SERVICE_OP_REMOVE_RULE)
COUNTED(bus_method_list_placement_rules, SERVICE_OP_LIST_RULES)
COUNTED(bus_method_list_all_placement_rules, SERVICE_OP_LIST_RULES)
COUNTED(method_set_owner, SERVICE_OP_SET_OWNER)
COUNTED(bus_method_get_info, SERVICE_OP_GET_INFO)
COUNTED(bus_method_list_sessions, SERVICE_OP_LIST_SESSIONS)
#undef COUNTED

/*
 * The vtable: a documented table. Every method is UNPRIVILEGED: without
 * the flag sd-bus would demand CAP_SYS_ADMIN of the caller (a round trip
 * to ask), while who may do what is the service's decision, on the uid,
 * as on the socket.
 */
static const sd_bus_vtable manager_vtable[] = {
        SD_BUS_VTABLE_START(0),
        SD_BUS_METHOD_WITH_ARGS("CreateGroup",
                                SD_BUS_ARGS("s", path, "a{st}", limits, "u", owner),
                                SD_BUS_RESULT("o", group),
                                method_create_group_counted, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("CreateTransientGroup",
                                SD_BUS_ARGS("s", path, "a{st}", limits, "u", owner),
                                SD_BUS_RESULT("o", group),
                                method_create_transient_group_counted, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("RemoveGroup",
                                SD_BUS_ARGS("s", path),
                                SD_BUS_NO_RESULT,
                                method_remove_group_counted, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("SetLimits",
                                SD_BUS_ARGS("s", path, "a{st}", limits, "b", force),
                                SD_BUS_NO_RESULT,
                                method_set_limits_counted, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("Charge",
                                SD_BUS_ARGS("s", path, "t", bytes, "s", stat, "b", keep),
                                SD_BUS_RESULT("t", throttle_usec, "t", over_high),
                                method_charge_counted, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("Uncharge",
                                SD_BUS_ARGS("s", path, "t", bytes, "s", stat, "b", keep),
                                SD_BUS_NO_RESULT,
                                method_uncharge_counted, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("Attach",
                                SD_BUS_ARGS("s", path),
                                SD_BUS_RESULT("s", group),
                                method_attach_counted, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("GetGroup",
                                SD_BUS_ARGS("s", path),
                                SD_BUS_RESULT("o", group),
                                method_get_group_counted, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("ListGroups",
                                SD_BUS_ARGS("s", path, "b", recursive),
                                SD_BUS_RESULT("a(so)", groups),
                                method_list_groups_counted, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("ListGroupsPage",
                                SD_BUS_ARGS("s", path, "b", recursive, "s", after, "u", limit),
                                SD_BUS_RESULT("a(so)", groups, "s", next, "b", more, "b", restarted),
                                method_list_groups_page_counted, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("MoveProcess",
                                SD_BUS_ARGS("u", pid, "s", path),
                                SD_BUS_RESULT("u", sessions),
                                method_move_process_counted, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("GetClient",
                                SD_BUS_ARGS("u", pid, "b", exact),
                                SD_BUS_RESULT("a{st}", rss),
                                method_get_client_counted, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("ResetPeak",
                                SD_BUS_ARGS("s", path),
                                SD_BUS_NO_RESULT,
                                method_reset_peak_counted, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("ImportCgroups",
                                SD_BUS_ARGS("s", from, "s", under),
                                SD_BUS_RESULT("u", created, "u", updated, "u", unchanged),
                                bus_method_import_cgroups_counted, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("PruneMirrors",
                                SD_BUS_NO_ARGS,
                                SD_BUS_RESULT("as", removed, "a(ss)", kept),
                                bus_method_prune_mirrors_counted, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("ImportCgroupsKeepingLimits",
                                SD_BUS_ARGS("s", from, "s", under, "b", reset_limits),
                                SD_BUS_RESULT("a(sa{st}a{st})", kept_limits, "u", created, "u", updated,
                                              "u", unchanged, "u", kept, "u", kernel_owned),
                                bus_method_import_cgroups_keeping_limits_counted, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("AddPlacementRule",
                                SD_BUS_ARGS("s", cgroup, "s", group),
                                SD_BUS_NO_RESULT,
                                bus_method_add_placement_rule_counted, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("RemovePlacementRule",
                                SD_BUS_ARGS("s", cgroup),
                                SD_BUS_NO_RESULT,
                                bus_method_remove_placement_rule_counted, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("ListPlacementRules",
                                SD_BUS_NO_ARGS,
                                SD_BUS_RESULT("a(ss)", rules),
                                bus_method_list_placement_rules_counted, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("ListAllPlacementRules",
                                SD_BUS_NO_ARGS,
                                SD_BUS_RESULT("a(ssb)", rules),
                                bus_method_list_all_placement_rules_counted, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("SetOwner",
                                SD_BUS_ARGS("s", path, "u", owner),
                                SD_BUS_NO_RESULT,
                                method_set_owner_counted, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("GetInfo",
                                SD_BUS_NO_ARGS,
                                SD_BUS_RESULT("s", version, "t", uptime_usec, "t", requests, "u", sessions,
                                              "u", groups, "s", state, "s", state_cause, "t", saves,
                                              "t", last_save_usec),
                                bus_method_get_info_counted, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("ListSessions",
                                SD_BUS_ARGS("s", path),
                                SD_BUS_RESULT("a(uussstt)", sessions),
                                bus_method_list_sessions_counted, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_SIGNAL_WITH_ARGS("Event",
                                SD_BUS_ARGS("s", path, "s", name, "t", count),
                                0),
        SD_BUS_SIGNAL_WITH_ARGS("EventBy",
                                SD_BUS_ARGS("s", path, "s", name, "t", count, "u", pid, "u", uid),
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
        bus_held_clear(&m->held);
        bus_peers_free(m);
}
