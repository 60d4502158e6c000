/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The kernel cgroup mirrors as placement rules: where an Attach of "" or
 * "auto" lands when no explicit rule covers the process's cgroup, and the
 * mirrors as a list of (cgroup, group) rules of kind mirror.
 *
 * The order, after the explicit rules (service_place()): the mirror of the
 * process's own cgroup; that mirror imported when [cgroup] auto-create
 * allows; the mirror of its nearest mirrored ancestor; nothing (-ENOENT).
 * The ancestor comes last so that auto-create still mirrors the cgroup
 * itself when it may, and so that a process in a cgroup made after the
 * import (a service's sub-cgroup, a container's inner one) is accounted
 * with its parent instead of refused.
 *
 * Everything runs under cs->lock, as the rest of the mirror
 * (mirror.c); a group found is checked to still be a mirror, since
 * the table forgets removed groups only at the next prune.
 */

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "core/group.h"
#include "cgroup/mirror-internal.h"
#include "cgroup/placement.h"

/* The longest mirror covering @cgroup whose group still is one, into @group. Caller holds cs->lock. */
static int nearest_mirror(CgroupMirror *cs, const char *cgroup, char *group, size_t size) {
        const Mirror *best = NULL;
        size_t best_len = 0;

        for (size_t i = 0; i < cs->nmirrors; i++) {
                _cleanup_(group_unrefp) MemGroup *g = NULL;
                const Mirror *mi = &cs->mirrors[i];
                size_t len = strlen(mi->cgroup);

                if ((best && len <= best_len) || !placement_covers(mi->cgroup, cgroup))
                        continue;
                if (group_get(cs->core, mi->group, &g) < 0 || !group_is_mirror(g))
                        continue;
                best = mi;
                best_len = len;
        }
        if (!best)
                return -ENOENT;
        return (size_t) snprintf(group, size, "%s", best->group) >= size ? -ENAMETOOLONG : 0;
}

/* The mirror of @cg and its ancestors, root first; not its children. Caller holds cs->lock. */
static int import_chain(CgroupMirror *cs, const char *cg, bool *ret_created, Refusal *rf) {
        ImportRun run = {}; /* keeps user-set limits, reports nothing */
        int r;

        r = cgroup_make_parents(cs, cs->prefix);
        for (size_t end = 0; r >= 0;) {
                char sub[PATH_MAX], anc[MEM_PATH_MAX + 1];

                if (end == 0)
                        strcpy(sub, "/");
                else
                        snprintf(sub, sizeof(sub), "%.*s", (int) end, cg);
                r = cgroup_mirror_path(cs->prefix, sub, anc, sizeof(anc));
                if (r >= 0)
                        r = cgroup_import_one(cs, &run, sub, anc);
                if (r < 0)
                        return refusal_set(rf, r, "cgroup %s: cannot mirror it as %s: %s", sub, anc,
                                           cgroup_errno_text(r));
                if (r > 0)
                        *ret_created = true;
                if (cg[end] == 0 || strcmp(cg, "/") == 0)
                        return 0;
                end = strcspn(cg + end + 1, "/") + end + 1;
        }
        return refusal_set(rf, r, "cannot make the groups above %s: %s", cs->prefix, cgroup_errno_text(r));
}

/* cgroup_mirror_place() under cs->lock: the group into @group (MEM_PATH_MAX + 1 bytes). */
static int place_locked(CgroupMirror *cs, const char *cg, bool may_create, char *group, bool *ret_created,
                        Refusal *rf) {
        bool create = cs->auto_create && may_create;
        _cleanup_(group_unrefp) MemGroup *g = NULL;
        int r, own;

        if (!cs->mount)
                return refusal_set(rf, -ENOENT, "no group given and no kernel cgroup to place the session by (%s)",
                                   cs->describe);
        own = cgroup_mirror_path(cs->prefix, cg, group, MEM_PATH_MAX + 1);
        if (own >= 0)
                own = mem_path_check(group, UINT32_MAX, NULL);
        if (own >= 0) {
                r = group_get(cs->core, group, &g);
                if (r == 0 && (group_is_mirror(g) || !create))
                        return 0; /* its own mirror, or a group there that auto-create may not take */
                if (r < 0 && r != -ENOENT)
                        return refusal_set(rf, r, "%s: %s", group, cgroup_errno_text(r));
                if (create)
                        return import_chain(cs, cg, ret_created, rf);
        }
        /* No mirror of its own, and none to be made: its nearest mirrored
         * ancestor's, as the kernel charges a child's pages to every
         * ancestor's counters too. */
        {
                char own_group[MEM_PATH_MAX + 1];

                snprintf(own_group, sizeof(own_group), "%s", own >= 0 ? group : "");
                r = nearest_mirror(cs, cg, group, MEM_PATH_MAX + 1);
                if (r == 0)
                        return 0;
                if (own < 0)
                        return refusal_set(rf, own, "cgroup %s: no group can mirror it (%s)", cg,
                                           cgroup_errno_text(own));
                if (cs->auto_create && !may_create)
                        return refusal_set(rf, -EPERM,
                                           "%s: no mirror of kernel cgroup %s, and [cgroup] auto-create makes one "
                                           "for root only", own_group, cg);
                return refusal_set(rf, -ENOENT,
                                   "%s: no mirror of kernel cgroup %s (import it with memacctctl import-cgroups, "
                                   "or set [cgroup] auto-create = yes)", own_group, cg);
        }
}

int cgroup_mirror_place(CgroupMirror *cs, const char *cgroup, bool may_create, char *ret_path, size_t path_size,
                        bool *ret_created, Refusal *rf) {
        char group[MEM_PATH_MAX + 1];
        int r;

        *ret_created = false;
        pthread_mutex_lock(&cs->lock);
        r = place_locked(cs, cgroup, may_create, group, ret_created, rf);
        pthread_mutex_unlock(&cs->lock);
        if (r < 0)
                return r;
        if ((size_t) snprintf(ret_path, path_size, "%s", group) >= path_size)
                return refusal_set(rf, -ENAMETOOLONG, "%s: path too long", group);
        return 0;
}

int cgroup_mirror_list(CgroupMirror *cs, CgroupMirrorFn fn, void *userdata) {
        int r = 0;

        pthread_mutex_lock(&cs->lock);
        for (size_t i = 0; i < cs->nmirrors && r >= 0; i++) {
                _cleanup_(group_unrefp) MemGroup *g = NULL;

                if (group_get(cs->core, cs->mirrors[i].group, &g) < 0 || !group_is_mirror(g))
                        continue;
                r = fn(userdata, cs->mirrors[i].cgroup, cs->mirrors[i].group);
        }
        pthread_mutex_unlock(&cs->lock);
        return r < 0 ? r : 0;
}

int cgroup_mirror_of(CgroupMirror *cs, const char *cgroup, char *ret_group, size_t size) {
        int r = -ENOENT;

        pthread_mutex_lock(&cs->lock);
        for (size_t i = 0; i < cs->nmirrors && r == -ENOENT; i++) {
                _cleanup_(group_unrefp) MemGroup *g = NULL;

                if (strcmp(cs->mirrors[i].cgroup, cgroup) != 0 || group_get(cs->core, cs->mirrors[i].group, &g) < 0 ||
                    !group_is_mirror(g))
                        continue;
                r = (size_t) snprintf(ret_group, size, "%s", cs->mirrors[i].group) >= size ? -ENAMETOOLONG : 0;
        }
        pthread_mutex_unlock(&cs->lock);
        return r;
}
