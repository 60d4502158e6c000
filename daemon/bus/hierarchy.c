/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The manager's methods on the group hierarchy: CreateGroup,
 * CreateTransientGroup, RemoveGroup, SetLimits, SetOwner, ResetPeak,
 * GetGroup, ListGroups and ListGroupsPage (org.memacct1(5)). Each is a
 * handler of the one signature (call.h): decode, ask for the caller, one
 * service call, encode. A change has its signals sent before its reply,
 * and its reply is held until the change is saved; a read replies at
 * once.
 */

#include <string.h>

#include "bus/call.h"
#include "bus/group-limits.h"
#include "bus/hierarchy.h"
#include "bus/manager.h"
#include "bus/names.h"
#include "macro.h"

/* A path and an a{st} of limits: the start of CreateGroup's and SetLimits' arguments. */
static int read_path_limits(BusCall *c, const char **ret_path, MemLimits *ret_limits) {
        int r;

        r = sd_bus_message_read(c->msg, "s", ret_path);
        if (r < 0)
                return r;
        return bus_read_limits(c->msg, ret_limits, c->error);
}

/* CreateGroup and CreateTransientGroup: the same arguments, the same reply. */
static int group_create(BusCall *c, bool transient) {
        _cleanup_free_ char *object = NULL;
        MemLimits limits;
        const char *path;
        uint32_t owner;
        Peer *peer;
        int r;

        r = read_path_limits(c, &path, &limits);
        if (r >= 0)
                r = sd_bus_message_read(c->msg, "u", &owner);
        if (r >= 0)
                r = bus_call_caller(c, &peer);
        if (r < 0)
                return r;
        r = (transient ? service_create_transient_group : service_create_group)(
                c->svc, peer, path, &limits, owner != BUS_NO_OWNER, (uid_t) owner, &c->rf);
        if (r < 0)
                return bus_call_refused(c);
        r = bus_group_object_path(path, &object);
        if (r < 0)
                return r;
        (void) bus_manager_flush(c->manager);
        return bus_call_return(c, "o", object);
}

static int create_group(BusCall *c) {
        return group_create(c, false);
}
BUS_METHOD(bus_method_create_group, create_group, SERVICE_OP_CREATE_GROUP)

static int create_transient_group(BusCall *c) {
        return group_create(c, true);
}
BUS_METHOD(bus_method_create_transient_group, create_transient_group, SERVICE_OP_CREATE_TRANSIENT_GROUP)

static int remove_group(BusCall *c) {
        return bus_call_path(c, service_remove_group);
}
BUS_METHOD(bus_method_remove_group, remove_group, SERVICE_OP_REMOVE_GROUP)

static int set_limits(BusCall *c) {
        MemLimits limits;
        const char *path;
        int force, r;
        Peer *peer;

        r = read_path_limits(c, &path, &limits);
        if (r >= 0)
                r = sd_bus_message_read(c->msg, "b", &force);
        if (r >= 0)
                r = bus_call_caller(c, &peer);
        if (r < 0)
                return r;
        r = service_set_limits(c->svc, peer, path, &limits,
                               (force ? SERVICE_LIMITS_FORCE : 0) | SERVICE_LIMITS_WAIT, &c->rf);
        return bus_call_done(c, r);
}
BUS_METHOD(bus_method_set_limits, set_limits, SERVICE_OP_SET_LIMITS)

static int set_owner(BusCall *c) {
        const char *path;
        uint32_t owner;
        Peer *peer;
        int r;

        r = sd_bus_message_read(c->msg, "su", &path, &owner);
        if (r >= 0)
                r = bus_call_caller(c, &peer);
        if (r < 0)
                return r;
        r = service_set_owner(c->svc, peer, path, (uid_t) owner, &c->rf);
        return bus_call_done(c, r);
}
BUS_METHOD(bus_method_set_owner, set_owner, SERVICE_OP_SET_OWNER)

static int reset_peak(BusCall *c) {
        return bus_call_path(c, service_reset_peak);
}
BUS_METHOD(bus_method_reset_peak, reset_peak, SERVICE_OP_RESET_PEAK)

/* ServiceGroupFn of GetGroup: the object path of the one group. */
static int got_group(void *userdata, const char *path, const MemGroupInfo *info) {
        (void) info;
        return bus_group_object_path(path, userdata);
}

static int get_group(BusCall *c) {
        _cleanup_free_ char *object = NULL;
        const char *path;
        Peer *peer;
        int r;

        r = sd_bus_message_read(c->msg, "s", &path);
        if (r >= 0)
                r = bus_call_caller(c, &peer);
        if (r < 0)
                return r;
        r = service_get_group(c->svc, peer, path, NULL, SERVICE_READ_PATHS, got_group, &object, &c->rf);
        if (r < 0)
                return bus_call_refused(c);
        return sd_bus_reply_method_return(c->msg, "o", object);
}
BUS_METHOD(bus_method_get_group, get_group, SERVICE_OP_GET_GROUP)

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
static int groups_list(BusCall *c, bool paged) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        ServiceListPage page = {};
        const char *path;
        int recursive, r;
        ListReply l = {};
        unsigned flags;
        Peer *peer;

        r = paged ? sd_bus_message_read(c->msg, "sbsu", &path, &recursive, &page.after, &page.limit)
                  : sd_bus_message_read(c->msg, "sb", &path, &recursive);
        if (r >= 0)
                r = bus_call_caller(c, &peer);
        if (r >= 0)
                r = bus_call_new_array(c, "(so)", &reply);
        if (r < 0)
                return r;
        l.reply = reply;
        flags = SERVICE_READ_PATHS | (recursive ? SERVICE_READ_RECURSIVE : 0);
        r = paged ? service_list_groups_page(c->svc, peer, path, flags, &page, paged_group, &l, &c->rf)
                  : service_list_groups(c->svc, peer, path, flags, listed_group, &l, &c->rf);
        if (r < 0)
                return bus_call_refused(c);
        if (!paged)
                return bus_array_send(reply);
        r = sd_bus_message_close_container(reply);
        if (r >= 0)
                r = sd_bus_message_append(reply, "sbb", page.more ? page.next : "", page.more, page.restarted);
        return r < 0 ? r : sd_bus_send(NULL, reply, NULL);
}

static int list_groups(BusCall *c) {
        return groups_list(c, false);
}
BUS_METHOD(bus_method_list_groups, list_groups, SERVICE_OP_LIST_GROUPS)

static int list_groups_page(BusCall *c) {
        return groups_list(c, true);
}
BUS_METHOD(bus_method_list_groups_page, list_groups_page, SERVICE_OP_LIST_GROUPS)
