/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Transient groups: a group created with the transient flag belongs to
 * the client that created it, and the daemon removes it once that client
 * is gone (its connection closed, however it ended: a SIGKILL included)
 * and the group has no sessions and no children left.
 *
 * The creator's peer keeps a reference to each of its transient groups
 * (Peer.transient). When the peer goes (registry_peer_free() calls
 * peer_gone() after the peer's own session has ended) each is removed as
 * the daemon itself would remove it; one still in use (a session of
 * another client, a child group) becomes an orphan, tried again whenever
 * any other client goes, since a client going is how a session ends. A
 * group is only removed while it is the very group that was created: one
 * removed and created again under the same path by somebody else is not
 * touched (the reference tells them apart).
 *
 * The mark is saved with the group (MemGroup.transient, "transient=1" in
 * the state file). After a restart the creator's connection is gone, so
 * every restored transient group starts as an orphan, but one that is
 * not removed before SERVICE_TRANSIENT_GRACE_USEC has passed: time for
 * the creator (memacctctl run, reconnecting) to claim it back with a
 * transient CreateGroup on it, which adopts an orphan for its owner's
 * uid or root rather than fail with EEXIST. Orphans are tried when a
 * client goes and on every housekeeping tick, and wait while they have
 * sessions, children or kept charges.
 */

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "base/log.h"
#include "service/service-internal.h"

/* Does @g still hold kept charges (which a removal would drop)? */
static bool holds_kept(MemGroup *g) {
        for (MemStatItem i = 0; i < _MEM_STAT_MAX; i++)
                if (atomic_load(&g->kept[i]) > 0)
                        return true;
        return false;
}

/* Remove @g if it is still the group at its path. Return: true when it is
 * done with (removed, or gone already), false when it must wait (busy, or
 * the state cannot be saved now). */
static bool transient_reap(Service *svc, MemGroup *g) {
        _cleanup_(group_unrefp) MemGroup *cur = NULL;
        Refusal rf;
        int r;

        if (group_get(svc->core, g->path, &cur) < 0 || cur != g)
                return true;
        if (holds_kept(g))
                return false;
        refusal_init(&rf);
        r = service_remove_group(svc, &svc->daemon_peer, g->path, &rf);
        if (r == 0) {
                log_info("Removed transient group %s: its creator is gone", g->path);
                return true;
        }
        if (r == -EBUSY || r == -ENOSPC)
                return false;
        log_warning("Transient group %s: not removed: %s", g->path, rf.message);
        return true;
}

/* Add @g (a reference handed over) to the orphans; on failure, forget it. */
static int orphan_add(Service *svc, MemGroup *g, uint64_t not_before_usec) {
        Orphan *v;

        pthread_mutex_lock(&svc->transient_lock);
        v = realloc(svc->orphans, (svc->norphans + 1) * sizeof(*v));
        if (v) {
                svc->orphans = v;
                v[svc->norphans++] = (Orphan) { .g = g, .not_before_usec = not_before_usec };
        }
        pthread_mutex_unlock(&svc->transient_lock);
        if (!v) {
                log_warning("Transient group %s: left in place (out of memory)", g->path);
                group_unref(g);
                return -ENOMEM;
        }
        return 0;
}

/* Try the orphans again. They are taken out of the table for the
 * removals, which take core locks, so that the table's lock is never
 * held across them; those still busy, or in their grace period, go
 * back. One claimed back meanwhile is simply not in the table. */
static void orphans_retry(Service *svc) {
        uint64_t now = service_now_usec();
        Orphan *v;
        size_t n;

        pthread_mutex_lock(&svc->transient_lock);
        v = svc->orphans;
        n = svc->norphans;
        svc->orphans = NULL;
        svc->norphans = 0;
        pthread_mutex_unlock(&svc->transient_lock);
        for (size_t i = 0; i < n; i++) {
                if (now >= v[i].not_before_usec && transient_reap(svc, v[i].g))
                        group_unref(v[i].g);
                else
                        (void) orphan_add(svc, v[i].g, v[i].not_before_usec);
        }
        free(v);
}

void service_stopping(Service *svc) {
        atomic_store(&svc->stopping, true);
}

void service_transient_tick(Service *svc) {
        if (!atomic_load(&svc->stopping) && service_transient_orphans(svc) > 0)
                orphans_retry(svc);
}

/* The grace period of restored groups: MEMACCTD_TRANSIENT_GRACE_MSEC, for tests, or the default. */
static uint64_t grace_usec(void) {
        const char *e = getenv("MEMACCTD_TRANSIENT_GRACE_MSEC");
        char *end;
        unsigned long long v;

        if (!e || !*e)
                return SERVICE_TRANSIENT_GRACE_USEC;
        v = strtoull(e, &end, 10);
        if (*end || v > UINT64_MAX / 1000) {
                log_warning("Ignoring MEMACCTD_TRANSIENT_GRACE_MSEC=%s: not a number of ms", e);
                return SERVICE_TRANSIENT_GRACE_USEC;
        }
        return (uint64_t) v * 1000;
}

typedef struct RestoreContext {
        MemGroup **v;
        size_t n;
        bool oom;
} RestoreContext;

static int collect_transient(MemGroup *g, void *userdata) {
        RestoreContext *ctx = userdata;
        MemGroup **v;

        if (!atomic_load(&g->transient))
                return 0;
        v = realloc(ctx->v, (ctx->n + 1) * sizeof(*v));
        if (!v) {
                ctx->oom = true;
                return -ENOMEM;
        }
        ctx->v = v;
        v[ctx->n++] = group_ref(g);
        return 0;
}

int service_transient_restore(Service *svc) {
        RestoreContext ctx = {};
        uint64_t not_before = svc->started_usec + grace_usec();
        int r = 0;

        /* References taken in the read-side section keep the groups
         * valid past it. */
        core_read_lock();
        (void) group_walk(svc->core->root, collect_transient, &ctx);
        core_read_unlock();
        for (size_t i = 0; i < ctx.n; i++) {
                if (ctx.oom) {
                        group_unref(ctx.v[i]);
                        continue;
                }
                log_info("Restored transient group %s: waiting for its creator", ctx.v[i]->path);
                if (orphan_add(svc, ctx.v[i], not_before) < 0)
                        r = -ENOMEM;
        }
        free(ctx.v);
        return ctx.oom ? -ENOMEM : r;
}

void service_peer_gone(void *userdata, Peer *p) {
        Service *svc = userdata;
        bool had_orphans;

        /* The shutdown closes every connection: that is no creator going,
         * and the groups must outlive it (the next start's orphans). */
        if (atomic_load(&svc->stopping)) {
                for (size_t i = 0; i < p->ntransient; i++)
                        group_unref(p->transient[i]);
                p->ntransient = 0;
                return;
        }
        pthread_mutex_lock(&svc->transient_lock);
        had_orphans = svc->norphans > 0;
        pthread_mutex_unlock(&svc->transient_lock);
        if (had_orphans)
                orphans_retry(svc);
        for (size_t i = 0; i < p->ntransient; i++) {
                if (transient_reap(svc, p->transient[i]))
                        group_unref(p->transient[i]);
                else
                        (void) orphan_add(svc, p->transient[i], 0);
        }
        p->ntransient = 0;
}

void service_transient_done(Service *svc) {
        for (size_t i = 0; i < svc->norphans; i++)
                group_unref(svc->orphans[i].g);
        free(svc->orphans);
        svc->orphans = NULL;
        svc->norphans = 0;
        pthread_mutex_destroy(&svc->transient_lock);
}

unsigned service_transient_orphans(Service *svc) {
        unsigned n;

        pthread_mutex_lock(&svc->transient_lock);
        n = (unsigned) svc->norphans;
        pthread_mutex_unlock(&svc->transient_lock);
        return n;
}

/*
 * Take the orphan @g out of the table for @p, if it is one and @p's uid
 * may have it (its owner's, or root). Return: the reference the table
 * held, or NULL (not an orphan, or not @p's to claim).
 */
static MemGroup *orphan_claim(Service *svc, Peer *p, MemGroup *g) {
        MemGroup *taken = NULL;
        uid_t account = p->creds.account;

        if (!atomic_load(&g->transient) || (!authz_is_root(&p->who) && account != atomic_load(&g->owner)))
                return NULL;
        pthread_mutex_lock(&svc->transient_lock);
        for (size_t i = 0; i < svc->norphans; i++)
                if (svc->orphans[i].g == g) {
                        taken = g;
                        svc->orphans[i] = svc->orphans[--svc->norphans];
                        break;
                }
        pthread_mutex_unlock(&svc->transient_lock);
        return taken;
}

/* A transient create on an existing group: 1 with @p its creator again
 * when it is an orphan @p may claim; 0 to go on (EEXIST follows). */
static int transient_adopt(Service *svc, Peer *p, const char *path, Refusal *rf) {
        _cleanup_(group_unrefp) MemGroup *g = NULL;
        MemGroup *claimed;
        int r;

        if (mem_path_check(path, svc->core->config.max_depth, NULL) <= 0 ||
            group_get(svc->core, path, &g) < 0)
                return 0;
        claimed = orphan_claim(svc, p, g);
        if (!claimed)
                return 0;
        r = peer_add_transient(p, claimed);
        group_unref(claimed); /* peer_add_transient() took its own */
        if (r < 0) {
                (void) orphan_add(svc, group_ref(g), 0);
                return refusal_set(rf, r, "out of memory");
        }
        log_info("Transient group %s: claimed back by uid %u", path, (unsigned) p->creds.uid);
        return 1;
}

int service_create_transient_group(Service *svc, Peer *p, const char *path, const MemLimits *limits,
                                   bool has_owner, uid_t owner, Refusal *rf) {
        _cleanup_(group_unrefp) MemGroup *g = NULL;
        Refusal ignored;
        int r;

        if (p->internal)
                return refusal_set(rf, -EINVAL, "%s: the daemon's own groups are never transient",
                                   path ? path : "");
        if (path && *path) {
                r = transient_adopt(svc, p, path, rf);
                if (r != 0)
                        return r < 0 ? r : 0;
        }
        r = service_create_group(svc, p, path, limits, has_owner, owner, rf);
        if (r < 0)
                return r;
        /* Just created: only a racing remove can take it away again. */
        if (group_get(svc->core, path, &g) < 0)
                return 0;
        /* Marked, and saved again with the mark before the OK (the
         * create's save may have run already): a restart keeps it
         * transient. */
        atomic_store(&g->transient, true);
        service_committed(svc, p, path);
        r = peer_add_transient(p, g);
        if (r < 0) {
                refusal_init(&ignored);
                (void) service_remove_group(svc, &svc->daemon_peer, path, &ignored);
                return refusal_set(rf, r, "out of memory");
        }
        return 0;
}
