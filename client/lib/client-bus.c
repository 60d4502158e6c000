/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The D-Bus transport of libmemacct: the same handle, the same calls, over
 * org.memacct1 (org.memacct1(5)) instead of the socket.
 *
 * A bus handle is a memacct whose bus member points at the table below;
 * the public functions check their arguments and hand over to it at their
 * entry, so the socket code never links against sd-bus and its paths gain
 * one test of a field set once at connect time. The stock's fast path
 * gains nothing: a bus handle never has a page, so its stocked calls fall
 * to the slow path, which refuses them.
 *
 * The session is the bus peer: it ends when the handle leaves the bus
 * (memacct_close(), or the process ending however it ends), and the daemon
 * then releases its charges. There is no reconnection: if the daemon
 * restarts, the session and its charges are gone and the calls that follow
 * fail or act on a fresh session.
 */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "client-bus-conn.h"
#include "client-bus-events.h"
#include "client-bus-groups.h"
#include "client-bus-info.h"
#include "client-bus-ops.h"
#include "client-bus-reclaim.h"
#include "client-bus-regions.h"
#include "client-error.h"
#include "client-prune.h"
#include "macro.h"

static void bus_close(memacct *m) {
        BusConn *c = m->bus_conn;

        if (!c)
                return;
        bus_events_done(c);
        bus_reclaim_close(c);
        /* Leaving the bus ends the session: the daemon releases its charges. */
        c->bus = sd_bus_flush_close_unref(c->bus);
        if (c->wake_fd >= 0)
                close(c->wake_fd);
        free(c);
        m->bus_conn = NULL;
}

static const BusOps bus_ops = {
        .create_group = bus_create_group,
        .create_transient_group = bus_create_transient_group,
        .remove_group = bus_remove_group,
        .set_owner = bus_set_owner,
        .get_info = bus_get_info,
        .list_sessions = bus_list_sessions,
        .set_limits = bus_set_limits,
        .get_group = bus_get_group,
        .list_groups = bus_list_groups,
        .charge = bus_charge,
        .uncharge = bus_uncharge,
        .attach = bus_attach,
        .move = bus_move,
        .get_client = bus_get_client,
        .reset_peak = bus_reset_peak,
        .import_cgroups = bus_import_cgroups,
        .subscribe = bus_subscribe,
        .rule_add = bus_rule_add,
        .rule_remove = bus_rule_remove,
        .rule_list = bus_rule_list,
        .prune_mirrors = bus_prune_mirrors,
        .next_event = bus_next_event,
        .event_requester = bus_event_requester,
        .add_region = bus_add_region,
        .remove_region = bus_remove_region,
        .list_regions = bus_list_regions,
        .charge_region = bus_charge_region,
        .uncharge_region = bus_uncharge_region,
        .set_region_limits = bus_set_region_limits,
        .reset_region_peak = bus_reset_region_peak,
        .transfer = bus_transfer,
        .evict_valuable = bus_evict_valuable,
        .subscribe_region = bus_subscribe_region,
        .event_region = bus_event_region,
        .set_reclaimable = bus_set_reclaimable,
        .reclaim_done = bus_reclaim_done,
        .fd = bus_fd,
        .process = bus_process,
        .reclaim = bus_reclaim,
        .close = bus_close,
};

/* The bus @address names; see memacct_connect_bus(). */
static int bus_open(const char *address, sd_bus **ret) {
        sd_bus *bus = NULL;
        int r;

        /* The system daemon for everybody, as memacct_connect(NULL): the
         * policy lets every uid call it (org.memacct1.conf). */
        if (!address)
                address = "system";
        if (strcmp(address, "system") == 0)
                return sd_bus_open_system(ret);
        if (strcmp(address, "user") == 0)
                return sd_bus_open_user(ret);
        if (!*address)
                return -EINVAL;
        r = sd_bus_new(&bus);
        if (r < 0)
                return r;
        r = sd_bus_set_address(bus, address);
        /* Without it no Hello is sent: we would have no unique name, and
         * the daemon no peer to hang the session on. */
        if (r >= 0)
                r = sd_bus_set_bus_client(bus, 1);
        if (r >= 0)
                r = sd_bus_start(bus);
        if (r < 0) {
                sd_bus_unref(bus);
                return r;
        }
        *ret = bus;
        return 0;
}

/* Reach the daemon (activating it if the bus can): Peer.Ping. Lock held. */
static int ping_locked(memacct *m) {
        sd_bus_error e = SD_BUS_ERROR_NULL;
        sd_bus_message *reply = NULL;
        const char *owner;
        char *server = NULL;
        int r;

        r = sd_bus_call_method(m->bus_conn->bus, BUS_NAME, BUS_PATH, "org.freedesktop.DBus.Peer",
                               "Ping", &e, &reply, NULL);
        if (r < 0) {
                if (sd_bus_error_has_names(&e, SD_BUS_ERROR_SERVICE_UNKNOWN,
                                           SD_BUS_ERROR_NAME_HAS_NO_OWNER))
                        r = client_error(m, -ECONNREFUSED, e.message, NULL);
                else
                        r = bus_fail(m, &e, r);
                sd_bus_error_free(&e);
                return r;
        }
        owner = sd_bus_message_get_sender(reply);
        if (asprintf(&server, BUS_NAME " %s", owner ? owner : "") < 0)
                server = NULL;
        sd_bus_message_unref(reply);
        if (!server)
                return client_error(m, -ENOMEM, NULL, NULL);
        free(m->server);
        m->server = server;
        return 0;
}

_public_ int memacct_connect_bus(const char *address, memacct **ret) {
        BusConn *c;
        memacct *m;
        int r;

        if (!ret)
                return -EINVAL;
        m = client_new();
        if (!m)
                return -ENOMEM;
        c = calloc(1, sizeof(*c));
        if (!c) {
                memacct_close(m);
                return -ENOMEM;
        }
        c->wake_fd = c->notify_fd = c->poll_fd = -1;
        m->bus_conn = c;
        m->bus = &bus_ops;
        /* The session is the bus peer: this process, as the bus saw it connect. */
        m->pid = getpid();
        c->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        if (c->wake_fd < 0) {
                r = -errno;
                memacct_close(m);
                return r;
        }

        pthread_mutex_lock(&m->lock);
        r = bus_open(address, &c->bus);
        if (r < 0)
                r = client_error(m, r, "cannot connect to the bus", NULL);
        else
                r = ping_locked(m);
        pthread_mutex_unlock(&m->lock);
        if (r >= 0 && (r = client_attach_from_env(m)) < 0) {
                memacct_close(m);
                client_error_connect_failed();
                return r;
        }
        if (r < 0) {
                memacct_close(m);
                return r;
        }
        *ret = m;
        return 0;
}
