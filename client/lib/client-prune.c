/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Pruning the daemon's mirrors of vanished kernel cgroups over the
 * socket: one PruneMirrors request; a bus handle goes to its table. The
 * list owns copies of its strings, so it outlives the reply.
 */

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "client-error.h"
#include "client-prune.h"
#include "client-reconnect.h"
#include "client.h"
#include "macro.h"

memacct_pruned *client_pruned_new(void) {
        return calloc(1, sizeof(memacct_pruned));
}

int client_pruned_append(memacct_pruned *l, const char *group, const char *why) {
        char *g, *w = NULL;

        if (l->n == l->cap) {
                size_t cap = MAX(l->cap * 2, (size_t) 8);
                memacct_pruned_group *v = realloc(l->groups, cap * sizeof(*v));

                if (!v)
                        return -ENOMEM;
                l->groups = v;
                l->cap = cap;
        }
        g = strdup(group ? group : "");
        if (!g || (why && !(w = strdup(why)))) {
                free(g);
                return -ENOMEM;
        }
        l->groups[l->n++] = (memacct_pruned_group) { .group = g, .why = w };
        return 0;
}

/* The PruneReply of @resp onto @l: the removed, then the kept. */
static int pruned_read(const Response *resp, memacct_pruned *l) {
        const Memacct__V1__PruneReply *pr =
                resp->result_case == MEMACCT__V1__RESPONSE__RESULT_PRUNED ? resp->pruned : NULL;
        int r = 0;

        if (!pr)
                return 0;
        for (size_t i = 0; i < pr->n_removed && r >= 0; i++)
                r = client_pruned_append(l, pr->removed[i], NULL);
        /* A kept group always has a reason: "" stands in for a missing one. */
        for (size_t i = 0; i < pr->n_kept && r >= 0; i++)
                r = client_pruned_append(l, pr->kept[i]->group, pr->kept[i]->why ? pr->kept[i]->why : "");
        return r;
}

_public_ int memacct_prune_mirrors(memacct *m, memacct_pruned **ret) {
        Memacct__V1__PruneMirrors prune = MEMACCT__V1__PRUNE_MIRRORS__INIT;
        Request req = MEMACCT__V1__REQUEST__INIT;
        memacct_pruned *l = NULL;
        Response *resp = NULL;
        int r;

        if (!m)
                return client_error(m, -EINVAL, "invalid argument", NULL);
        if (m->bus) {
                if (ret)
                        return m->bus->prune_mirrors(m, ret);
                r = m->bus->prune_mirrors(m, &l);
                memacct_pruned_free(l);
                return r;
        }
        req.op_case = MEMACCT__V1__REQUEST__OP_PRUNE_MIRRORS;
        req.prune_mirrors = &prune;
        r = client_call(m, &req, true, &resp);
        if (r < 0)
                return r;
        if (ret) {
                l = client_pruned_new();
                r = l ? pruned_read(resp, l) : -ENOMEM;
        }
        memacct__v1__response__free_unpacked(resp, NULL);
        if (r < 0) {
                memacct_pruned_free(l);
                return client_error(m, r, NULL, NULL);
        }
        if (ret)
                *ret = l;
        return 0;
}

_public_ size_t memacct_pruned_size(const memacct_pruned *l) {
        return l ? l->n : 0;
}

_public_ const memacct_pruned_group *memacct_pruned_get(const memacct_pruned *l, size_t i) {
        return l && i < l->n ? &l->groups[i] : NULL;
}

_public_ memacct_pruned *memacct_pruned_free(memacct_pruned *l) {
        if (!l)
                return NULL;
        for (size_t i = 0; i < l->n; i++) {
                free((char *) l->groups[i].group);
                free((char *) l->groups[i].why);
        }
        free(l->groups);
        free(l);
        return NULL;
}
