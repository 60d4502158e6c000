/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Confinement: which group a peer is confined to (authz.h), decided once,
 * when the peer arrives, from the kernel: its pid as SO_PEERCRED or the
 * bus daemon gave it, that pid's memory cgroup as /proc/PID/cgroup shows
 * it to us, and the confining placement rules. Neither the peer's uid nor
 * anything it sends takes part, so a container's root is confined like
 * any other process of the container, user namespace or not.
 *
 * Pid namespaces: SO_PEERCRED and the bus daemon translate the pid into
 * the receiver's namespace, so the pid is the host's (the daemon's), and
 * /proc is the daemon's: the cgroup read is the process's true one, as
 * seen from the daemon's cgroup namespace, the one the rules are written
 * in. A process cannot leave its container's cgroup for a host cgroup
 * without write access to the host's cgroup tree, which a container does
 * not have.
 *
 * Fail closed: with a confining rule in force, a peer whose cgroup cannot
 * be read (it exited at once, /proc is hidden) is confined to nothing and
 * may do nothing. Without any confining rule nothing is read at all.
 *
 * Bounds: a confined peer counts its sessions, connections,
 * subscriptions and the groups it creates against its group's account,
 * never against its uid (a container's root is no host root, and one
 * container does not use up another's room): 2^31 + a hash of the
 * group's path, stable across restarts so that the groups it owns are
 * counted again after one.
 */

#include <string.h>

#include "base/log.h"
#include "cgroup/mirror.h"
#include "cgroup/placement.h"
#include "service/service-internal.h"

#define ACCOUNT_CONFINED 0x80000000u

uid_t service_account(const char *group) {
        uint32_t h = 2166136261u; /* FNV-1a */
        uid_t a;

        for (const char *c = group; *c; c++)
                h = (h ^ (uint8_t) *c) * 16777619u;
        a = ACCOUNT_CONFINED | (h & ~ACCOUNT_CONFINED);
        return a == (uid_t) -1 ? (uid_t) -2 : a; /* (uid_t) -1 is no uid */
}

int service_confinement(Service *svc, pid_t pid, char *ret_group, size_t size) {
        char cg[PLACEMENT_CGROUP_MAX + 1];
        int r;

        if (placement_confining(svc->placement) == 0)
                return -ENOENT;
        r = svc->cgroup ? cgroup_mirror_pid_cgroup(svc->cgroup, pid, cg, sizeof(cg))
                        : placement_proc_cgroup(pid, cg, sizeof(cg));
        if (r == -ENOENT)
                return -ENOENT; /* in no memory cgroup: no rule can cover it */
        if (r < 0)
                return r;
        return placement_confinement(svc->placement, cg, ret_group, size);
}

bool service_is_root(Service *svc, pid_t pid, uid_t uid) {
        char scope[MEM_PATH_MAX + 1];

        return uid == 0 && service_confinement(svc, pid, scope, sizeof(scope)) == -ENOENT;
}

void service_identify(Service *svc, PeerCreds *creds, char *ret_scope, size_t size, bool *ret_confined) {
        int r = service_confinement(svc, creds->pid, ret_scope, size);

        *ret_confined = r != -ENOENT;
        if (r == -ENOENT) {
                creds->account = creds->uid;
                return;
        }
        if (r < 0) {
                log_debug_errno(r, "pid %d: cannot read its cgroup (%m), with confining rules in force: "
                                "confined to nothing", (int) creds->pid);
                ret_scope[0] = 0;
        }
        creds->account = service_account(ret_scope);
}

void service_confine(Service *svc, Peer *p, const char *scope) {
        Refusal ignored;

        p->who.confined = true;
        refusal_init(&ignored);
        /* A group that is gone confines to nothing: who.scope stays NULL. */
        if (scope[0] && service_lookup(svc, scope, &p->who.scope, &ignored) < 0)
                p->who.scope = NULL;
        log_debug("Peer pid %d, uid %u: confined to %s", (int) p->creds.pid, (unsigned) p->creds.uid,
                  p->who.scope ? scope : "nothing");
}
