/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Placement rules over D-Bus: AddPlacementRule, RemovePlacementRule,
 * ListPlacementRules on the manager. A reply that does not match the
 * method's signature is -EBADMSG.
 */

#include <errno.h>

#include "client-bus-conn.h"
#include "client-bus-ops.h"
#include "client-error.h"
#include "client-rules.h"

int bus_rule_add(memacct *m, const char *cgroup, const char *group) {
        int r;

        bus_lock(m);
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

/* The a(ss) of a ListPlacementRules reply onto @l. */
static int read_rules(sd_bus_message *reply, memacct_rules *l) {
        const char *cgroup, *group;
        int r;

        r = sd_bus_message_enter_container(reply, 'a', "(ss)");
        while (r >= 0 && (r = sd_bus_message_read(reply, "(ss)", &cgroup, &group)) > 0)
                r = client_rule_list_append(l, cgroup, group);
        if (r >= 0)
                r = sd_bus_message_exit_container(reply);
        return r;
}

int bus_rule_list(memacct *m, memacct_rules **ret) {
        sd_bus_message *reply = NULL;
        memacct_rules *l = client_rule_list_new();
        int r;

        if (!l)
                return client_error(m, -ENOMEM, NULL, NULL);
        bus_lock(m);
        r = bus_manager_call_locked(m, "ListPlacementRules", &reply, "");
        if (r >= 0 && read_rules(reply, l) < 0)
                r = client_error(m, -EBADMSG, "malformed ListPlacementRules reply", NULL);
        sd_bus_message_unref(reply);
        bus_unlock(m);
        if (r < 0) {
                memacct_rules_free(l);
                return r;
        }
        *ret = l;
        return 0;
}
