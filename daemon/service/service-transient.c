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
 * touched (the reference tells them apart). Transient groups are saved
 * like any other; after a restart they are ordinary groups.
 */

#include <pthread.h>
#include <stdlib.h>

#include "service/log.h"
#include "service/service-internal.h"

/* Remove @g if it is still the group at its path. Return: true when it is
 * done with (removed, or gone already), false when it must wait (busy, or
 * the state cannot be saved now). */
static bool transient_reap(Service *svc, MemGroup *g) {
        _cleanup_(group_unrefp) MemGroup *cur = NULL;
        Refusal rf;
        int r;

        if (group_get(svc->core, g->path, &cur) < 0 || cur != g)
                return true;
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
static void orphan_add(Service *svc, MemGroup *g) {
        MemGroup **v;

        pthread_mutex_lock(&svc->transient_lock);
        v = realloc(svc->orphans, (svc->norphans + 1) * sizeof(*v));
        if (v) {
                svc->orphans = v;
                v[svc->norphans++] = g;
        }
        pthread_mutex_unlock(&svc->transient_lock);
        if (!v) {
                log_warning("Transient group %s: left in place (out of memory)", g->path);
                group_unref(g);
        }
}

/* Try the orphans again. They are taken out of the table for the
 * removals, which take core locks, so that the table's lock is never
 * held across them; those still busy go back. */
static void orphans_retry(Service *svc) {
        MemGroup **v;
        size_t n;

        pthread_mutex_lock(&svc->transient_lock);
        v = svc->orphans;
        n = svc->norphans;
        svc->orphans = NULL;
        svc->norphans = 0;
        pthread_mutex_unlock(&svc->transient_lock);
        for (size_t i = 0; i < n; i++) {
                if (transient_reap(svc, v[i]))
                        group_unref(v[i]);
                else
                        orphan_add(svc, v[i]);
        }
        free(v);
}

void service_peer_gone(void *userdata, Peer *p) {
        Service *svc = userdata;
        bool had_orphans;

        pthread_mutex_lock(&svc->transient_lock);
        had_orphans = svc->norphans > 0;
        pthread_mutex_unlock(&svc->transient_lock);
        if (had_orphans)
                orphans_retry(svc);
        for (size_t i = 0; i < p->ntransient; i++) {
                if (transient_reap(svc, p->transient[i]))
                        group_unref(p->transient[i]);
                else
                        orphan_add(svc, p->transient[i]);
        }
        p->ntransient = 0;
}

void service_transient_done(Service *svc) {
        for (size_t i = 0; i < svc->norphans; i++)
                group_unref(svc->orphans[i]);
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

int service_create_transient_group(Service *svc, Peer *p, const char *path, const MemLimits *limits,
                                   bool has_owner, uid_t owner, Refusal *rf) {
        _cleanup_(group_unrefp) MemGroup *g = NULL;
        Refusal ignored;
        int r;

        if (p->internal)
                return refusal_set(rf, -EINVAL, "%s: the daemon's own groups are never transient",
                                   path ? path : "");
        r = service_create_group(svc, p, path, limits, has_owner, owner, rf);
        if (r < 0)
                return r;
        /* Just created: only a racing remove can take it away again. */
        if (group_get(svc->core, path, &g) < 0)
                return 0;
        r = peer_add_transient(p, g);
        if (r < 0) {
                refusal_init(&ignored);
                (void) service_remove_group(svc, &svc->daemon_peer, path, &ignored);
                return refusal_set(rf, r, "out of memory");
        }
        return 0;
}
