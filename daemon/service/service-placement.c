/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The operations on placement rules (placement.h): add, remove, list,
 * and the one decision of where an Attach of "" or "auto" lands.
 *
 * Two kinds of rule: the explicit ones (placement.c, added by root or the
 * OCI hook) and the kernel cgroup mirrors (mirror.c: each mirror is
 * the rule "its cgroup -> its group"). Listed together, sorted by cgroup;
 * placed by the explicit ones first, then by the mirrors (service_place()).
 *
 * Policy decided here: only root adds or removes rules (a rule steers
 * the sessions of every uid's processes in that cgroup); a rule names a
 * group that exists when it is added; a mirror is removed with its group
 * or by a prune, never as a rule; a caller lists the rules whose group it
 * may read, as it lists groups; a rule is on disk before its OK; one
 * cgroup has one rule (a second is refused, not a replacement: a
 * container's rule must not be re-pointed behind its back); a confining
 * rule (PLACEMENT_CONFINE, authz.h) is never of "/" or of a cgroup that
 * holds the daemon.
 */

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/log.h"
#include "cgroup/mirror.h"
#include "cgroup/placement.h"
#include "core/group.h"
#include "service/message-ids.h"
#include "service/service-internal.h"

_Static_assert(SERVICE_RULE_CONFINE == PLACEMENT_CONFINE, "one set of rule flags");

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

/*
 * A confining rule confines every process in its cgroup: never all of
 * them ("/"), and never the daemon's own cgroup or one above it, which
 * would confine root's tools beside the daemon (its service's cgroup, a
 * shell in the same session) and so lock out its administration.
 */
static int check_confining(const char *cgroup, Refusal *rf) {
        char own[PLACEMENT_CGROUP_MAX + 1];
        int r;

        if (strcmp(cgroup, "/") == 0)
                return refusal_set(rf, -EINVAL, "a confining rule of / would confine every process");
        r = placement_proc_cgroup(getpid(), own, sizeof(own));
        if (r < 0)
                return refusal_set(rf, r, "cannot read memacctd's own cgroup to check the rule: %s",
                                   strerror(-r));
        if (placement_covers(cgroup, own))
                return refusal_set(rf, -EINVAL,
                                   "cgroup %s holds memacctd itself (%s): a confining rule of it would confine "
                                   "the host's own tools", cgroup, own);
        return 0;
}

int service_add_rule(Service *svc, Peer *p, const char *cgroup, const char *group, unsigned flags,
                     Refusal *rf) {
        _cleanup_(group_unrefp) MemGroup *g = NULL;
        char other[MEM_PATH_MAX + 1];
        unsigned other_flags;
        int r;

        if (!authz_may_place(&p->who))
                return refusal_set(rf, -EPERM, "only root adds placement rules");
        r = check_cgroup(cgroup, rf);
        if (r < 0)
                return r;
        if (flags & ~(unsigned) _PLACEMENT_FLAGS_ALL)
                return refusal_set(rf, -EINVAL, "unknown placement rule flags 0x%x", flags);
        if (!group || !*group)
                return refusal_set(rf, -EINVAL, "no group given");
        if (flags & PLACEMENT_CONFINE) {
                r = check_confining(cgroup, rf);
                if (r < 0)
                        return r;
        }
        r = service_lookup(svc, group, &g, rf);
        if (r < 0)
                return r;
        r = placement_add(svc->placement, cgroup, group, flags);
        if (r == -EEXIST && placement_rule_of(svc->placement, cgroup, other, sizeof(other), &other_flags) >= 0)
                return refusal_set(rf, r, "cgroup %s has a placement rule already, to %s%s: one rule per cgroup "
                                   "(remove it first)", cgroup, other,
                                   other_flags & PLACEMENT_CONFINE ? ", confining" : "");
        if (r == -EEXIST)
                return refusal_set(rf, r, "cgroup %s has a placement rule already", cgroup);
        if (r == -ENOSPC)
                return refusal_set(rf, r, "too many placement rules (%d)", PLACEMENT_RULES_MAX);
        if (r < 0)
                return refusal_set(rf, r, "cannot save the placement rules: %s", refusal_errno_text(r));
        if (r == 0)
                service_audit(p, MESSAGE_RULE_ADDED, group, "Placement rule %s -> %s%s added", cgroup, group,
                              flags & PLACEMENT_CONFINE ? " (confining)" : "");
        return 0;
}

int service_remove_rule(Service *svc, Peer *p, const char *cgroup, Refusal *rf) {
        int r;

        if (!authz_may_place(&p->who))
                return refusal_set(rf, -EPERM, "only root removes placement rules");
        r = check_cgroup(cgroup, rf);
        if (r < 0)
                return r;
        r = placement_remove(svc->placement, cgroup);
        if (r == -ENOENT && svc->cgroup) {
                char group[MEM_PATH_MAX + 1];

                /* A mirror is a rule only as long as its group is a
                 * mirror: it goes with the group, not on its own. */
                if (cgroup_mirror_of(svc->cgroup, cgroup, group, sizeof(group)) == 0)
                        return refusal_set(rf, -EBUSY,
                                           "cgroup %s is mirrored by group %s: remove the group, or let prune "
                                           "remove it once the cgroup is gone", cgroup, group);
        }
        if (r == -ENOENT)
                return refusal_set(rf, r, "no placement rule for kernel cgroup %s", cgroup);
        if (r < 0)
                return refusal_set(rf, r, "cannot save the placement rules: %s", refusal_errno_text(r));
        service_audit(p, MESSAGE_RULE_REMOVED, NULL, "Placement rule of %s removed", cgroup);
        return 0;
}

/* One rule of a listing, copied out of its table so that the two tables'
 * locks are never held together nor across the caller's @fn. */
typedef struct Listed {
        char *cgroup, *group;
        bool mirror;
        unsigned flags;
} Listed;

typedef struct ListBuf {
        Listed *v;
        size_t n;
        bool mirror; /* the kind being gathered */
} ListBuf;

/* A PlacementFn, and with @flags 0 the CgroupMirrorFn's work too. */
static int gather(void *userdata, const char *cgroup, const char *group, unsigned flags) {
        ListBuf *b = userdata;
        Listed *v = realloc(b->v, (b->n + 1) * sizeof(*v));

        if (!v)
                return -ENOMEM;
        b->v = v;
        v[b->n] = (Listed) {
                .cgroup = strdup(cgroup),
                .group = strdup(group),
                .mirror = b->mirror,
                .flags = flags,
        };
        if (!v[b->n].cgroup || !v[b->n].group) {
                free(v[b->n].cgroup);
                free(v[b->n].group);
                return -ENOMEM;
        }
        b->n++;
        return 0;
}

static int gather_mirror(void *userdata, const char *cgroup, const char *group) {
        return gather(userdata, cgroup, group, 0);
}

/* By cgroup; of one cgroup, the explicit rule first (it is the one that places), then by group. */
static int cmp_listed(const void *x, const void *y) {
        const Listed *a = x, *b = y;
        int d = strcmp(a->cgroup, b->cgroup);

        if (d == 0)
                d = (int) a->mirror - (int) b->mirror;
        return d != 0 ? d : strcmp(a->group, b->group);
}

/* May @p see a rule of @group? Root sees every rule, one whose group is
 * gone too; anyone else the rules of groups it may read. */
static bool may_see(Service *svc, Peer *p, const char *group) {
        _cleanup_(group_unrefp) MemGroup *g = NULL;
        Refusal ignored;

        if (p && authz_is_root(&p->who))
                return true;
        refusal_init(&ignored);
        if (service_lookup(svc, group, &g, &ignored) < 0)
                return false;
        return p ? service_may_read(svc, p, g) : service_read_access(svc) == READ_ACCESS_ALL;
}

int service_list_rules(Service *svc, Peer *p, bool with_mirrors, ServiceRuleFn fn, void *userdata,
                       Refusal *rf) {
        ListBuf b = {};
        int r;

        r = placement_list(svc->placement, gather, &b);
        if (r >= 0 && with_mirrors && svc->cgroup) {
                b.mirror = true;
                r = cgroup_mirror_list(svc->cgroup, gather_mirror, &b);
        }
        if (r >= 0 && b.n > 1) /* b.v is NULL when there is none: qsort() must not see it */
                qsort(b.v, b.n, sizeof(*b.v), cmp_listed);
        for (size_t i = 0; i < b.n; i++) {
                if (r >= 0 && may_see(svc, p, b.v[i].group))
                        r = fn(userdata, b.v[i].cgroup, b.v[i].group, b.v[i].mirror, b.v[i].flags);
                free(b.v[i].cgroup);
                free(b.v[i].group);
        }
        free(b.v);
        if (r == -ENOSPC)
                return refusal_set(rf, r, "the list of placement rules is too large for one reply");
        if (r < 0)
                return refusal_set(rf, r, "cannot list the placement rules: %s", refusal_errno_text(r));
        return 0;
}

int service_place_cgroup(Service *svc, const char *cgroup, bool may_create, char *buf, size_t size,
                         Refusal *rf) {
        char rule[PLACEMENT_CGROUP_MAX + 1];
        bool created = false;
        int r;

        /* Explicit rules first, and any of them before any mirror, even a
         * mirror of a longer cgroup: a container's rule covers the cgroups
         * nested in it, and a mirror of one of those would otherwise
         * account its processes outside the container's limits. */
        r = placement_match(svc->placement, cgroup, buf, size, rule, sizeof(rule));
        if (r == 0) {
                log_debug("cgroup %s placed in %s by the rule of %s", cgroup, buf, rule);
                return 0;
        }
        if (r != -ENOENT)
                return refusal_set(rf, r, "cgroup %s: its rule's group does not fit", cgroup);
        if (!svc->cgroup)
                return refusal_set(rf, -ENOENT,
                                   "no group given, and no kernel cgroup mirror to place the session by");
        r = cgroup_mirror_place(svc->cgroup, cgroup, may_create, buf, size, &created, rf);
        /* A mirror made on demand is made again on demand: saved, but
         * nobody's OK waits for it. */
        if (created)
                service_changed(svc);
        return r;
}

int service_place(Service *svc, Peer *p, char *buf, size_t size, Refusal *rf) {
        char cg[PLACEMENT_CGROUP_MAX + 1];
        pid_t pid = p->creds.pid;
        int r;

        r = svc->cgroup ? cgroup_mirror_pid_cgroup(svc->cgroup, pid, cg, sizeof(cg))
                        : placement_proc_cgroup(pid, cg, sizeof(cg));
        if (r < 0 && r != -ESRCH && !svc->cgroup)
                return refusal_set(rf, -ENOENT,
                                   "no group given, and no kernel cgroup mirror to place the session by");
        if (r < 0)
                return refusal_set(rf, r == -ESRCH ? -ESRCH : -ENOENT, "pid %d: cannot read its memory cgroup: %s",
                                   (int) pid, strerror(-r));
        return service_place_cgroup(svc, cg, authz_is_root(&p->who), buf, size, rf);
}
