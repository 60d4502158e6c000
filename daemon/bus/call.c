/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Serving one manager method (call.h): the dispatch point that counts
 * every request, and the steps every handler shares.
 *
 * A refusal is the service's, as a named D-Bus error (error.c) with the
 * socket's message word for word, so that memacctctl and busctl tell the
 * same story on either transport. The OK of a durable change (a group,
 * limits, a kept charge) is sent once the change is saved: the reply is
 * built at once and held (held.c), and the thread goes on serving other
 * calls.
 */

#include <errno.h>
#include <stdarg.h>

#include "bus/call.h"
#include "bus/error.h"
#include "bus/held.h"
#include "bus/manager.h"
#include "bus/park.h"
#include "bus/peer.h"
#include "macro.h"
#include "status.h"

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

int bus_call_serve(BusManager *m, sd_bus_message *msg, sd_bus_error *error, BusMethodFn fn, ServiceOp op) {
        uint64_t start = selfstats_clock_nsec();
        BusCall c = {
                .manager = m,
                .svc = m->service,
                .msg = msg,
                .error = error,
                .fn = fn,
                .op = op,
        };
        int r;

        refusal_init(&c.rf);
        r = fn(&c);
        if (!c.parked)
                selfstats_request(SERVICE_TRANSPORT_BUS, op, method_status(r, error), start);
        return r;
}

int bus_call_dispatch(BusManager *m, sd_bus_message *msg, sd_bus_error *error, BusMethodFn fn, ServiceOp op) {
        int r;

        /* Only while some call waits for reclaim: one test otherwise. */
        if (_unlikely_(m->parked)) {
                r = bus_park_behind(m, msg, fn, op, error);
                if (r != 0)
                        return r;
        }
        return bus_call_serve(m, msg, error, fn, op);
}

int bus_call_caller(BusCall *c, Peer **ret) {
        int r;

        service_request_served(c->svc);
        r = bus_peer_get(c->manager, c->msg, &c->caller, c->error);
        if (r < 0)
                return r;
        *ret = c->caller->peer;
        return 0;
}

int bus_call_refused(BusCall *c) {
        return bus_refusal(c->error, &c->rf);
}

int bus_call_send(BusCall *c, sd_bus_message *reply) {
        uint64_t seq = service_peer_take_wait(c->caller->peer);

        return bus_held_send(&c->manager->held, c->svc, seq, c->msg, reply);
}

int bus_call_return(BusCall *c, const char *types, ...) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        va_list ap;
        int r;

        r = sd_bus_message_new_method_return(c->msg, &reply);
        if (r < 0)
                return r;
        if (types) {
                va_start(ap, types);
                r = sd_bus_message_appendv(reply, types, ap);
                va_end(ap);
                if (r < 0)
                        return r;
        }
        return bus_call_send(c, reply);
}

int bus_call_done(BusCall *c, int r) {
        if (r == -EINPROGRESS)
                return bus_call_park(c);
        if (r < 0)
                return bus_call_refused(c);
        (void) bus_manager_flush(c->manager);
        return bus_call_return(c, NULL);
}

int bus_call_new_array(BusCall *c, const char *contents, sd_bus_message **ret) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        int r;

        r = sd_bus_message_new_method_return(c->msg, &reply);
        if (r >= 0)
                r = sd_bus_message_open_container(reply, 'a', contents);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(reply);
        return 0;
}

int bus_array_send(sd_bus_message *reply) {
        int r = sd_bus_message_close_container(reply);

        return r < 0 ? r : sd_bus_send(NULL, reply, NULL);
}

int bus_call_path(BusCall *c, BusPathOp op) {
        const char *path;
        Peer *peer;
        int r;

        r = sd_bus_message_read(c->msg, "s", &path);
        if (r >= 0)
                r = bus_call_caller(c, &peer);
        if (r < 0)
                return r;
        r = op(c->svc, peer, path, &c->rf);
        return bus_call_done(c, r);
}
