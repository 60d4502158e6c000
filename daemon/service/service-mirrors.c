/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Pruning the kernel cgroup mirror: the mirrors of cgroups that no longer
 * exist are removed (cgroup_mirror_prune() decides which may go), as a
 * durable change of any number of groups, on request of root, or on each
 * sample when [cgroup] prune is on. Both go through the same admit and
 * commit, so an automatic removal is saved as a requested one is.
 */

#include "cgroup/mirror.h"
#include "base/log.h"
#include "service/message-ids.h"
#include "service/service-internal.h"

int service_prune_mirrors(Service *svc, Peer *p, ServicePruneFn fn, void *userdata, Refusal *rf) {
        int r;

        if (!authz_may_import(&p->who))
                return refusal_set(rf, -EPERM, "only root prunes cgroup mirrors");
        if (!svc->cgroup)
                return refusal_set(rf, -ENOENT, "no kernel cgroup mirror in this daemon");
        r = service_admit(svc, rf);
        if (r < 0)
                return r;
        /* The same function type: the reports go straight through. */
        r = cgroup_mirror_prune(svc->cgroup, fn, userdata);
        if (r > 0) {
                service_committed(svc, p, NULL);
                service_audit(p, MESSAGE_MIRRORS_PRUNED, NULL, "Pruned %d mirror%s of vanished kernel cgroups", r, r == 1 ? "" : "s");
        }
        return r;
}

void service_set_prune_on_sample(Service *svc, bool on) {
        /* Relaxed: a flag read alone, at the next sample; nothing is ordered by it. */
        atomic_store_explicit(&svc->prune_on_sample, on, memory_order_relaxed);
}

void service_sample_mirrors(void *userdata) {
        Service *svc = userdata;
        Refusal rf;
        int r;

        if (!svc->cgroup)
                return;
        cgroup_mirror_sample(svc->cgroup);
        /* The sample already opened every mirror's cgroup: only when one
         * could not be read is there anything to prune, so a host where
         * nothing vanished pays nothing more. */
        if (!atomic_load_explicit(&svc->prune_on_sample, memory_order_relaxed) ||
            cgroup_mirror_unreadable(svc->cgroup) == 0)
                return;
        refusal_init(&rf);
        r = service_prune_mirrors(svc, &svc->daemon_peer, NULL, NULL, &rf);
        /* Nobody waits for the daemon's own changes (service_committed()
         * leaves its shared peer alone): the saver was woken, that is all. */
        if (r < 0)
                log_warning("[cgroup] prune: %s", rf.message);
}
