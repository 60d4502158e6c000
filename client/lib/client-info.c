/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * memacct_get_info() on the socket (GetInfo), and the struct both
 * transports fill: one block, the strings after the struct, so that one
 * free() releases it and later versions can append members.
 */

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "client-error.h"
#include "client-info.h"
#include "client-session.h"
#include "macro.h"

memacct_server_info *client_server_info_new(const char *version, const char *state, const char *cause) {
        const char *s[3] = { version ? version : "", state ? state : "", cause ? cause : "" };
        size_t len[3], total = sizeof(memacct_server_info);
        memacct_server_info *info;
        char *p;

        for (size_t i = 0; i < 3; i++)
                total += (len[i] = strlen(s[i])) + 1;
        info = calloc(1, total);
        if (!info)
                return NULL;
        p = (char *) (info + 1);
        for (size_t i = 0; i < 3; i++) {
                memcpy(p, s[i], len[i] + 1);
                if (i == 0)
                        info->version = p;
                else if (i == 1)
                        info->state = p;
                else
                        info->state_cause = p;
                p += len[i] + 1;
        }
        return info;
}

_public_ memacct_server_info *memacct_server_info_free(memacct_server_info *info) {
        free(info);
        return NULL;
}

_public_ int memacct_get_info(memacct *m, memacct_server_info **ret) {
        Memacct__V1__GetInfo get = MEMACCT__V1__GET_INFO__INIT;
        Request req = MEMACCT__V1__REQUEST__INIT;
        Response *resp = NULL;
        const Memacct__V1__ServerInfo *si;
        memacct_server_info *info;
        int r;

        if (!m || !ret)
                return client_error(m, -EINVAL, "invalid argument", NULL);
        if (m->bus)
                return m->bus->get_info(m, ret);
        req.op_case = MEMACCT__V1__REQUEST__OP_GET_INFO;
        req.get_info = &get;
        r = client_call(m, &req, true, &resp);
        if (r < 0)
                return r;
        if (resp->result_case != MEMACCT__V1__RESPONSE__RESULT_INFO) {
                memacct__v1__response__free_unpacked(resp, NULL);
                return client_error(m, -EBADMSG, "malformed GetInfo reply", NULL);
        }
        si = resp->info;
        info = client_server_info_new(si->version, si->state, si->state_cause);
        if (info) {
                info->uptime_usec = si->uptime_usec;
                info->requests = si->requests;
                info->sessions = si->sessions;
                info->groups = si->groups;
                info->saves = si->saves;
                info->last_save_usec = si->last_save_usec;
        }
        memacct__v1__response__free_unpacked(resp, NULL);
        if (!info)
                return client_error(m, -ENOMEM, NULL, NULL);
        *ret = info;
        return 0;
}
