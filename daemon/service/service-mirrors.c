/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Pruning the kernel cgroup mirror: the mirrors of cgroups that no longer
 * exist are removed (cgroup_sync_prune() decides which may go), as a
 * durable change of any number of groups, on request of root.
 */

#include "service/cgroup-sync.h"
#include "service/log.h"
#include "service/service-internal.h"

int service_prune_mirrors(Service *svc, Peer *p, ServicePruneFn fn, void *userdata, Refusal *rf) {
        int r;

        if (!authz_may_import(p->creds.uid))
                return refusal_set(rf, -EPERM, "only root prunes cgroup mirrors");
        if (!svc->cgroup)
                return refusal_set(rf, -ENOENT, "no kernel cgroup mirror in this daemon");
        r = service_admit(svc, rf);
        if (r < 0)
                return r;
        /* The same function type: the reports go straight through. */
        r = cgroup_sync_prune(svc->cgroup, fn, userdata);
        if (r > 0) {
                service_committed(svc, p, NULL);
                log_info("Pruned %d mirror%s of vanished kernel cgroups", r, r == 1 ? "" : "s");
        }
        return r;
}
