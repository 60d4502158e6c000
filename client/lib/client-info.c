/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * memacct_get_info() and memacct_list_sessions() on the socket (GetInfo,
 * ListSessions), and what both transports fill: the info is one block,
 * its strings after the struct, so that one free() releases it and later
 * versions can append members; a session list owns copies of its strings.
 */

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "client-error.h"
#include "client-info.h"
#include "client-reconnect.h"
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

struct memacct_sessions {
        memacct_session_info *v;
        size_t n, cap;
};

memacct_sessions *client_sessions_new(void) {
        return calloc(1, sizeof(memacct_sessions));
}

int client_sessions_append(memacct_sessions *l, const memacct_session_info *s) {
        memacct_session_info e = *s;

        if (l->n == l->cap) {
                size_t cap = MAX(l->cap * 2, (size_t) 8);
                memacct_session_info *v = realloc(l->v, cap * sizeof(*v));

                if (!v)
                        return -ENOMEM;
                l->v = v;
                l->cap = cap;
        }
        e.comm = strdup(s->comm ? s->comm : "");
        e.transport = strdup(s->transport ? s->transport : "");
        e.group = strdup(s->group ? s->group : "");
        if (!e.comm || !e.transport || !e.group) {
                free((char *) e.comm);
                free((char *) e.transport);
                free((char *) e.group);
                return -ENOMEM;
        }
        l->v[l->n++] = e;
        return 0;
}

_public_ size_t memacct_sessions_size(const memacct_sessions *l) {
        return l ? l->n : 0;
}

_public_ const memacct_session_info *memacct_sessions_get(const memacct_sessions *l, size_t i) {
        return l && i < l->n ? &l->v[i] : NULL;
}

_public_ memacct_sessions *memacct_sessions_free(memacct_sessions *l) {
        if (!l)
                return NULL;
        for (size_t i = 0; i < l->n; i++) {
                free((char *) l->v[i].comm);
                free((char *) l->v[i].transport);
                free((char *) l->v[i].group);
        }
        free(l->v);
        free(l);
        return NULL;
}

_public_ int memacct_list_sessions(memacct *m, const char *path, memacct_sessions **ret) {
        Memacct__V1__ListSessions ls = MEMACCT__V1__LIST_SESSIONS__INIT;
        Request req = MEMACCT__V1__REQUEST__INIT;
        Response *resp = NULL;
        memacct_sessions *l;
        int r;

        if (!m || !ret)
                return client_error(m, -EINVAL, "invalid argument", NULL);
        if (m->bus)
                return m->bus->list_sessions(m, path, ret);
        ls.path = (char *) (path ? path : "");
        req.op_case = MEMACCT__V1__REQUEST__OP_LIST_SESSIONS;
        req.list_sessions = &ls;
        r = client_call(m, &req, true, &resp);
        if (r < 0)
                return r;
        l = client_sessions_new();
        if (!l)
                r = -ENOMEM;
        if (l && resp->result_case == MEMACCT__V1__RESPONSE__RESULT_SESSIONS)
                for (size_t i = 0; i < resp->sessions->n_sessions && r >= 0; i++) {
                        const Memacct__V1__Session *se = resp->sessions->sessions[i];
                        memacct_session_info s = {
                                .pid = se->pid,
                                .uid = se->uid,
                                .comm = se->comm,
                                .transport = se->transport,
                                .group = se->group,
                                .bytes = se->bytes,
                                .stock = se->stock,
                                .reclaimable = se->reclaimable,
                                .reclaim_asked = se->reclaim_asked,
                                .reclaim_released = se->reclaim_released,
                                .reclaim_late = se->reclaim_late,
                        };

                        r = client_sessions_append(l, &s);
                }
        memacct__v1__response__free_unpacked(resp, NULL);
        if (r < 0) {
                memacct_sessions_free(l);
                return client_error(m, r, NULL, NULL);
        }
        *ret = l;
        return 0;
}
