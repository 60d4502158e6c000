/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Placement rules over D-Bus: AddPlacementRule(WithFlags), RemovePlacementRule,
 * ListAllPlacementRules (the explicit rules and the mirrors) on the
 * manager, ListPlacementRules (explicit only) from a daemon that predates
 * it. A reply that does not match the method's signature is -EBADMSG.
 */

#include <errno.h>
#include <stdbool.h>

#include "client-bus-conn.h"
#include "client-bus-ops.h"
#include "client-error.h"
#include "client-rules.h"

int bus_rule_add(memacct *m, const char *cgroup, const char *group, unsigned flags) {
        int r;

        bus_lock(m);
        /* Without flags the method every daemon has. */
        if (flags)
                r = bus_manager_call_locked(m, "AddPlacementRuleWithFlags", NULL, "sst", cgroup, group,
                                            (uint64_t) flags);
        else
                r = bus_manager_call_locked(m, "AddPlacementRule", NULL, "ss", cgroup, group);
        bus_unlock(m);
        return r < 0 ? r : 0;
}

int bus_rule_remove(memacct *m, const char *cgroup) {
        int r;

        bus_lock(m);
        r = bus_manager_call_locked(m, "RemovePlacementRule", NULL, "s", cgroup);
        bus_unlock(m);
        return r < 0 ? r : 0;
}

/* The a(ssb) of a ListAllPlacementRules reply, or with !@all the a(ss) of a ListPlacementRules one, onto @l. */
static int read_rules(sd_bus_message *reply, bool all, memacct_rules *l) {
        const char *cgroup, *group;
        int r, mirror = 0;

        r = sd_bus_message_enter_container(reply, 'a', all ? "(ssb)" : "(ss)");
        while (r >= 0 && (r = all ? sd_bus_message_read(reply, "(ssb)", &cgroup, &group, &mirror)
                                  : sd_bus_message_read(reply, "(ss)", &cgroup, &group)) > 0)
                r = client_rule_list_append(l, cgroup, group, mirror, false);
        if (r >= 0)
                r = sd_bus_message_exit_container(reply);
        return r;
}

int bus_rule_list(memacct *m, memacct_rules **ret) {
        sd_bus_message *reply = NULL;
        memacct_rules *l = client_rule_list_new();
        bool all = true;
        int r;

        if (!l)
                return client_error(m, -ENOMEM, NULL, NULL);
        bus_lock(m);
        r = bus_manager_call_locked(m, "ListAllPlacementRules", &reply, "");
        if (r == -EOPNOTSUPP) {
                /* An older daemon: its explicit rules, which are all it has. */
                all = false;
                r = bus_manager_call_locked(m, "ListPlacementRules", &reply, "");
        }
        if (r >= 0 && read_rules(reply, all, l) < 0)
                r = client_error(m, -EBADMSG, "malformed placement rules reply", NULL);
        sd_bus_message_unref(reply);
        bus_unlock(m);
        if (r < 0) {
                memacct_rules_free(l);
                return r;
        }
        *ret = l;
        return 0;
}
