/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Group tree
 *
 * Groups form a tree under "/". Each is linked twice: into its parent's
 * children list (RCU list, for walks) and into the core's hash table of
 * paths (cds_lfht, for lookups). Writers (create, remove) serialise on the
 * core's tree_lock; lookups and walks run under RCU only, so they never
 * wait for a writer nor make one wait. A removed group is unlinked at once
 * and freed after a grace period, when its last reference is gone.
 *
 * Removal races with attaches and kept charges, which do not take
 * tree_lock. Attaches and the removal's check of the attach count share
 * the group's move_lock, so a group is never removed with a session in it
 * and 'dead' is set only for a removal that goes ahead. Kept charges belong to the group and are released by its removal: they
 * run in read-side sections that check 'dead', and the remover waits a
 * grace period after setting it before it releases what they left.
 */

#include <assert.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "charge.h"
#include "core.h"
#include "group-internal.h"
#include "pressure.h"
#include "protection.h"
#include "region.h"
#include "stock.h"

static const char *const mem_event_table[_MEM_EVENT_MAX] = {
        [MEM_EVENT_LOW] = "low",
        [MEM_EVENT_HIGH] = "high",
        [MEM_EVENT_MAX] = "max",
        [MEM_EVENT_OOM] = "oom",
};

DEFINE_STRING_TABLE(mem_event, MemEvent, _MEM_EVENT_MAX)

static const char *const mem_path_error_table[_MEM_PATH_ERROR_MAX] = {
        [MEM_PATH_OK] = "valid",
        [MEM_PATH_NOT_ABSOLUTE] = "path must start with '/'",
        [MEM_PATH_EMPTY_COMPONENT] = "empty path component",
        [MEM_PATH_DOT_COMPONENT] = "'.' and '..' are not group names",
        [MEM_PATH_BAD_CHAR] = "group names may only hold [A-Za-z0-9._:@-]",
        [MEM_PATH_NAME_TOO_LONG] = "group name longer than 255 bytes",
        [MEM_PATH_TOO_LONG] = "path longer than 4096 bytes",
        [MEM_PATH_TOO_DEEP] = "path deeper than the configured maximum",
};

DEFINE_STRING_TABLE_TO_STRING(mem_path_error, MemPathError, _MEM_PATH_ERROR_MAX)

static bool name_char_ok(char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
               c == '.' || c == '_' || c == ':' || c == '@' || c == '-';
}

static int path_fail(MemPathError e, MemPathError *ret_reason) {
        if (ret_reason)
                *ret_reason = e;
        switch (e) {
        case MEM_PATH_NAME_TOO_LONG:
        case MEM_PATH_TOO_LONG:
                return -ENAMETOOLONG;
        case MEM_PATH_TOO_DEEP:
                return -EMLINK;
        default:
                return -EINVAL;
        }
}

int mem_path_check(const char *path, unsigned max_depth, MemPathError *ret_reason) {
        unsigned depth = 0;
        size_t len;

        if (!path || path[0] != '/')
                return path_fail(MEM_PATH_NOT_ABSOLUTE, ret_reason);
        len = strnlen(path, MEM_PATH_MAX + 1);
        if (len > MEM_PATH_MAX)
                return path_fail(MEM_PATH_TOO_LONG, ret_reason);
        if (len == 1)
                goto ok;

        for (const char *p = path + 1;;) {
                const char *end = strchrnul(p, '/');
                size_t n = (size_t) (end - p);

                if (n == 0)
                        return path_fail(MEM_PATH_EMPTY_COMPONENT, ret_reason);
                if (n > MEM_NAME_MAX)
                        return path_fail(MEM_PATH_NAME_TOO_LONG, ret_reason);
                if ((n == 1 && p[0] == '.') || (n == 2 && p[0] == '.' && p[1] == '.'))
                        return path_fail(MEM_PATH_DOT_COMPONENT, ret_reason);
                for (size_t i = 0; i < n; i++)
                        if (!name_char_ok(p[i]))
                                return path_fail(MEM_PATH_BAD_CHAR, ret_reason);
                if (++depth > max_depth)
                        return path_fail(MEM_PATH_TOO_DEEP, ret_reason);
                if (!*end)
                        break;
                p = end + 1;
        }
ok:
        if (ret_reason)
                *ret_reason = MEM_PATH_OK;
        return (int) depth;
}

/* FNV-1a: paths are short and hashed once per lookup; liburcu's hash
 * table takes the hash from the caller and has none of its own. */
static unsigned long path_hash(const char *path) {
        uint64_t h = 0xcbf29ce484222325ULL;

        for (const unsigned char *p = (const unsigned char *) path; *p; p++)
                h = (h ^ *p) * 0x100000001b3ULL;
        return (unsigned long) h;
}

static int path_match(struct cds_lfht_node *node, const void *key) {
        /* The table hands us nodes it reached through published pointers. */
        rcu_tsan_consume(caa_container_of(node, MemGroup, node));
        return strcmp(caa_container_of(node, MemGroup, node)->path, key) == 0;
}

MemGroup *group_lookup(MemCore *core, const char *path) {
        struct cds_lfht_iter iter;
        struct cds_lfht_node *node;

        cds_lfht_lookup(core->groups, path_hash(path), path_match, path, &iter);
        node = cds_lfht_iter_get_node(&iter);
        if (!node)
                return NULL;
        rcu_tsan_consume(caa_container_of(node, MemGroup, node));
        return caa_container_of(node, MemGroup, node);
}

bool group_tryget(MemGroup *g) {
        unsigned refs = atomic_load(&g->refs);

        do {
                if (refs == 0)
                        return false;
        } while (!atomic_compare_exchange_weak(&g->refs, &refs, refs + 1));
        return true;
}

MemGroup *group_ref(MemGroup *g) {
        if (g)
                atomic_fetch_add_explicit(&g->refs, 1, memory_order_relaxed);
        return g;
}

static void group_free_rcu(struct rcu_head *head) {
        MemGroup *g = caa_container_of(head, MemGroup, rcu);

        rcu_tsan_grace_period();
        rcu_tsan_consume(g); /* handed over by call_rcu() */
        pthread_mutex_destroy(&g->move_lock);
        region_group_free(g);
        pressure_free(atomic_load_explicit(&g->pressure, memory_order_relaxed));
        free(g);
}

MemGroup *group_unref(MemGroup *g) {
        if (!g)
                return NULL;
        if (atomic_fetch_sub_explicit(&g->refs, 1, memory_order_acq_rel) == 1) {
                rcu_tsan_publish(g);
                urcu_memb_call_rcu(&g->rcu, group_free_rcu);
        }
        return NULL;
}

int group_get(MemCore *core, const char *path, MemGroup **ret) {
        MemGroup *g;

        core_read_lock();
        g = group_lookup(core, path);
        if (g && !group_tryget(g))
                g = NULL;
        core_read_unlock();
        if (!g)
                return -ENOENT;
        *ret = g;
        return 0;
}

static MemGroup *group_alloc(MemCore *core, const char *path, MemGroup *parent, unsigned id,
                             unsigned depth, uid_t owner) {
        /* The path starts in the padding of the last cache line: a short
         * one costs no extra line. Rounded up, the size never falls below
         * sizeof(MemGroup). */
        MemGroup *g = cacheline_alloc(offsetof(MemGroup, path) + strlen(path) + 1);

        if (!g)
                return NULL;
        memset(g, 0, sizeof(*g));
        counter_init(&g->counter, parent ? &parent->counter : NULL);
        pthread_mutex_init(&g->move_lock, NULL);
        atomic_init(&g->refs, 1);
        g->id = id;
        g->depth = depth;
        g->owner = owner;
        g->core = core;
        g->parent = parent;
        CDS_INIT_LIST_HEAD(&g->children);
        cds_lfht_node_init(&g->node);
        strcpy(g->path, path);
        return g;
}

static int id_alloc(MemCore *core, unsigned *ret) {
        if (core->nfree_ids > 0)
                *ret = core->free_ids[--core->nfree_ids];
        else if (core->next_id < core->config.max_groups)
                *ret = core->next_id++;
        else
                return -ENOSPC;
        return 0;
}

/*
 * Set what @l names on @g's counter, max first; a max refused (usage above
 * it, without @force) leaves everything as it was. The caller holds
 * limits_lock, or @g is not linked yet. Return: 0; 1 when a forced max is
 * below usage (the caller raises oom, outside the lock); -EBUSY.
 */
static int limits_apply(MemGroup *g, const MemLimits *l, bool force) {
        return counter_apply_limits(&g->counter, l, force);
}

/* Caller holds tree_lock and the RCU read lock. @ret: NULL, or a reference to the group. */
static int group_link(MemCore *core, const char *path, MemGroup *parent, unsigned depth,
                      uid_t owner, const MemLimits *limits, MemGroup **ret) {
        MemGroup *g;
        unsigned id;
        int r;

        /* A path taken is EEXIST before the tree is full, as mkdir(2). */
        if (core->ngroups >= core->config.max_groups)
                return group_lookup(core, path) ? -EEXIST : -ENOSPC;
        r = id_alloc(core, &id);
        if (r < 0)
                return r;
        r = stats_prepare_id(&core->stats, id);
        if (r < 0)
                goto fail_id;
        g = group_alloc(core, path, parent, id, depth, owner);
        if (!g) {
                r = -ENOMEM;
                goto fail_id;
        }
        /* Before anyone can see the group: nobody charges it under other
         * limits first, and with no usage yet no max can be refused. */
        if (limits)
                (void) limits_apply(g, limits, false);
        rcu_tsan_publish(g);
        if (cds_lfht_add_unique(core->groups, path_hash(path), path_match, path, &g->node) !=
            &g->node) {
                /* Taken: nobody saw this group, and its id's slots were
                 * never written. */
                pthread_mutex_destroy(&g->move_lock);
                free(g);
                r = -EEXIST;
                goto fail_id;
        }
        /* Before it is linked, so before anything charges it: a flush that
         * finds its id in a ring finds the group too. */
        atomic_store_explicit(&core->by_id[id], g, memory_order_release);
        if (parent)
                rcu_list_add_tail(&g->siblings, &parent->children);
        else
                core->root = g;
        core->ngroups++;
        if (ret)
                *ret = group_ref(g);
        return 0;
fail_id:
        core->free_ids[core->nfree_ids++] = id;
        return r;
}

int group_create_root(MemCore *core) {
        int r;

        pthread_mutex_lock(&core->tree_lock);
        core_read_lock();
        r = group_link(core, "/", NULL, 0, 0, NULL, NULL);
        core_read_unlock();
        pthread_mutex_unlock(&core->tree_lock);
        return r;
}

/*
 * Link @path (checked, @depth deep) below @parent, or when NULL below the
 * group at @parent_path, looked up under the lock. Removal sets dead and
 * unlinks under tree_lock: a parent found, or not dead, now stays linked
 * until the unlock. No lookup of @path itself: the insert finds it taken.
 */
static int create_locked(MemCore *core, MemGroup *parent, const char *parent_path, const char *path,
                         unsigned depth, uid_t owner, const MemLimits *limits, MemGroup **ret) {
        int r;

        pthread_mutex_lock(&core->tree_lock);
        core_read_lock();
        if (!parent)
                parent = group_lookup(core, parent_path);
        r = !parent || atomic_load(&parent->dead) ? -ENOENT :
                group_link(core, path, parent, depth, owner, limits, ret);
        core_read_unlock();
        pthread_mutex_unlock(&core->tree_lock);
        return r;
}

int group_create_limited(MemCore *core, const char *path, uid_t owner, const MemLimits *limits) {
        char parent_path[MEM_PATH_MAX + 1];
        const char *slash;
        int depth;

        depth = mem_path_check(path, core->config.max_depth, NULL);
        if (depth < 0)
                return depth;
        if (depth == 0)
                return -EEXIST;
        slash = strrchr(path, '/');
        if (slash == path)
                strcpy(parent_path, "/");
        else {
                memcpy(parent_path, path, (size_t) (slash - path));
                parent_path[slash - path] = 0;
        }
        return create_locked(core, NULL, parent_path, path, (unsigned) depth, owner, limits, NULL);
}

int group_create_child(MemCore *core, MemGroup *parent, const char *path, uid_t owner,
                       const MemLimits *limits, MemGroup **ret) {
        size_t n = strlen(parent->path);
        int depth;

        depth = mem_path_check(path, core->config.max_depth, NULL);
        if (depth < 0)
                return depth;
        /* A child of the root is any path of depth 1; below, the parent's
         * path and a slash come first. */
        if ((unsigned) depth != parent->depth + 1 ||
            (parent->parent && (strncmp(path, parent->path, n) != 0 || path[n] != '/')))
                return -EINVAL;
        return create_locked(core, parent, NULL, path, (unsigned) depth, owner, limits, ret);
}

int group_remove(MemCore *core, const char *path) {
        MemGroup *g;
        int r = 0;

        pthread_mutex_lock(&core->tree_lock);
        core_read_lock();
        g = group_lookup(core, path);
        if (!g)
                r = -ENOENT;
        else if (!g->parent)
                r = -EINVAL;
        else if (!cds_list_empty(&g->children))
                r = -EBUSY;
        else {
                /* Attaches count under the same lock, so 'dead' is only
                 * ever set for a removal that goes ahead: nobody sees a
                 * refused removal. */
                pthread_mutex_lock(&g->move_lock);
                if (atomic_load(&g->nr_attached) != 0)
                        r = -EBUSY;
                else
                        atomic_store(&g->dead, true);
                pthread_mutex_unlock(&g->move_lock);
        }
        core_read_unlock();
        if (r < 0) {
                pthread_mutex_unlock(&core->tree_lock);
                return r;
        }

        /*
         * Kept charges belong to the group and go with it. Kept charges and
         * uncharges run in read-side sections that check 'dead': after a
         * grace period every one that missed the flag is finished and every
         * later one sees it, so what 'kept' holds now is final.
         */
        urcu_memb_synchronize_rcu();
        rcu_tsan_grace_period();
        for (MemStatItem i = 0; i < _MEM_STAT_MAX; i++) {
                int64_t k = atomic_exchange(&g->kept[i], 0);

                atomic_store(&g->kept_delegator[i], 0);
                if (k > 0)
                        group_uncharge(core, g, (uint64_t) k, i);
        }
        region_group_release(core, g);
        /* What threads stocked of it goes back too (stock.c). */
        stock_drain_counter(core, &g->counter);
        /* Nothing else can be charged here: no session is attached and no
         * child exists, and both are refused from now on. */
        assert(counter_read(&g->counter) == 0);

        core_read_lock();
        cds_lfht_del(core->groups, &g->node);
        rcu_list_del(&g->siblings);
        core->ngroups--;
        core_read_unlock();

        /* The group's statistics net to zero (it holds nothing now), but part
         * of them may still sit in per-thread slots: fold that residue into
         * the parent now, or the parent's totals would keep it forever. */
        pthread_mutex_lock(&core->stats.flush_lock);
        stats_fold_group(&core->stats, g->id, &g->stats, &g->parent->stats);
        /* The parent's pending holds the residue now: the next flush folds
         * it even if nothing updates it; and no flush looks this id up as
         * this group any more. */
        stats_defer_id(&core->stats, g->parent->id);
        atomic_store_explicit(&core->by_id[g->id], NULL, memory_order_relaxed);
        pthread_mutex_unlock(&core->stats.flush_lock);
        /* The id can serve a new group at once, though references may keep
         * this one's memory for long: no charge or session remains to write
         * its slots, and every flush from now on walks a tree without it
         * (a walk that could still see it held the flush lock taken above). */
        core->free_ids[core->nfree_ids++] = g->id;
        pthread_mutex_unlock(&core->tree_lock);

        group_unref(g);
        return 0;
}

/* Only from core_free(): no other thread uses the core any more. */
static void free_subtree(MemGroup *g) {
        struct cds_list_head *it, *next;

        for (it = g->children.next; it != &g->children; it = next) {
                next = it->next;
                free_subtree(caa_container_of(it, MemGroup, siblings));
        }
        pthread_mutex_destroy(&g->move_lock);
        region_group_free(g);
        pressure_free(atomic_load_explicit(&g->pressure, memory_order_relaxed));
        free(g);
}

void group_free_tree(MemCore *core) {
        struct cds_lfht_iter iter;
        struct cds_lfht_node *node;

        if (!core->root)
                return;
        core_read_lock();
        cds_lfht_for_each(core->groups, &iter, node)
                cds_lfht_del(core->groups, node);
        core_read_unlock();
        /* Unlinked nodes may still be read by the table's own workers
         * until a grace period has passed. */
        urcu_memb_synchronize_rcu();
        free_subtree(core->root);
        core->root = NULL;
}

int group_attach(MemGroup *g) {
        int r = 0;

        /* Rare (once per session), so a lock: see group_remove(). */
        pthread_mutex_lock(&g->move_lock);
        if (atomic_load(&g->dead))
                r = -ENOENT;
        else
                atomic_fetch_add(&g->nr_attached, 1);
        pthread_mutex_unlock(&g->move_lock);
        if (r == 0)
                group_ref(g);
        return r;
}

void group_detach(MemGroup *g) {
        atomic_fetch_sub(&g->nr_attached, 1);
        group_unref(g);
}

MemGroup *group_common_ancestor(MemGroup *a, MemGroup *b) {
        while (a->depth > b->depth)
                a = a->parent;
        while (b->depth > a->depth)
                b = b->parent;
        while (a != b) {
                a = a->parent;
                b = b->parent;
        }
        return a;
}

int group_set_max(MemGroup *g, uint64_t bytes, bool force) {
        int64_t limit = counter_clamp_limit(bytes);
        int r;

        /* Stocked bytes are not used: they must not refuse a new max. */
        (void) stock_drain(g->core, &g->counter);
        if (!force)
                return counter_set_max(&g->counter, limit);
        r = counter_set_max_force(&g->counter, limit);
        /* The kernel raises oom when reclaim cannot bring usage under a
         * new memory.max; we have nothing to reclaim with. */
        if (r > 0)
                group_event_raise(g, MEM_EVENT_OOM);
        return r;
}

int group_set_limits(MemGroup *g, const MemLimits *l, bool force) {
        int r;

        if (l->set & MEM_LIMIT_MAX)
                (void) stock_drain(g->core, &g->counter);
        pthread_mutex_lock(&g->core->limits_lock);
        r = limits_apply(g, l, force);
        pthread_mutex_unlock(&g->core->limits_lock);
        /* As group_set_max(): nothing reclaims towards a forced max. */
        if (r > 0)
                group_event_raise(g, MEM_EVENT_OOM);
        return r;
}

void group_set_high(MemGroup *g, uint64_t bytes) {
        counter_set_high(&g->counter, counter_clamp_limit(bytes));
}

void group_set_low(MemGroup *g, uint64_t bytes) {
        counter_set_low(&g->counter, counter_clamp_limit(bytes));
}

void group_set_min(MemGroup *g, uint64_t bytes) {
        counter_set_min(&g->counter, counter_clamp_limit(bytes));
}

void group_reset_peak(MemGroup *g) {
        counter_reset_watermark(&g->counter);
}

/* Both are samples of outside state with nothing ordered by them: relaxed. */
void group_set_mirror(MemGroup *g, bool mirror) {
        atomic_store_explicit(&g->mirror, mirror, memory_order_relaxed);
}

bool group_is_mirror(MemGroup *g) {
        return atomic_load_explicit(&g->mirror, memory_order_relaxed);
}

/* A mask that orders nothing else: its readers (the importer, the state
 * saver) take the limits themselves under their own serialisation. */
void group_add_user_limits(MemGroup *g, unsigned mask) {
        atomic_fetch_or_explicit(&g->user_limits, mask, memory_order_relaxed);
}

void group_set_user_limits(MemGroup *g, unsigned mask) {
        atomic_store_explicit(&g->user_limits, mask, memory_order_relaxed);
}

unsigned group_user_limits(MemGroup *g) {
        return atomic_load_explicit(&g->user_limits, memory_order_relaxed);
}

void group_set_kernel_current(MemGroup *g, uint64_t bytes) {
        atomic_store_explicit(&g->kernel_current, bytes, memory_order_relaxed);
}

uint64_t group_margin(MemGroup *g) {
        return counter_margin(&g->counter);
}

bool group_is_descendant(MemGroup *g, const MemGroup *top) {
        for (; g; g = g->parent)
                if (g == top)
                        return true;
        return false;
}

void group_set_owner(MemGroup *g, uid_t owner) {
        atomic_store(&g->owner, owner);
}

bool group_is_delegated_to(MemGroup *g, uid_t uid) {
        if (uid == 0)
                return false;
        for (MemGroup *i = g; i; i = i->parent)
                if (i->owner == uid)
                        return true;
        return false;
}

/*
 * memcg_memory_event(): the local count on the group, the hierarchical one
 * on the group and every ancestor. Unlike the kernel, the root counts too:
 * here the root may carry limits (a node-wide budget), so it has events.
 */
void group_event_raise(MemGroup *g, MemEvent ev) {
        MemCore *core = g->core;
        uint64_t local = atomic_fetch_add_explicit(&g->events_local[ev], 1, memory_order_relaxed) + 1;

        for (MemGroup *i = g; i; i = i->parent)
                atomic_fetch_add_explicit(&i->events[ev], 1, memory_order_relaxed);
        if (core->event_hook)
                core->event_hook(g, MEM_REGION_MEMORY, ev, local, core->event_hook_userdata);
}

void group_read(MemCore *core, MemGroup *g, const MemGroup *reclaim_root, bool exact,
                MemGroupInfo *ret) {
        const MemCounter *c = &g->counter;
        int64_t emin, elow;
        MemGroup *child;

        /* Field by field: the regions' part is large, and only its first
         * nr_regions entries are written (region_read()). */
        memset(ret, 0, offsetof(MemGroupInfo, nr_regions));
        ret->current = (uint64_t) counter_read(c);
        ret->peak = (uint64_t) atomic_load_explicit(&c->watermark, memory_order_relaxed);
        ret->max = counter_limit_to_u64(counter_read_limit(&c->max));
        ret->high = counter_limit_to_u64(counter_read_limit(&c->high));
        ret->low = counter_limit_to_u64(counter_read_limit(&c->low));
        ret->min = counter_limit_to_u64(counter_read_limit(&c->min));
        ret->failcnt = atomic_load_explicit(&c->failcnt, memory_order_relaxed);
        ret->nr_attached = atomic_load(&g->nr_attached);
        ret->owner = g->owner;
        ret->mirror = atomic_load_explicit(&g->mirror, memory_order_relaxed);
        if (ret->mirror)
                ret->kernel_current = atomic_load_explicit(&g->kernel_current, memory_order_relaxed);
        core_stats_flush(core, exact);
        counter_effective_protection(reclaim_root ? &reclaim_root->counter : NULL, c,
                                     atomic_load(&core->recursive_protection), &emin, &elow);
        /* A first-level group's effective value is its raw setting, which
         * may be "max": read it back as UINT64_MAX like the setting. */
        ret->effective_min = counter_limit_to_u64(emin);
        ret->effective_low = counter_limit_to_u64(elow);
        for (int i = 0; i < _MEM_EVENT_MAX; i++) {
                ret->events[i] = atomic_load_explicit(&g->events[i], memory_order_relaxed);
                ret->events_local[i] = atomic_load_explicit(&g->events_local[i], memory_order_relaxed);
        }
        for (int i = 0; i < _MEM_STAT_MAX; i++) {
                /* Negative only transiently (updates of one charge landing
                 * in different flushes); clamp like memcg_page_state(). */
                ret->stat[i] = MAX(atomic_load_explicit(&g->stats.total[i], memory_order_relaxed), 0);
                ret->stat_local[i] = MAX(atomic_load_explicit(&g->stats.local[i], memory_order_relaxed), 0);
                ret->kept[i] = (uint64_t) atomic_load_explicit(&g->kept[i], memory_order_relaxed);
        }
        region_read(core, g, reclaim_root, ret);
        core_read_lock();
        group_for_each_child(child, g, it)
                ret->nr_children++;
        core_read_unlock();
}

int group_walk(MemGroup *g, int (*cb)(MemGroup *g, void *userdata), void *userdata) {
        MemGroup *c;
        int r;

        r = cb(g, userdata);
        if (r != 0)
                return r < 0 ? r : 0;
        group_for_each_child(c, g, it) {
                r = group_walk(c, cb, userdata);
                if (r < 0)
                        return r;
        }
        return 0;
}
