/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * GetInfo and ListSessions over D-Bus: the same answers as on the
 * socket, read from the methods' out arguments into what client-info.c
 * makes.
 */

#include <errno.h>

#include "client-bus-conn.h"
#include "client-bus-info.h"
#include "client-error.h"
#include "client-info.h"

int bus_get_info(memacct *m, memacct_server_info **ret) {
        sd_bus_message *reply = NULL;
        const char *version, *state, *cause;
        uint64_t uptime, requests, saves, last;
        uint32_t sessions, groups;
        memacct_server_info *info = NULL;
        int r;

        bus_lock(m);
        r = bus_manager_call_locked(m, "GetInfo", &reply, "");
        if (r >= 0 && sd_bus_message_read(reply, "sttuusstt", &version, &uptime, &requests, &sessions, &groups,
                                          &state, &cause, &saves, &last) < 0)
                r = client_error(m, -EBADMSG, "malformed GetInfo reply", NULL);
        if (r >= 0) {
                info = client_server_info_new(version, state, cause);
                if (!info)
                        r = client_error(m, -ENOMEM, NULL, NULL);
        }
        if (info) {
                info->uptime_usec = uptime;
                info->requests = requests;
                info->sessions = sessions;
                info->groups = groups;
                info->saves = saves;
                info->last_save_usec = last;
        }
        sd_bus_message_unref(reply);
        bus_unlock(m);
        if (r >= 0)
                *ret = info;
        return r;
}

int bus_list_sessions(memacct *m, const char *path, memacct_sessions **ret) {
        sd_bus_message *reply = NULL;
        memacct_sessions *l = client_sessions_new();
        int r;

        if (!l)
                return client_error(m, -ENOMEM, NULL, NULL);
        bus_lock(m);
        r = bus_manager_call_locked(m, "ListSessions", &reply, "s", path ? path : "");
        if (r >= 0)
                r = sd_bus_message_enter_container(reply, 'a', "(uussstt)");
        while (r >= 0) {
                memacct_session_info s = {}; /* the bus says nothing of reclaim */

                r = sd_bus_message_read(reply, "(uussstt)", &s.pid, &s.uid, &s.comm, &s.transport, &s.group,
                                        &s.bytes, &s.stock);
                if (r <= 0)
                        break;
                r = client_sessions_append(l, &s);
        }
        if (r == -ENOMEM)
                r = client_error(m, r, NULL, NULL);
        else if (r < 0 && reply)
                r = client_error(m, -EBADMSG, "malformed ListSessions reply", NULL);
        sd_bus_message_unref(reply);
        bus_unlock(m);
        if (r < 0) {
                memacct_sessions_free(l);
                return r;
        }
        *ret = l;
        return 0;
}
