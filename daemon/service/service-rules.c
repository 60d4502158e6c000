/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The operations on placement rules (placement.h): add, remove, list,
 * and the look-up an Attach of "" or "auto" makes.
 *
 * Policy decided here: only root adds or removes rules (a rule steers
 * the sessions of every uid's processes in that cgroup); a rule names a
 * group that exists when it is added; a caller lists the rules whose
 * group it may read, as it lists groups; a rule is on disk before its OK.
 */

#include <string.h>

#include "core/group.h"
#include "service/log.h"
#include "service/placement.h"
#include "service/service-internal.h"

static int check_cgroup(const char *cgroup, Refusal *rf) {
        int r;

        if (!cgroup || !*cgroup)
                return refusal_set(rf, -EINVAL, "no kernel cgroup given");
        r = placement_cgroup_check(cgroup);
        if (r == -ENAMETOOLONG)
                return refusal_set(rf, r, "kernel cgroup path longer than %d bytes", PLACEMENT_CGROUP_MAX);
        if (r < 0)
                return refusal_set(rf, r,
                                   "'%s' is not a kernel cgroup path (absolute, no empty, '.' or '..' part, "
                                   "no trailing '/')", cgroup);
        return 0;
}

int service_add_rule(Service *svc, Peer *p, const char *cgroup, const char *group, Refusal *rf) {
        _cleanup_(group_unrefp) MemGroup *g = NULL;
        int r;

        if (!authz_may_place(p->creds.uid))
                return refusal_set(rf, -EPERM, "only root adds placement rules");
        r = check_cgroup(cgroup, rf);
        if (r < 0)
                return r;
        if (!group || !*group)
                return refusal_set(rf, -EINVAL, "no group given");
        r = service_lookup(svc, group, &g, rf);
        if (r < 0)
                return r;
        r = placement_add(svc->placement, cgroup, group);
        if (r == -ENOSPC)
                return refusal_set(rf, r, "too many placement rules (%d)", PLACEMENT_RULES_MAX);
        if (r < 0)
                return refusal_set(rf, r, "cannot save the placement rules: %s", refusal_errno_text(r));
        log_info("Placement rule %s -> %s %s", cgroup, group, r > 0 ? "replaced" : "added");
        return 0;
}

int service_remove_rule(Service *svc, Peer *p, const char *cgroup, Refusal *rf) {
        int r;

        if (!authz_may_place(p->creds.uid))
                return refusal_set(rf, -EPERM, "only root removes placement rules");
        r = check_cgroup(cgroup, rf);
        if (r < 0)
                return r;
        r = placement_remove(svc->placement, cgroup);
        if (r == -ENOENT)
                return refusal_set(rf, r, "no placement rule for kernel cgroup %s", cgroup);
        if (r < 0)
                return refusal_set(rf, r, "cannot save the placement rules: %s", refusal_errno_text(r));
        log_info("Placement rule of %s removed", cgroup);
        return 0;
}

typedef struct ListCtx {
        Service *svc;
        Peer *p;
        ServiceRuleFn fn;
        void *userdata;
} ListCtx;

static int list_one(void *userdata, const char *cgroup, const char *group) {
        _cleanup_(group_unrefp) MemGroup *g = NULL;
        ListCtx *c = userdata;
        Refusal ignored;

        /* Root sees every rule, one whose group is gone too; anyone else
         * the rules of groups it may read. */
        if (!c->p || c->p->creds.uid != 0) {
                refusal_init(&ignored);
                if (service_lookup(c->svc, group, &g, &ignored) < 0)
                        return 0;
                if (c->p ? !authz_may_read(service_read_access(c->svc), c->p->creds.uid, g)
                         : service_read_access(c->svc) != READ_ACCESS_ALL)
                        return 0;
        }
        return c->fn(c->userdata, cgroup, group);
}

int service_list_rules(Service *svc, Peer *p, ServiceRuleFn fn, void *userdata, Refusal *rf) {
        ListCtx c = { .svc = svc, .p = p, .fn = fn, .userdata = userdata };
        int r;

        r = placement_list(svc->placement, list_one, &c);
        if (r == -ENOSPC)
                return refusal_set(rf, r, "the list of placement rules is too large for one reply");
        if (r < 0)
                return refusal_set(rf, r, "cannot list the placement rules: %s", refusal_errno_text(r));
        return 0;
}

int service_place_by_rule(Service *svc, Peer *p, char *buf, size_t size, Refusal *rf) {
        char cg[PLACEMENT_CGROUP_MAX + 1], rule[PLACEMENT_CGROUP_MAX + 1];
        int r;

        if (placement_count(svc->placement) == 0)
                return 0;
        r = placement_proc_cgroup(p->creds.pid, cg, sizeof(cg));
        if (r == -ESRCH)
                return refusal_set(rf, r, "pid %d: no such process to place by its cgroup", (int) p->creds.pid);
        if (r < 0)
                return 0; /* no cgroup line: no rule can cover it; the mirror decides */
        r = placement_match(svc->placement, cg, buf, size, rule, sizeof(rule));
        if (r == -ENOENT)
                return 0;
        if (r < 0)
                return refusal_set(rf, r, "cgroup %s: its rule's group does not fit", cg);
        log_debug("pid %d in cgroup %s placed in %s by the rule of %s", (int) p->creds.pid, cg, buf, rule);
        return 1;
}
