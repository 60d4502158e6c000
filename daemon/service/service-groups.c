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

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/group.h"
#include "core/pressure.h"
#include "core/stock.h"
#include "core/rcu-tsan.h"
#include "cgroup/mirror.h"
#include "base/log.h"
#include "service/message-ids.h"
#include "service/service-internal.h"

/* Serialises owner changes with removes: the count follows the owner. */
static pthread_mutex_t owner_lock = PTHREAD_MUTEX_INITIALIZER;

static MemGroup *list_entry(struct cds_list_head *it) {
        MemGroup *g = caa_container_of(it, MemGroup, siblings);

        rcu_tsan_consume(g);
        return g;
}

/* @g's first child, NULL if none; in a read-side section. */
static MemGroup *first_child(MemGroup *g) {
        struct cds_list_head *it = rcu_list_next(&g->children);

        return it == &g->children ? NULL : list_entry(it);
}

/* May @p (NULL: a caller that did not identify itself) read @g? */
static bool may_read(Service *svc, Peer *p, MemGroup *g) {
        ReadAccess access = service_read_access(svc);

        if (!p)
                return access == READ_ACCESS_ALL;
        return authz_may_read(access, service_confined_read(svc), &p->who, g);
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
        uid_t uid = p->creds.account; /* whose the group is: a confined peer's account's */
        int r;

        if (!path || !*path)
                return refusal_set(rf, -EINVAL, "a group path is required");
        r = mem_path_check(path, svc->core->config.max_depth, NULL);
        if (r < 0)
                return refusal_path(rf, r, path);
        if (r == 0)
                return refusal_set(rf, -EEXIST, "/: the root always exists");
        parent = parent_of(svc->core, path);
        if (!parent)
                return refusal_set(rf, -ENOENT, "%s: parent group does not exist", path);
        if (!authz_may_create_in(&p->who, parent))
                return refusal_set(rf, -EPERM, "%s: not delegated to uid %u%s", path, (unsigned) p->creds.uid,
                                   p->who.confined ? " (confined)" : "");
        if (has_owner && !authz_may_give(&p->who, owner))
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
        service_audit(p, MESSAGE_GROUP_CREATED, path, "Group %s created, owner %u", path, (unsigned) (has_owner ? owner : uid));
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
        service_audit(p, MESSAGE_GROUP_REMOVED, g->path, "Group %s removed", g->path);
        events_emit(svc->events, EVENT_GROUP_REMOVED, g->path, 0);
        return 0;
}

/* "Limits of PATH set: max=1048576 high=max", for the record. */
void service_audit_limits(const Peer *p, const char *path, const char *region, const MemLimits *l, bool force) {
        const unsigned bits[] = { MEM_LIMIT_MAX, MEM_LIMIT_HIGH, MEM_LIMIT_LOW, MEM_LIMIT_MIN };
        const char *const names[] = { "max", "high", "low", "min" };
        const uint64_t values[] = { l->max, l->high, l->low, l->min };
        char buf[160] = "";
        size_t n = 0;

        for (size_t i = 0; i < ELEMENTSOF(bits) && n < sizeof(buf); i++) {
                if (!(l->set & bits[i]))
                        continue;
                if (values[i] == UINT64_MAX)
                        n += (size_t) snprintf(buf + n, sizeof(buf) - n, " %s=max", names[i]);
                else
                        n += (size_t) snprintf(buf + n, sizeof(buf) - n, " %s=%llu", names[i],
                                               (unsigned long long) values[i]);
        }
        service_audit(p, MESSAGE_LIMITS_SET, path, "Limits of %s%s%s set:%s%s", path, region ? " in region " : "",
                      region ? region : "", buf, force ? " (forced)" : "");
}

int service_set_limits(Service *svc, Peer *p, const char *path, const MemLimits *limits, unsigned flags,
                       Refusal *rf) {
        _cleanup_(group_unrefp) MemGroup *g = NULL;
        static const MemLimits none = {};
        bool force = flags & SERVICE_LIMITS_FORCE, reclaim;
        int r;

        /* Served again after the reclaim a lowered max asked for. */
        reclaim = service_limits_reclaim_resume(svc, p, &flags);
        if (!reclaim)
                return 0; /* the forced max was taken before the round */
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
        /* Without force, a max below usage only fits once holders gave
         * back: ask them first (mem_cgroup_resize_max()'s reclaim loop). */
        if (!force && (limits->set & MEM_LIMIT_MAX) &&
            service_limits_reclaim(svc, p, g, MEM_REGION_MEMORY, limits->max, flags) == -EINPROGRESS)
                return -EINPROGRESS;
        /* A forced max raises oom on this thread: the caller's. */
        events_requester_set(p->creds.pid, p->creds.uid);
        r = group_set_limits(g, limits, force);
        events_requester_set(0, 0);
        if (r < 0)
                return refusal_set(rf, r, "%s: usage is above the new max (use --force)", g->path);
        /* On a mirror the limits set become the user's: an import keeps
         * them (cgroup_mirror_import_with()). Before the commit, so that the
         * saved line carries the mark. */
        if (group_is_mirror(g))
                group_add_user_limits(g, limits->set);
        service_committed(svc, p, g->path);
        service_audit_limits(p, g->path, NULL, limits, force);
        events_emit(svc->events, EVENT_LIMITS_CHANGED, g->path, limits->set);
        /* memory.max: taken at once, then the difference asked for. */
        if (force && (limits->set & MEM_LIMIT_MAX))
                return service_limits_reclaim(svc, p, g, MEM_REGION_MEMORY, limits->max,
                                              flags | SERVICE_LIMITS_FORCE);
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
        if (!authz_may_give(&p->who, owner))
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
        service_audit(p, MESSAGE_OWNER_SET, g->path, "Group %s delegated to uid %u (was %u)", g->path, (unsigned) owner, (unsigned) old);
        return 0;
}

/* group_read(), and memory.pressure as of now: the core has no clock. */
static void read_group(Service *svc, MemGroup *g, const MemGroup *rr, bool exact, MemGroupInfo *ret) {
        group_read(svc->core, g, rr, exact, ret);
        pressure_read(svc->core, g, service_now_usec(), ret->pressure);
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
        /* An exact read folds the charge stocks in: what they hold of
         * the subtree goes back first (core/stock.h). */
        if ((flags & SERVICE_READ_EXACT) && !(flags & SERVICE_READ_PATHS))
                core_stock_drain(svc->core, g);
        if (!(flags & SERVICE_READ_PATHS))
                read_group(svc, g, rr, flags & SERVICE_READ_EXACT, &info);
        r = fn(userdata, g->path, (flags & SERVICE_READ_PATHS) ? NULL : &info);
        return r < 0 ? read_failed(rf, r, g->path) : 0;
}

/*
 * Lists go in pre-order, a group's children in the order of its children
 * list: the order they were created in (after a restart, the order the
 * state was restored in). A page resumes after its cursor, the path of
 * the last group the previous page visited, found by its hash look-up:
 * no walk of what came before, so each page of a large subtree costs what
 * it lists. The order of groups that exist never changes (a new child
 * goes at the end of its parent's list), so a cursor found again marks
 * the same place: a group that exists from the first page to the last is
 * listed exactly once. A cursor whose group is gone marks nothing any
 * more; the list starts again from the beginning and says so. docs/
 * design.md ("Listing in pages") states what clients may rely on.
 */

/* The next group of a list of @top after @g: pre-order within @top's
 * subtree, or @top's children only. In the caller's read-side section. */
static MemGroup *list_next(MemGroup *top, MemGroup *g, bool recursive) {
        struct cds_list_head *it;

        if (recursive) {
                it = rcu_list_next(&g->children);
                if (it != &g->children)
                        return list_entry(it);
        } else if (g == top)
                return first_child(top);
        /*
         * Up to the first ancestor with a next sibling. A group removed
         * while this section runs keeps its next pointer (rcu_list_del()
         * does not poison it) and is freed only after the section, so the
         * walk may go on from it, as every RCU list reader may from an
         * element it holds (list_for_each_entry_rcu()).
         */
        while (g != top) {
                it = rcu_list_next(&g->siblings);
                if (it != &g->parent->children)
                        return list_entry(it);
                if (!recursive)
                        return NULL;
                g = g->parent;
        }
        return NULL;
}

typedef struct Chunk {
        MemGroup **v;
        size_t n;
        bool more; /* the walk did not end with the last of v */
} Chunk;

static void chunk_done(Chunk *c) {
        for (size_t i = 0; i < c->n; i++)
                group_unref(c->v[i]);
        free(c->v);
        *c = (Chunk) {};
}

/* Room for one more in @c. */
static int chunk_grow(Chunk *c, size_t *cap) {
        MemGroup **v;
        size_t n = *cap ? *cap * 2 : 64;

        if (c->n < *cap)
                return 0;
        v = realloc(c->v, n * sizeof(*v));
        if (!v)
                return -ENOMEM;
        c->v = v;
        *cap = n;
        return 0;
}

/*
 * Up to @max groups of a list of @top after the group at @after (NULL:
 * from the start), each with a reference, in one read-side section; the
 * groups are read and handed on outside it, so a slow consumer holds up
 * no grace period. Return: 0; -ESTALE (no group at @after); -ENOMEM.
 */
static int chunk_collect(MemCore *core, MemGroup *top, bool recursive, const char *after, size_t max,
                         Chunk *ret) {
        size_t cap = 0;
        MemGroup *g;
        int r = 0;

        *ret = (Chunk) {};
        core_read_lock();
        if (after) {
                g = group_lookup(core, after);
                if (!g)
                        r = -ESTALE;
                else
                        g = list_next(top, g, recursive);
        } else
                g = recursive ? top : first_child(top);
        for (; r == 0 && g; g = list_next(top, g, recursive)) {
                if (ret->n == max) {
                        ret->more = true;
                        break;
                }
                r = chunk_grow(ret, &cap);
                /* Found under RCU: it may be going away; then leave it out. */
                if (r == 0 && group_tryget(g))
                        ret->v[ret->n++] = g;
        }
        core_read_unlock();
        return r;
}

/* Is the group at @path, if it exists, one a list of @top visits? */
static bool in_list(MemCore *core, MemGroup *top, bool recursive, const char *path) {
        MemGroup *g;
        bool in;

        core_read_lock();
        g = group_lookup(core, path);
        in = !g || (recursive ? group_is_descendant(g, top) : g->parent == top);
        core_read_unlock();
        return in;
}

/* The groups a page collects at a time: enough that the look-up per chunk
 * is noise, few enough that a page that stops early took few references
 * for nothing. */
#define LIST_CHUNK 256u

/* One page's walk: where it is, and what it has handed on so far. */
typedef struct ListWalk {
        Service *svc;
        Peer *peer;
        MemGroup *top;
        unsigned flags;
        bool exact;   /* the next read flushes first: one flush covers the whole page */
        size_t chunk; /* groups per read-side section; SIZE_MAX: all in one */
        ServiceListPage *page;
        ServiceGroupFn fn;
        void *userdata;
        const char *after; /* NULL (from the start) or cursor */
        char cursor[MEM_PATH_MAX + 1]; /* the last group visited: the next chunk starts after it */
        char last[MEM_PATH_MAX + 1];   /* the last group listed: the next page starts after it */
        unsigned listed;
} ListWalk;

static void list_walk_visited(ListWalk *w, const char *path) {
        snprintf(w->cursor, sizeof(w->cursor), "%s", path);
        w->after = w->cursor;
}

/* Start after the page's cursor, if it names a group of this list. */
static int list_walk_from_cursor(ListWalk *w, Refusal *rf) {
        const char *after = w->page->after;

        if (!after || !*after)
                return 0;
        if (mem_path_check(after, UINT_MAX, NULL) < 0 ||
            !in_list(w->svc->core, w->top, w->flags & SERVICE_READ_RECURSIVE, after))
                return refusal_set(rf, -EINVAL, "the cursor %.64s is not a group of the list of %s", after,
                                   w->top->path);
        list_walk_visited(w, after);
        snprintf(w->last, sizeof(w->last), "%s", after);
        return 0;
}

/*
 * The next chunk of the walk into @ret. Return: 1 with a chunk; 0 when
 * the page ends here without one (page->more set); a refusal.
 */
static int list_walk_next_chunk(ListWalk *w, Chunk *ret, Refusal *rf) {
        ServiceListPage *page = w->page;
        int r;

        for (;;) {
                size_t max = page->limit ? MIN(w->chunk, (size_t) (page->limit - w->listed)) : w->chunk;

                r = chunk_collect(w->svc->core, w->top, w->flags & SERVICE_READ_RECURSIVE, w->after, max, ret);
                if (r >= 0)
                        return 1;
                chunk_done(ret);
                if (r == -ESTALE && w->listed == 0 && !page->restarted) {
                        /* The cursor's group is gone: it marks no place. */
                        page->restarted = true;
                        w->after = NULL;
                        w->last[0] = 0;
                        continue;
                }
                if (r == -ESTALE) {
                        /* The last group this page visited went away
                         * between its chunks: the page ends there, and
                         * the next one starts again. */
                        page->more = true;
                        return 0;
                }
                return refusal_set(rf, r, "out of memory");
        }
}

/*
 * Hand the groups of @ch the caller may read to the consumer, until the
 * page is full. *ret_visited: how many of @ch were visited (the rest are
 * the next page's); *ret_full: the page's limit is reached.
 * Return: 0; the consumer's error.
 */
static int list_walk_emit(ListWalk *w, const Chunk *ch, size_t *ret_visited, bool *ret_full) {
        bool paths = w->flags & SERVICE_READ_PATHS, full = false;
        size_t i = 0;
        int r;

        for (; i < ch->n && !full; i++) {
                MemGroup *g = ch->v[i];
                MemGroupInfo info;

                if (!may_read(w->svc, w->peer, g)) {
                        /* Visited: the next chunk starts after it. */
                        list_walk_visited(w, g->path);
                        continue;
                }
                if (!paths) {
                        read_group(w->svc, g, NULL, w->exact, &info);
                        w->exact = false;
                }
                r = w->fn(w->userdata, g->path, paths ? NULL : &info);
                if (r < 0)
                        return r;
                if (r > 0 && w->chunk != SIZE_MAX) /* full without it: the next page's first */
                        break;
                list_walk_visited(w, g->path);
                snprintf(w->last, sizeof(w->last), "%s", g->path);
                w->listed++;
                full = w->page->limit && w->listed >= w->page->limit;
        }
        *ret_visited = i;
        *ret_full = full;
        return 0;
}

/* One page; @chunk: groups per read-side section (SIZE_MAX: all in one,
 * and a positive return of @fn means success, as of sd_bus_message_append()). */
static int list_page(Service *svc, Peer *p, const char *path, unsigned flags, size_t chunk, ServiceListPage *page,
                     ServiceGroupFn fn, void *userdata, Refusal *rf) {
        _cleanup_(group_unrefp) MemGroup *top = NULL;
        ListWalk w = {
                .svc = svc, .peer = p, .flags = flags, .exact = flags & SERVICE_READ_EXACT,
                .chunk = chunk, .page = page, .fn = fn, .userdata = userdata,
        };
        int r;

        page->more = page->restarted = false;
        page->next[0] = 0;
        if (!path || !*path)
                path = "/";
        r = service_lookup(svc, path, &top, rf);
        if (r < 0)
                return r;
        if (w.exact && !(flags & SERVICE_READ_PATHS))
                core_stock_drain(svc->core, top);
        w.top = top;
        r = list_walk_from_cursor(&w, rf);
        if (r < 0)
                return r;
        for (;;) {
                size_t visited;
                bool full;
                Chunk ch;

                r = list_walk_next_chunk(&w, &ch, rf);
                if (r < 0)
                        return r;
                if (r == 0)
                        break;
                r = list_walk_emit(&w, &ch, &visited, &full);
                if (r < 0) {
                        chunk_done(&ch);
                        return read_failed(rf, r, path);
                }
                /* A chunk not visited to its end stops the page. */
                full = full || visited < ch.n;
                page->more = visited < ch.n || ch.more;
                chunk_done(&ch);
                if (!page->more)
                        return 0;
                if (full)
                        break;
        }
        /* The last group listed, not the last visited: a group the caller
         * may not read is never named to it. The next page walks again
         * over the unreadable ones after it. */
        snprintf(page->next, sizeof(page->next), "%s", w.last);
        return 0;
}

int service_list_groups_page(Service *svc, Peer *p, const char *path, unsigned flags, ServiceListPage *page,
                             ServiceGroupFn fn, void *userdata, Refusal *rf) {
        return list_page(svc, p, path, flags, LIST_CHUNK, page, fn, userdata, rf);
}

int service_list_groups(Service *svc, Peer *p, const char *path, unsigned flags, ServiceGroupFn fn,
                        void *userdata, Refusal *rf) {
        ServiceListPage page = {};

        /* One read-side section over the whole list, as one reply needs:
         * no chunk boundary where a removal could cut it short. */
        return list_page(svc, p, path, flags, SIZE_MAX, &page, fn, userdata, rf);
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

        if (!authz_may_import(&p->who))
                return refusal_set(rf, -EPERM, "only root imports cgroups");
        if (!svc->cgroup)
                return refusal_set(rf, -ENOENT, "no kernel cgroup mirror in this daemon");
        r = service_admit(svc, rf);
        if (r < 0)
                return r;
        /* The same function type: the reports go straight through. */
        r = cgroup_mirror_import_with(svc->cgroup, from, under,
                                    flags & SERVICE_IMPORT_RESET_LIMITS ? CGROUP_IMPORT_RESET_LIMITS : 0, fn,
                                    userdata, &counts, rf);
        if (r > 0 || (r < 0 && counts.created + counts.updated > 0))
                service_committed(svc, p, NULL); /* any number of groups */
        if (r < 0)
                return r;
        service_audit(p, MESSAGE_CGROUPS_IMPORTED, NULL, "Kernel cgroups imported from %s: %u created, %u updated, %u unchanged, %u user-set "
                      "limit%s kept%s", from && *from ? from : "/", counts.created, counts.updated,
                      counts.unchanged, counts.kept, counts.kept == 1 ? "" : "s",
                      flags & SERVICE_IMPORT_RESET_LIMITS ? " (limits reset)" : "");
        *ret = (ServiceImportCounts) {
                .created = counts.created,
                .updated = counts.updated,
                .unchanged = counts.unchanged,
                .kept = counts.kept,
                .kernel_owned = counts.kernel_owned,
        };
        return 0;
}
