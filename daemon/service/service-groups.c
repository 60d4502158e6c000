/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The operations on groups: create, remove, set limits, read, list,
 * reset the peak, import kernel cgroups.
 *
 * Each one looks the group up, asks authz.c whether the caller may, makes
 * one core call, and on success has the change saved (when it is one
 * that persists) and tells the fan-out, so that the bus signals a change
 * whichever transport made it. A refused operation changes nothing.
 *
 * Groups are counted per owner (registry.h, UID_GROUPS): whoever creates
 * one, or is given one by root, may own [limits] groups-per-uid, and all
 * owners but root together a share of [limits] groups, so that neither
 * one delegate nor all of them can take the tree's last groups from
 * root. A create takes the count first and gives it back when the core
 * refuses; root's own creates are counted but never refused by it.
 * A new owner (service_set_owner()) takes the count from the old one,
 * under owner_lock, so that a remove racing with it gives back the count
 * of the owner it took it from.
 */

#include <pthread.h>

#include <stdlib.h>
#include <string.h>

#include "core/group.h"
#include "service/cgroup-sync.h"
#include "service/log.h"
#include "service/service-internal.h"

/* Serialises owner changes with removes: the count follows the owner. */
static pthread_mutex_t owner_lock = PTHREAD_MUTEX_INITIALIZER;

/* May @p (NULL: a caller that did not identify itself) read @g? */
static bool may_read(Service *svc, Peer *p, MemGroup *g) {
        ReadAccess access = service_read_access(svc);

        if (!p)
                return access == READ_ACCESS_ALL;
        return authz_may_read(access, p->creds.uid, g);
}

/* The parent of a valid path other than "/", with a reference; NULL if none. */
static MemGroup *parent_of(MemCore *core, const char *path) {
        char buf[MEM_PATH_MAX + 1];
        const char *slash = strrchr(path, '/');
        MemGroup *parent = NULL;

        if (!slash || (size_t) (slash - path) > MEM_PATH_MAX)
                return NULL;
        if (slash == path)
                strcpy(buf, "/");
        else {
                memcpy(buf, path, (size_t) (slash - path));
                buf[slash - path] = 0;
        }
        (void) group_get(core, buf, &parent);
        return parent;
}

/* One more group for @owner, created by @uid: refused past the owner's bounds, unless by root. */
static int owner_acquire(Service *svc, uid_t uid, uid_t owner, const char *path, Refusal *rf) {
        RegistryBounds b;
        int r;

        if (owner == 0)
                return 0; /* root's groups are bounded by [limits] groups alone */
        r = registry_uid_acquire(svc->registry, owner, UID_GROUPS, uid == 0);
        if (r >= 0)
                return 0;
        b = registry_bounds(svc->registry);
        if (r == -EUSERS)
                return refusal_set(rf, -ENOSPC, "%s: uid %u owns too many groups ([limits] groups-per-uid = %u)",
                                   path, (unsigned) owner, b.per_uid[UID_GROUPS]);
        if (r == -ENOSPC)
                return refusal_set(rf, -ENOSPC, "%s: the %u groups uids other than root may own are used up "
                                   "(the rest of [limits] groups is root's)", path, b.total[UID_GROUPS]);
        return refusal_set(rf, r, "out of memory");
}

static void owner_release(Service *svc, uid_t owner) {
        if (owner != 0)
                registry_uid_release(svc->registry, owner, UID_GROUPS, 1);
}

static int recount_cb(MemGroup *g, void *userdata) {
        Service *svc = userdata;

        /* Forced: a state saved under larger bounds is kept, not cut. */
        if (g->parent && g->owner != 0 && registry_uid_acquire(svc->registry, g->owner, UID_GROUPS, true) < 0)
                return -ENOMEM;
        return 0;
}

int service_groups_recount(Service *svc) {
        _cleanup_(group_unrefp) MemGroup *root = NULL;
        int r;

        if (group_get(svc->core, "/", &root) < 0)
                return 0; /* no tree yet: nothing to count */
        core_read_lock();
        r = group_walk(root, recount_cb, svc);
        core_read_unlock();
        return r < 0 ? r : 0;
}

int service_create_group(Service *svc, Peer *p, const char *path, const MemLimits *limits, bool has_owner,
                         uid_t owner, Refusal *rf) {
        _cleanup_(group_unrefp) MemGroup *parent = NULL;
        uid_t uid = p->creds.uid;
        int r;

        if (!path || !*path)
                return refusal_set(rf, -EINVAL, "a group path is required");
        r = group_path_check(path, svc->core->config.max_depth, NULL);
        if (r < 0)
                return refusal_path(rf, r, path);
        if (r == 0)
                return refusal_set(rf, -EEXIST, "/: the root always exists");
        parent = parent_of(svc->core, path);
        if (!parent)
                return refusal_set(rf, -ENOENT, "%s: parent group does not exist", path);
        if (!authz_may_create_in(uid, parent))
                return refusal_set(rf, -EPERM, "%s: not delegated to uid %u", path, (unsigned) uid);
        if (has_owner && !authz_may_give(uid, owner))
                return refusal_set(rf, -EPERM, "only root delegates to another uid");

        r = service_admit(svc, rf);
        if (r < 0)
                return r;
        r = owner_acquire(svc, uid, has_owner ? owner : uid, path, rf);
        if (r < 0)
                return r;
        r = group_create_limited(svc->core, path, has_owner ? owner : uid, limits);
        if (r < 0) {
                owner_release(svc, has_owner ? owner : uid);
                return refusal_path(rf, r, path);
        }
        service_committed(svc, p, path);
        /* The group first, then its limits: a watcher of limit changes
         * alone sees them too. */
        events_emit(svc->events, EVENT_GROUP_ADDED, path, 0);
        if (limits && limits->set)
                events_emit(svc->events, EVENT_LIMITS_CHANGED, path, limits->set);
        return 0;
}

int service_remove_group(Service *svc, Peer *p, const char *path, Refusal *rf) {
        _cleanup_(group_unrefp) MemGroup *g = NULL;
        int r;

        r = service_lookup_for(svc, p, path, authz_may_modify, &g, rf);
        if (r < 0)
                return r;
        if (!g->parent)
                return refusal_set(rf, -EINVAL, "/: the root cannot be removed");
        r = service_admit(svc, rf);
        if (r < 0)
                return r;
        pthread_mutex_lock(&owner_lock);
        r = group_remove(svc->core, g->path);
        /* What the create (or the last owner change) counted goes. */
        if (r >= 0)
                owner_release(svc, g->owner);
        pthread_mutex_unlock(&owner_lock);
        if (r == -EBUSY)
                return refusal_set(rf, r, "%s: group has children or attached sessions", g->path);
        if (r < 0)
                return refusal_path(rf, r, g->path);
        service_committed(svc, p, g->path);
        events_emit(svc->events, EVENT_GROUP_REMOVED, g->path, 0);
        return 0;
}

int service_set_limits(Service *svc, Peer *p, const char *path, const MemLimits *limits, bool force,
                       Refusal *rf) {
        _cleanup_(group_unrefp) MemGroup *g = NULL;
        static const MemLimits none = {};
        int r;

        r = service_lookup_for(svc, p, path, authz_may_modify, &g, rf);
        if (r < 0)
                return r;
        if (!limits)
                limits = &none;
        if (!limits->set)
                return 0; /* nothing to change, nothing to save */
        r = service_admit(svc, rf);
        if (r < 0)
                return r;
        /* A forced max raises oom on this thread: the caller's. */
        events_requester_set(p->creds.pid, p->creds.uid);
        r = group_set_limits(g, limits, force);
        events_requester_set(0, 0);
        if (r < 0)
                return refusal_set(rf, r, "%s: usage is above the new max (use --force)", g->path);
        /* On a mirror the limits set become the user's: an import keeps
         * them (cgroup_sync_import_with()). Before the commit, so that the
         * saved line carries the mark. */
        if (group_is_mirror(g))
                group_add_user_limits(g, limits->set);
        service_committed(svc, p, g->path);
        events_emit(svc->events, EVENT_LIMITS_CHANGED, g->path, limits->set);
        return 0;
}

uint64_t service_info_kept(const MemGroupInfo *info) {
        uint64_t sum = 0;

        for (int i = 0; i < _MEM_STAT_MAX; i++)
                sum += info->kept[i];
        return sum;
}

uint64_t service_info_session(const MemGroupInfo *info) {
        uint64_t own = 0, kept = service_info_kept(info);

        /* stat_local counts kept and session charges alike, by item, but
         * lags by a flush, while kept is exact: clamp, as the stats are. */
        for (int i = 0; i < _MEM_STAT_MAX; i++)
                own += (uint64_t) info->stat_local[i];
        return own > kept ? own - kept : 0;
}

int service_set_owner(Service *svc, Peer *p, const char *path, uid_t owner, Refusal *rf) {
        _cleanup_(group_unrefp) MemGroup *g = NULL;
        uid_t uid = p->creds.uid, old;
        int r;

        r = service_lookup_for(svc, p, path, authz_may_modify, &g, rf);
        if (r < 0)
                return r;
        if (!g->parent)
                return refusal_set(rf, -EINVAL, "/: the root is root's");
        /* The rule of a create: a delegate may take a group back, only
         * root gives one to another uid. */
        if (!authz_may_give(uid, owner))
                return refusal_set(rf, -EPERM, "only root delegates to another uid");
        if (owner == (uid_t) -1)
                return refusal_set(rf, -EINVAL, "%s: uid %u is no owner", g->path, (unsigned) owner);
        r = service_admit(svc, rf);
        if (r < 0)
                return r;
        pthread_mutex_lock(&owner_lock);
        old = g->owner;
        if (old == owner) {
                pthread_mutex_unlock(&owner_lock);
                return 0; /* nothing to change, nothing to save */
        }
        r = owner_acquire(svc, uid, owner, g->path, rf);
        if (r >= 0) {
                group_set_owner(g, owner);
                owner_release(svc, old);
        }
        pthread_mutex_unlock(&owner_lock);
        if (r < 0)
                return r;
        service_committed(svc, p, g->path);
        return 0;
}

/* A ServiceGroupFn's error as a refusal: the reply would be too large, or no memory. */
static int read_failed(Refusal *rf, int r, const char *path) {
        if (r == -ENOSPC)
                return refusal_set(rf, r, "%s: too many groups for one reply; list a subtree", path);
        return refusal_set(rf, r, "out of memory");
}

int service_get_group(Service *svc, Peer *p, const char *path, const char *reclaim_root, unsigned flags,
                      ServiceGroupFn fn, void *userdata, Refusal *rf) {
        _cleanup_(group_unrefp) MemGroup *g = NULL, *rr = NULL;
        MemGroupInfo info;
        int r;

        r = service_lookup(svc, path, &g, rf);
        if (r < 0)
                return r;
        if (!may_read(svc, p, g))
                return refusal_denied(rf, g->path);
        if (reclaim_root && *reclaim_root) {
                r = service_lookup(svc, reclaim_root, &rr, rf);
                if (r < 0)
                        return r;
                if (!group_is_descendant(g, rr))
                        return refusal_set(rf, -EINVAL, "%s is not below the reclaim root %s", g->path,
                                           rr->path);
        }
        if (!(flags & SERVICE_READ_PATHS))
                group_read(svc->core, g, rr, flags & SERVICE_READ_EXACT, &info);
        r = fn(userdata, g->path, (flags & SERVICE_READ_PATHS) ? NULL : &info);
        return r < 0 ? read_failed(rf, r, g->path) : 0;
}

typedef struct Collect {
        MemGroup **v;
        size_t n, cap;
        MemGroup *top;
        bool recursive;
        int r;
} Collect;

static int collect_cb(MemGroup *g, void *userdata) {
        Collect *col = userdata;

        if (g == col->top && !col->recursive)
                return 0; /* the children only: visit them, not the top */
        if (col->n == col->cap) {
                size_t cap = col->cap ? col->cap * 2 : 16;
                MemGroup **v = realloc(col->v, cap * sizeof(*v));

                if (!v)
                        return col->r = -ENOMEM;
                col->v = v;
                col->cap = cap;
        }
        /* Found under RCU: it may be going away; then leave it out. */
        if (!group_tryget(g))
                return 1;
        col->v[col->n++] = g;
        /* Not recursive: the top's children, but not theirs. */
        return (!col->recursive && g != col->top) ? 1 : 0;
}

/*
 * The groups a list of @top covers, each with a reference, parents
 * first. The walk is one read-side section; the groups are read and
 * handed on outside it, so a slow consumer holds up no grace period.
 */
static int collect(MemGroup *top, bool recursive, Collect *ret) {
        *ret = (Collect) { .top = top, .recursive = recursive };
        core_read_lock();
        group_walk(top, collect_cb, ret);
        core_read_unlock();
        return ret->r;
}

int service_list_groups(Service *svc, Peer *p, const char *path, unsigned flags, ServiceGroupFn fn,
                        void *userdata, Refusal *rf) {
        _cleanup_(group_unrefp) MemGroup *top = NULL;
        bool exact = flags & SERVICE_READ_EXACT;
        Collect col;
        int r;

        if (!path || !*path)
                path = "/";
        r = service_lookup(svc, path, &top, rf);
        if (r < 0)
                return r;
        r = collect(top, flags & SERVICE_READ_RECURSIVE, &col);
        if (r < 0)
                r = refusal_set(rf, r, "out of memory");
        for (size_t i = 0; i < col.n && r >= 0; i++) {
                MemGroup *g = col.v[i];
                MemGroupInfo info;

                if (!may_read(svc, p, g))
                        continue;
                if (!(flags & SERVICE_READ_PATHS)) {
                        /* One flush covers the whole list. */
                        group_read(svc->core, g, NULL, exact, &info);
                        exact = false;
                }
                r = fn(userdata, g->path, (flags & SERVICE_READ_PATHS) ? NULL : &info);
                if (r < 0)
                        r = read_failed(rf, r, path);
        }
        for (size_t i = 0; i < col.n; i++)
                group_unref(col.v[i]);
        free(col.v);
        return r;
}

int service_reset_peak(Service *svc, Peer *p, const char *path, Refusal *rf) {
        _cleanup_(group_unrefp) MemGroup *g = NULL;
        int r;

        r = service_lookup_for(svc, p, path, authz_may_reset_peak, &g, rf);
        if (r < 0)
                return r;
        group_reset_peak(g);
        return 0;
}

int service_import_cgroups(Service *svc, Peer *p, const char *from, const char *under,
                           ServiceImportCounts *ret, Refusal *rf) {
        return service_import_cgroups_with(svc, p, from, under, 0, NULL, NULL, ret, rf);
}

int service_import_cgroups_with(Service *svc, Peer *p, const char *from, const char *under, unsigned flags,
                                ServiceKeptFn fn, void *userdata, ServiceImportCounts *ret, Refusal *rf) {
        CgroupCounts counts = {};
        int r;

        if (!authz_may_import(p->creds.uid))
                return refusal_set(rf, -EPERM, "only root imports cgroups");
        if (!svc->cgroup)
                return refusal_set(rf, -ENOENT, "no kernel cgroup mirror in this daemon");
        r = service_admit(svc, rf);
        if (r < 0)
                return r;
        /* The same function type: the reports go straight through. */
        r = cgroup_sync_import_with(svc->cgroup, from, under,
                                    flags & SERVICE_IMPORT_RESET_LIMITS ? CGROUP_IMPORT_RESET_LIMITS : 0, fn,
                                    userdata, &counts, rf);
        if (r > 0 || (r < 0 && counts.created + counts.updated > 0))
                service_committed(svc, p, NULL); /* any number of groups */
        if (r < 0)
                return r;
        log_info("Imported kernel cgroups from %s: %u created, %u updated, %u unchanged, %u user-set limit%s kept%s",
                 from && *from ? from : "/", counts.created, counts.updated, counts.unchanged, counts.kept,
                 counts.kept == 1 ? "" : "s", flags & SERVICE_IMPORT_RESET_LIMITS ? " (limits reset)" : "");
        *ret = (ServiceImportCounts) {
                .created = counts.created,
                .updated = counts.updated,
                .unchanged = counts.unchanged,
                .kept = counts.kept,
                .kernel_owned = counts.kernel_owned,
        };
        return 0;
}
