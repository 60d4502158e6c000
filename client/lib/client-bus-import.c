/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * memacct_import_cgroups_report() over D-Bus (client-bus-import.h).
 */

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "client-bus-conn.h"
#include "client-bus-import.h"
#include "client-error.h"
#include "client.h"

/* One a{st} of limits into @ret. */
static int read_bus_limits(sd_bus_message *reply, memacct_limits *ret) {
        const char *name;
        uint64_t v;
        int r;

        *ret = (memacct_limits) {};
        r = sd_bus_message_enter_container(reply, 'a', "{st}");
        while (r >= 0 && (r = sd_bus_message_read(reply, "{st}", &name, &v)) > 0) {
                if (strcmp(name, "max") == 0)
                        ret->set |= MEMACCT_LIMIT_MAX, ret->max = v;
                else if (strcmp(name, "high") == 0)
                        ret->set |= MEMACCT_LIMIT_HIGH, ret->high = v;
                else if (strcmp(name, "low") == 0)
                        ret->set |= MEMACCT_LIMIT_LOW, ret->low = v;
                else if (strcmp(name, "min") == 0)
                        ret->set |= MEMACCT_LIMIT_MIN, ret->min = v;
        }
        return r < 0 ? r : sd_bus_message_exit_container(reply);
}

/* The reply of ImportCgroupsKeepingLimits into @r. Return: 0, < 0. */
static int read_bus_report(sd_bus_message *reply, memacct_import_report *r) {
        const char *group;
        int k;

        k = sd_bus_message_enter_container(reply, 'a', "(sa{st}a{st})");
        while (k >= 0 && (k = sd_bus_message_enter_container(reply, 'r', "sa{st}a{st}")) > 0) {
                memacct_kept_limits *v = realloc(r->v, (r->n + 1) * sizeof(*v));
                char *g;

                if (!v)
                        return -ENOMEM;
                r->v = v;
                k = sd_bus_message_read(reply, "s", &group);
                if (k < 0)
                        return k;
                g = strdup(group);
                if (!g)
                        return -ENOMEM;
                v[r->n] = (memacct_kept_limits) { .group = g };
                r->n++;
                k = read_bus_limits(reply, &v[r->n - 1].ours);
                if (k >= 0)
                        k = read_bus_limits(reply, &v[r->n - 1].kernel);
                if (k >= 0)
                        k = sd_bus_message_exit_container(reply);
        }
        if (k >= 0)
                k = sd_bus_message_exit_container(reply);
        if (k >= 0)
                k = sd_bus_message_read(reply, "uuuuu", &r->counts.created, &r->counts.updated,
                                        &r->counts.unchanged, &r->kept, &r->kernel_limits);
        return k < 0 ? k : 0;
}

int client_bus_import_report(memacct *m, const char *from, const char *under, unsigned flags,
                             memacct_import_report *r) {
        sd_bus_message *reply = NULL;
        int k;

        bus_lock(m);
        k = bus_manager_call_locked(m, "ImportCgroupsKeepingLimits", &reply, "ssb", from ? from : "",
                                    under ? under : "", (int) !!(flags & MEMACCT_IMPORT_RESET_LIMITS));
        if (k >= 0 && read_bus_report(reply, r) < 0)
                k = client_error(m, -EBADMSG, "malformed ImportCgroupsKeepingLimits reply", NULL);
        sd_bus_message_unref(reply);
        bus_unlock(m);
        return k < 0 ? k : 0;
}

