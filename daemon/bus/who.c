/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * GetInfo and ListSessions on the bus: decode, one service call, encode,
 * as every method. Each counts as one request served, as the manager's
 * other methods do (bus_manager_caller()).
 */

#include "bus/error.h"
#include "bus/manager.h"
#include "bus/peer.h"
#include "bus/who.h"
#include "macro.h"

int bus_method_get_info(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        BusManager *m = userdata;
        ServiceInfo info;
        BusPeer *p;
        Refusal rf;
        int r;

        r = bus_manager_caller(m, msg, &p, error);
        if (r < 0)
                return r;
        refusal_init(&rf);
        r = service_get_info(m->service, p->peer, &info, &rf);
        if (r < 0)
                return bus_refusal(error, &rf);
        return sd_bus_reply_method_return(msg, "sttuusstt", info.version, info.uptime_usec, info.requests,
                                          info.sessions, info.groups, info.state, info.state_cause,
                                          info.saves, info.last_save_usec);
}

/* ServiceSessionFn of ListSessions: one (uussstt) into the reply @userdata. */
static int listed_session(void *userdata, const ServiceSession *s) {
        return sd_bus_message_append(userdata, "(uussstt)", (uint32_t) s->pid, (uint32_t) s->uid, s->comm,
                                     s->transport, s->group, s->bytes, s->stock);
}

int bus_method_list_sessions(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        BusManager *m = userdata;
        const char *path;
        BusPeer *p;
        Refusal rf;
        int r;

        r = sd_bus_message_read(msg, "s", &path);
        if (r >= 0)
                r = bus_manager_caller(m, msg, &p, error);
        if (r >= 0)
                r = sd_bus_message_new_method_return(msg, &reply);
        if (r >= 0)
                r = sd_bus_message_open_container(reply, 'a', "(uussstt)");
        if (r < 0)
                return r;
        refusal_init(&rf);
        r = service_list_sessions(m->service, p->peer, path, listed_session, reply, &rf);
        if (r < 0)
                return bus_refusal(error, &rf);
        r = sd_bus_message_close_container(reply);
        if (r < 0)
                return r;
        return sd_bus_send(NULL, reply, NULL);
}
