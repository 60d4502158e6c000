/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * GetInfo on the bus: the daemon at a glance (version, uptime, requests,
 * sessions, groups, the state file's health), decoded, one service call,
 * encoded as every method (call.h). It counts as one request served, as
 * every method does.
 */

#include "bus/call.h"
#include "bus/info.h"

static int get_info(BusCall *c) {
        ServiceInfo info;
        Peer *peer;
        int r;

        r = bus_call_caller(c, &peer);
        if (r < 0)
                return r;
        r = service_get_info(c->svc, peer, &info, &c->rf);
        if (r < 0)
                return bus_call_refused(c);
        return sd_bus_reply_method_return(c->msg, "sttuusstt", info.version, info.uptime_usec, info.requests,
                                          info.sessions, info.groups, info.state, info.state_cause,
                                          info.saves, info.last_save_usec);
}
BUS_METHOD(bus_method_get_info, get_info, SERVICE_OP_GET_INFO)
