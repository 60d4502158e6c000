/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * PruneMirrors over D-Bus: removed (as), then kept (a(ss)), onto one
 * list. A reply that does not match the method's signature is -EBADMSG.
 */

#include <errno.h>

#include "client-bus-conn.h"
#include "client-error.h"
#include "client-prune.h"

/* The as and a(ss) of a PruneMirrors reply onto @l. */
static int read_pruned(sd_bus_message *reply, memacct_pruned *l) {
        const char *group, *why;
        int r;

        r = sd_bus_message_enter_container(reply, 'a', "s");
        while (r >= 0 && (r = sd_bus_message_read(reply, "s", &group)) > 0)
                r = client_pruned_append(l, group, NULL);
        if (r >= 0)
                r = sd_bus_message_exit_container(reply);
        if (r >= 0)
                r = sd_bus_message_enter_container(reply, 'a', "(ss)");
        while (r >= 0 && (r = sd_bus_message_read(reply, "(ss)", &group, &why)) > 0)
                r = client_pruned_append(l, group, why);
        if (r >= 0)
                r = sd_bus_message_exit_container(reply);
        return r;
}

int bus_prune_mirrors(memacct *m, memacct_pruned **ret) {
        sd_bus_message *reply = NULL;
        memacct_pruned *l = client_pruned_new();
        int r;

        if (!l)
                return client_error(m, -ENOMEM, NULL, NULL);
        bus_lock(m);
        r = bus_manager_call_locked(m, "PruneMirrors", &reply, "");
        if (r >= 0 && read_pruned(reply, l) < 0)
                r = client_error(m, -EBADMSG, "malformed PruneMirrors reply", NULL);
        sd_bus_message_unref(reply);
        bus_unlock(m);
        if (r < 0) {
                memacct_pruned_free(l);
                return r;
        }
        *ret = l;
        return 0;
}
