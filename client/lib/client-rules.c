/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Placement rules (memacct(7), PLACEMENT RULES) over the socket: add,
 * remove and list, one request each; a bus handle goes to its table. The
 * list owns copies of its strings, so it outlives the reply.
 */

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "client-error.h"
#include "client-reconnect.h"
#include "client-rules.h"
#include "client.h"
#include "macro.h"

memacct_rules *client_rule_list_new(void) {
        return calloc(1, sizeof(memacct_rules));
}

int client_rule_list_append(memacct_rules *l, const char *cgroup, const char *group, bool mirror, bool confine) {
        char *c, *g;

        if (l->n == l->cap) {
                size_t cap = MAX(l->cap * 2, (size_t) 8);
                memacct_rule *v = realloc(l->rules, cap * sizeof(*v));

                if (!v)
                        return -ENOMEM;
                l->rules = v;
                l->cap = cap;
        }
        c = strdup(cgroup ? cgroup : "");
        g = strdup(group ? group : "");
        if (!c || !g) {
                free(c);
                free(g);
                return -ENOMEM;
        }
        l->rules[l->n++] = (memacct_rule) { .cgroup = c, .group = g, .mirror = mirror, .confine = confine };
        return 0;
}

_public_ int memacct_rule_add(memacct *m, const char *cgroup, const char *group) {
        return memacct_rule_add_flags(m, cgroup, group, 0);
}

_public_ int memacct_rule_add_flags(memacct *m, const char *cgroup, const char *group, unsigned flags) {
        Memacct__V1__AddRule add = MEMACCT__V1__ADD_RULE__INIT;
        Request req = MEMACCT__V1__REQUEST__INIT;

        if (!m || !cgroup || !group || (flags & ~MEMACCT_RULE_CONFINE))
                return client_error(m, -EINVAL, "invalid argument", NULL);
        if (m->bus)
                return m->bus->rule_add(m, cgroup, group, flags);
        add.cgroup = (char *) cgroup;
        add.group = (char *) group;
        add.has_confine = (flags & MEMACCT_RULE_CONFINE) != 0;
        add.confine = add.has_confine;
        req.op_case = MEMACCT__V1__REQUEST__OP_ADD_RULE;
        req.add_rule = &add;
        return client_call(m, &req, true, NULL);
}

_public_ int memacct_rule_remove(memacct *m, const char *cgroup) {
        Memacct__V1__RemoveRule rm = MEMACCT__V1__REMOVE_RULE__INIT;
        Request req = MEMACCT__V1__REQUEST__INIT;

        if (!m || !cgroup)
                return client_error(m, -EINVAL, "invalid argument", NULL);
        if (m->bus)
                return m->bus->rule_remove(m, cgroup);
        rm.cgroup = (char *) cgroup;
        req.op_case = MEMACCT__V1__REQUEST__OP_REMOVE_RULE;
        req.remove_rule = &rm;
        return client_call(m, &req, true, NULL);
}

_public_ int memacct_rule_list(memacct *m, memacct_rules **ret) {
        Memacct__V1__ListRules ls = MEMACCT__V1__LIST_RULES__INIT;
        Request req = MEMACCT__V1__REQUEST__INIT;
        memacct_rules *l;
        Response *resp = NULL;
        int r;

        if (!m || !ret)
                return client_error(m, -EINVAL, "invalid argument", NULL);
        if (m->bus)
                return m->bus->rule_list(m, ret);
        /* Mirrors too: a daemon that predates them ignores the field. */
        ls.has_with_mirrors = ls.with_mirrors = true;
        req.op_case = MEMACCT__V1__REQUEST__OP_LIST_RULES;
        req.list_rules = &ls;
        r = client_call(m, &req, true, &resp);
        if (r < 0)
                return r;
        l = client_rule_list_new();
        if (!l)
                r = -ENOMEM;
        if (l && resp->result_case == MEMACCT__V1__RESPONSE__RESULT_RULES)
                for (size_t i = 0; i < resp->rules->n_rules && r >= 0; i++)
                        r = client_rule_list_append(l, resp->rules->rules[i]->cgroup,
                                                    resp->rules->rules[i]->group,
                                                    resp->rules->rules[i]->mirror,
                                                    resp->rules->rules[i]->confine);
        memacct__v1__response__free_unpacked(resp, NULL);
        if (r < 0) {
                memacct_rules_free(l);
                return client_error(m, r, NULL, NULL);
        }
        *ret = l;
        return 0;
}

_public_ size_t memacct_rules_size(const memacct_rules *l) {
        return l ? l->n : 0;
}

_public_ const memacct_rule *memacct_rules_get(const memacct_rules *l, size_t i) {
        return l && i < l->n ? &l->rules[i] : NULL;
}

_public_ memacct_rules *memacct_rules_free(memacct_rules *l) {
        if (!l)
                return NULL;
        for (size_t i = 0; i < l->n; i++) {
                free((char *) l->rules[i].cgroup);
                free((char *) l->rules[i].group);
        }
        free(l->rules);
        free(l);
        return NULL;
}
