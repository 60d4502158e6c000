/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Groups and clients on the socket: create, remove, limits, queries,
 * listings, peaks, the cgroup import, moves and client queries. One
 * request, one reply each, converted between the wire's messages and the
 * public header's plain structs, so that no protobuf-c type crosses the
 * library's boundary: every string a returned struct holds is a copy the
 * caller frees with it. A move of this very session is recorded, so that a
 * reconnection attaches where the session now is. On a bus handle each
 * call hands over to the bus once its arguments are checked.
 */

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "client-error.h"
#include "client-groups.h"
#include "client-reconnect.h"
#include "client-regions.h"
#include "macro.h"

static void fill_limits(Memacct__V1__Limits *l, const memacct_limits *limits) {
        if (limits->set & MEMACCT_LIMIT_MAX) {
                l->has_max = true;
                l->max = limits->max;
        }
        if (limits->set & MEMACCT_LIMIT_HIGH) {
                l->has_high = true;
                l->high = limits->high;
        }
        if (limits->set & MEMACCT_LIMIT_LOW) {
                l->has_low = true;
                l->low = limits->low;
        }
        if (limits->set & MEMACCT_LIMIT_MIN) {
                l->has_min = true;
                l->min = limits->min;
        }
}

static int create_group(memacct *m, const char *path, const memacct_limits *limits, uint32_t owner,
                        bool transient) {
        Memacct__V1__CreateGroup create = MEMACCT__V1__CREATE_GROUP__INIT;
        Memacct__V1__Limits l = MEMACCT__V1__LIMITS__INIT;
        Request req = MEMACCT__V1__REQUEST__INIT;

        if (!m || !path)
                return client_error(m, -EINVAL, "invalid argument", NULL);
        if (m->bus)
                return (transient ? m->bus->create_transient_group : m->bus->create_group)(m, path, limits,
                                                                                         owner);
        create.path = (char *) path;
        create.has_transient = transient;
        create.transient = transient;
        if (limits) {
                fill_limits(&l, limits);
                create.limits = &l;
        }
        if (owner != MEMACCT_NO_OWNER) {
                create.has_owner = true;
                create.owner = owner;
        }
        req.op_case = MEMACCT__V1__REQUEST__OP_CREATE_GROUP;
        req.create_group = &create;
        return client_call(m, &req, false, NULL);
}

_public_ int memacct_create_group(memacct *m, const char *path, const memacct_limits *limits,
                                  uint32_t owner) {
        return create_group(m, path, limits, owner, false);
}

_public_ int memacct_create_transient_group(memacct *m, const char *path, const memacct_limits *limits,
                                            uint32_t owner) {
        return create_group(m, path, limits, owner, true);
}

_public_ int memacct_remove_group(memacct *m, const char *path) {
        Memacct__V1__RemoveGroup rm = MEMACCT__V1__REMOVE_GROUP__INIT;
        Request req = MEMACCT__V1__REQUEST__INIT;

        if (!m || !path)
                return client_error(m, -EINVAL, "invalid argument", NULL);
        if (m->bus)
                return m->bus->remove_group(m, path);
        rm.path = (char *) path;
        req.op_case = MEMACCT__V1__REQUEST__OP_REMOVE_GROUP;
        req.remove_group = &rm;
        return client_call(m, &req, false, NULL);
}

_public_ int memacct_set_owner(memacct *m, const char *path, uint32_t owner) {
        Memacct__V1__SetOwner set = MEMACCT__V1__SET_OWNER__INIT;
        Request req = MEMACCT__V1__REQUEST__INIT;

        if (!m || !path || owner == MEMACCT_NO_OWNER)
                return client_error(m, -EINVAL, "invalid argument", NULL);
        if (m->bus)
                return m->bus->set_owner(m, path, owner);
        set.path = (char *) path;
        set.has_owner = true;
        set.owner = owner;
        req.op_case = MEMACCT__V1__REQUEST__OP_SET_OWNER;
        req.set_owner = &set;
        /* Repeatable: setting the same owner twice changes nothing more. */
        return client_call(m, &req, true, NULL);
}

_public_ int memacct_set_limits(memacct *m, const char *path, const memacct_limits *limits,
                                unsigned flags) {
        Memacct__V1__SetLimits set = MEMACCT__V1__SET_LIMITS__INIT;
        Memacct__V1__Limits l = MEMACCT__V1__LIMITS__INIT;
        Request req = MEMACCT__V1__REQUEST__INIT;

        if (!m || !path || !limits || (flags & ~(MEMACCT_FORCE | MEMACCT_NO_WAIT)))
                return client_error(m, -EINVAL, "invalid argument", NULL);
        if (m->bus)
                return m->bus->set_limits(m, path, limits, flags);
        fill_limits(&l, limits);
        set.path = (char *) path;
        set.limits = &l;
        set.has_force = set.force = !!(flags & MEMACCT_FORCE);
        set.has_no_reclaim = set.no_reclaim = !!(flags & MEMACCT_NO_WAIT);
        req.op_case = MEMACCT__V1__REQUEST__OP_SET_LIMITS;
        req.set_limits = &set;
        return client_call(m, &req, true, NULL);
}

void client_group_info_done(memacct_group_info *g) {
        free((char *) g->path);
        for (size_t i = 0; i < g->n_events; i++)
                free((char *) g->events[i].name);
        for (size_t i = 0; i < g->n_events_local; i++)
                free((char *) g->events_local[i].name);
        for (size_t i = 0; i < g->n_stat; i++)
                free((char *) g->stat[i].name);
        free((memacct_counter *) g->events);
        free((memacct_counter *) g->events_local);
        free((memacct_counter *) g->stat);
        client_region_infos_free(g->regions, g->n_regions);
        *g = (memacct_group_info) {};
}

static int counters_copy(Memacct__V1__Counter *const *src, size_t n, const memacct_counter **ret,
                         size_t *ret_n) {
        memacct_counter *c;

        *ret = NULL;
        *ret_n = 0;
        if (n == 0)
                return 0;
        c = calloc(n, sizeof(*c));
        if (!c)
                return -ENOMEM;
        *ret = c;
        for (size_t i = 0; i < n; i++) {
                c[i].name = strdup(src[i]->name ? src[i]->name : "");
                if (!c[i].name)
                        return -ENOMEM;
                c[i].value = src[i]->value;
                *ret_n = i + 1;
        }
        return 0;
}

/* @g's regions from @src's RegionInfo list; every string a copy. Return: 0, -ENOMEM. */
static int regions_copy(memacct_group_info *g, const Memacct__V1__GroupInfo *src) {
        memacct_region_info *v;

        if (src->n_regions == 0)
                return 0;
        v = calloc(src->n_regions, sizeof(*v));
        if (!v)
                return -ENOMEM;
        g->regions = v;
        for (size_t i = 0; i < src->n_regions; i++) {
                const Memacct__V1__RegionInfo *ri = src->regions[i];

                /* Counted before it is filled: a half copy is freed whole. */
                g->n_regions = i + 1;
                v[i] = (memacct_region_info) {
                        .name = strdup(ri->name ? ri->name : ""),
                        .capacity = ri->has_capacity ? ri->capacity : MEMACCT_UNLIMITED,
                        .current = ri->current,
                        .peak = ri->peak,
                        .max = ri->has_max ? ri->max : MEMACCT_UNLIMITED,
                        .high = ri->has_high ? ri->high : MEMACCT_UNLIMITED,
                        .low = ri->low,
                        .min = ri->min,
                        .effective_min = ri->effective_min,
                        .effective_low = ri->effective_low,
                        .failcnt = ri->failcnt,
                        .kept = ri->kept,
                };
                if (!v[i].name || counters_copy(ri->events, ri->n_events, &v[i].events, &v[i].n_events) < 0 ||
                    counters_copy(ri->events_local, ri->n_events_local, &v[i].events_local,
                                  &v[i].n_events_local) < 0)
                        return -ENOMEM;
        }
        return 0;
}

static memacct_pressure pressure_copy(const Memacct__V1__Pressure *p) {
        return (memacct_pressure) {
                .avg10 = p->avg10,
                .avg60 = p->avg60,
                .avg300 = p->avg300,
                .total_usec = p->total,
        };
}

static int group_info_fill(memacct_group_info *g, const Memacct__V1__GroupInfo *src) {
        *g = (memacct_group_info) {
                .path = strdup(src->path ? src->path : ""),
                .current = src->current,
                .peak = src->peak,
                .max = src->has_max ? src->max : MEMACCT_UNLIMITED,
                .high = src->has_high ? src->high : MEMACCT_UNLIMITED,
                .low = src->low,
                .min = src->min,
                .effective_min = src->effective_min,
                .effective_low = src->effective_low,
                .failcnt = src->failcnt,
                .owner = src->has_owner ? src->owner : MEMACCT_NO_OWNER,
                .nr_children = src->nr_children,
                .nr_sessions = src->nr_sessions,
                .kept = src->kept,
                .session = src->session,
                .kernel_current = src->has_kernel_current ? src->kernel_current
                                                          : MEMACCT_NO_KERNEL_CURRENT,
        };
        if (src->pressure_some && src->pressure_full) {
                g->has_pressure = 1;
                g->pressure_some = pressure_copy(src->pressure_some);
                g->pressure_full = pressure_copy(src->pressure_full);
        }
        if (!g->path ||
            counters_copy(src->events, src->n_events, &g->events, &g->n_events) < 0 ||
            counters_copy(src->events_local, src->n_events_local, &g->events_local,
                          &g->n_events_local) < 0 ||
            counters_copy(src->stat, src->n_stat, &g->stat, &g->n_stat) < 0 || regions_copy(g, src) < 0) {
                client_group_info_done(g);
                return -ENOMEM;
        }
        return 0;
}

_public_ int memacct_get_group(memacct *m, const char *path, const char *reclaim_root,
                               unsigned flags, memacct_group_info **ret) {
        Memacct__V1__GetGroup get = MEMACCT__V1__GET_GROUP__INIT;
        Request req = MEMACCT__V1__REQUEST__INIT;
        Response *resp = NULL;
        memacct_group_info *g;
        int r;

        if (!m || !path || !ret || (flags & ~MEMACCT_EXACT))
                return client_error(m, -EINVAL, "invalid argument", NULL);
        if (m->bus)
                return m->bus->get_group(m, path, reclaim_root, flags, ret);
        get.path = (char *) path;
        get.reclaim_root = (char *) reclaim_root;
        get.has_exact = get.exact = !!(flags & MEMACCT_EXACT);
        req.op_case = MEMACCT__V1__REQUEST__OP_GET_GROUP;
        req.get_group = &get;
        r = client_call(m, &req, true, &resp);
        if (r < 0)
                return r;
        if (resp->result_case != MEMACCT__V1__RESPONSE__RESULT_GROUP) {
                memacct__v1__response__free_unpacked(resp, NULL);
                return client_error(m, -EPROTO, "reply without GroupInfo", NULL);
        }
        g = malloc(sizeof(*g));
        r = g ? group_info_fill(g, resp->group) : -ENOMEM;
        memacct__v1__response__free_unpacked(resp, NULL);
        if (r < 0) {
                free(g);
                return client_error(m, r, NULL, NULL);
        }
        *ret = g;
        return 0;
}

_public_ memacct_group_info *memacct_group_info_free(memacct_group_info *info) {
        if (info) {
                client_group_info_done(info);
                free(info);
        }
        return NULL;
}

/* Append the groups of @gl to @l (after dropping what @l holds, when the page restarted the list). */
static int list_append(memacct_group_list *l, const Memacct__V1__GroupList *gl) {
        memacct_group_info *v;

        if (gl->restarted) {
                for (size_t i = 0; i < l->n; i++)
                        client_group_info_done(&l->groups[i]);
                l->n = 0;
        }
        if (gl->n_groups == 0)
                return 0;
        v = realloc(l->groups, (l->n + gl->n_groups) * sizeof(*v));
        if (!v)
                return -ENOMEM;
        l->groups = v;
        for (size_t i = 0; i < gl->n_groups; i++) {
                int r;

                memset(&l->groups[l->n], 0, sizeof(l->groups[l->n]));
                r = group_info_fill(&l->groups[l->n], gl->groups[i]);
                if (r < 0)
                        return r;
                l->n++;
        }
        return 0;
}

/*
 * The daemon answers a list in pages of a frame at most (GroupList.more);
 * this follows the cursor until the end, so that the caller gets the
 * whole list: every group that existed throughout exactly once, in the
 * daemon's order. A page that restarts the list (its cursor's group was
 * removed) drops what came before.
 */
_public_ int memacct_list_groups(memacct *m, const char *path, unsigned flags,
                                 memacct_group_list **ret) {
        Memacct__V1__ListGroups list = MEMACCT__V1__LIST_GROUPS__INIT;
        memacct_group_list *l;
        char *cursor = NULL;
        unsigned restarts = 0;
        int r = 0;

        if (!m || !ret || (flags & ~(MEMACCT_EXACT | MEMACCT_RECURSIVE)))
                return client_error(m, -EINVAL, "invalid argument", NULL);
        if (m->bus)
                return m->bus->list_groups(m, path ? path : "/", flags, ret);
        l = calloc(1, sizeof(*l));
        if (!l)
                return client_error(m, -ENOMEM, NULL, NULL);
        list.path = (char *) (path ? path : "/");
        list.has_recursive = list.recursive = !!(flags & MEMACCT_RECURSIVE);
        list.has_exact = list.exact = !!(flags & MEMACCT_EXACT);
        for (;;) {
                Request req = MEMACCT__V1__REQUEST__INIT;
                Response *resp = NULL;
                const Memacct__V1__GroupList *gl;
                bool more;

                list.after = cursor;
                req.op_case = MEMACCT__V1__REQUEST__OP_LIST_GROUPS;
                req.list_groups = &list;
                r = client_call(m, &req, true, &resp);
                if (r < 0)
                        break; /* client_call() said why */
                gl = resp->result_case == MEMACCT__V1__RESPONSE__RESULT_GROUPS ? resp->groups : NULL;
                r = gl ? list_append(l, gl) : 0;
                if (r >= 0 && gl && gl->restarted && ++restarts > LIST_RESTARTS_MAX)
                        r = -EAGAIN;
                more = r >= 0 && gl && gl->more;
                free(cursor);
                cursor = more ? strdup(gl->next ? gl->next : "") : NULL;
                if (more && !cursor)
                        r = -ENOMEM;
                memacct__v1__response__free_unpacked(resp, NULL);
                if (r < 0) {
                        r = client_error(m, r, r == -EAGAIN ? "the list kept changing under its cursor" : NULL,
                                         NULL);
                        break;
                }
                if (!more) {
                        *ret = l;
                        return 0;
                }
        }
        free(cursor);
        memacct_group_list_free(l);
        return r;
}

_public_ size_t memacct_group_list_size(const memacct_group_list *list) {
        return list ? list->n : 0;
}

_public_ const memacct_group_info *memacct_group_list_get(const memacct_group_list *list,
                                                          size_t i) {
        return list && i < list->n ? &list->groups[i] : NULL;
}

_public_ memacct_group_list *memacct_group_list_free(memacct_group_list *list) {
        if (list) {
                for (size_t i = 0; i < list->n; i++)
                        client_group_info_done(&list->groups[i]);
                free(list->groups);
                free(list);
        }
        return NULL;
}

_public_ int memacct_reset_peak(memacct *m, const char *path) {
        Memacct__V1__ResetPeak reset = MEMACCT__V1__RESET_PEAK__INIT;
        Request req = MEMACCT__V1__REQUEST__INIT;

        if (!m || !path)
                return client_error(m, -EINVAL, "invalid argument", NULL);
        if (m->bus)
                return m->bus->reset_peak(m, path);
        reset.path = (char *) path;
        req.op_case = MEMACCT__V1__REQUEST__OP_RESET_PEAK;
        req.reset_peak = &reset;
        return client_call(m, &req, true, NULL);
}

_public_ int memacct_import_cgroups(memacct *m, const char *from, const char *under,
                                    memacct_import_result *ret) {
        Memacct__V1__ImportCgroups imp = MEMACCT__V1__IMPORT_CGROUPS__INIT;
        Request req = MEMACCT__V1__REQUEST__INIT;
        Response *resp = NULL;
        int r;

        if (!m)
                return client_error(m, -EINVAL, "invalid argument", NULL);
        if (m->bus)
                return m->bus->import_cgroups(m, from, under, ret);
        imp.from_cgroup = (char *) (from ? from : "");
        imp.under = (char *) (under ? under : "");
        req.op_case = MEMACCT__V1__REQUEST__OP_IMPORT_CGROUPS;
        req.import_cgroups = &imp;
        r = client_call(m, &req, true, &resp);
        if (r < 0)
                return r;
        if (ret) {
                const Memacct__V1__ImportReply *ir =
                        resp->result_case == MEMACCT__V1__RESPONSE__RESULT_IMPORT_REPLY
                                ? resp->import_reply
                                : NULL;

                *ret = (memacct_import_result) {
                        .created = ir ? ir->created : 0,
                        .updated = ir ? ir->updated : 0,
                        .unchanged = ir ? ir->unchanged : 0,
                };
        }
        memacct__v1__response__free_unpacked(resp, NULL);
        return 0;
}

_public_ int memacct_move(memacct *m, pid_t pid, const char *path, unsigned *ret_sessions) {
        Memacct__V1__Move move = MEMACCT__V1__MOVE__INIT;
        Request req = MEMACCT__V1__REQUEST__INIT;
        Response *resp = NULL;
        char *copy;
        int r;

        if (!m || !path || pid < 0)
                return client_error(m, -EINVAL, "invalid argument", NULL);
        if (m->bus)
                return m->bus->move(m, pid, path, ret_sessions);
        copy = strdup(path);
        if (!copy)
                return client_error(m, -ENOMEM, NULL, NULL);
        move.has_pid = true;
        move.pid = (uint32_t) pid;
        move.path = (char *) path;
        req.op_case = MEMACCT__V1__REQUEST__OP_MOVE_SESSION;
        req.move_session = &move;
        r = client_call(m, &req, true, &resp);
        if (r < 0) {
                free(copy);
                return r;
        }
        if (ret_sessions)
                *ret_sessions = resp->result_case == MEMACCT__V1__RESPONSE__RESULT_MOVE_REPLY
                                        ? resp->move_reply->sessions
                                        : 0;
        memacct__v1__response__free_unpacked(resp, NULL);

        /* This session moved too: a reconnection attaches there. */
        pthread_mutex_lock(&m->lock);
        if (m->attached && (pid == 0 || pid == m->pid)) {
                free(m->attached);
                m->attached = TAKE_PTR(copy);
        }
        pthread_mutex_unlock(&m->lock);
        free(copy);
        return 0;
}

_public_ int memacct_get_client(memacct *m, pid_t pid, unsigned flags, memacct_client_info *ret) {
        Memacct__V1__GetClient get = MEMACCT__V1__GET_CLIENT__INIT;
        Request req = MEMACCT__V1__REQUEST__INIT;
        Response *resp = NULL;
        int r;

        if (!m || !ret || pid < 0 || (flags & ~MEMACCT_EXACT))
                return client_error(m, -EINVAL, "invalid argument", NULL);
        if (m->bus)
                return m->bus->get_client(m, pid, flags, ret);
        get.has_pid = true;
        get.pid = (uint32_t) pid;
        get.has_exact = get.exact = !!(flags & MEMACCT_EXACT);
        req.op_case = MEMACCT__V1__REQUEST__OP_GET_CLIENT;
        req.get_client = &get;
        r = client_call(m, &req, true, &resp);
        if (r < 0)
                return r;
        if (resp->result_case != MEMACCT__V1__RESPONSE__RESULT_CLIENT) {
                memacct__v1__response__free_unpacked(resp, NULL);
                return client_error(m, -EPROTO, "reply without ClientInfo", NULL);
        }
        *ret = (memacct_client_info) {
                .pid = resp->client->pid,
                .file = resp->client->file,
                .anon = resp->client->anon,
                .swap = resp->client->swap,
                .shmem = resp->client->shmem,
        };
        memacct__v1__response__free_unpacked(resp, NULL);
        return 0;
}
