/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Who holds what: the sessions of every transport, as `memacctctl
 * sessions` lists them (like redis-cli CLIENT LIST). The registry's walk
 * runs under its peers lock, so it only copies: pid, uid, comm, the
 * attached group's path (read under RCU: a move may replace the group at
 * any time, and the listing shows one or the other), the bytes held and
 * the stock. The copies go to the caller after the lock is dropped, so a
 * slow encoder holds up no connect or disconnect.
 *
 * Who sees what, one rule: root every session; another uid the sessions
 * of its own uid and those attached in a subtree delegated to it (whose
 * charges it answers for, as it may read and modify there).
 */

#include <stdlib.h>
#include <string.h>

#include "core/group.h"
#include "core/session.h"
#include "service/service-internal.h"

/* One session copied under the lock: its strings are its own. */
typedef struct Entry {
        ServiceSession s;
        char comm[16];
        char *group; /* NULL: not attached */
} Entry;

typedef struct Snapshot {
        Entry *v;
        size_t n, cap;
        const AuthzWho *who; /* the caller */
        MemGroup *top; /* NULL: all */
        int r;
} Snapshot;

/* Bytes of @s's stock page still unused, at most what @s holds, item by item. */
static uint64_t stock_bytes(Peer *p) {
        _Atomic uint64_t *page = p->stock_page;
        uint64_t sum = 0;

        if (!page)
                return 0;
        for (int i = 0; i < _MEM_STAT_MAX; i++) {
                /* Relaxed: the client writes it at will; a report needs no order. */
                uint64_t v = atomic_load_explicit(&page[i], memory_order_relaxed);
                uint64_t held = session_held(p->session, (MemStatItem) i);

                sum += v < held ? v : held;
        }
        return sum;
}

static int snapshot_one(Peer *p, void *userdata) {
        Snapshot *sn = userdata;
        MemSession *s = p->session;
        MemGroup *g;
        char *path = NULL;
        bool visible;
        uint64_t bytes = 0;

        core_read_lock();
        g = atomic_load(&s->group);
        if (sn->who->confined)
                visible = g && sn->who->scope && group_is_descendant(g, sn->who->scope);
        else
                visible = sn->who->uid == 0 || p->creds.uid == sn->who->uid ||
                          (g && group_is_delegated_to(g, sn->who->uid));
        if (visible && sn->top)
                visible = g && group_is_descendant(g, sn->top);
        if (visible && g && !(path = strdup(g->path)))
                sn->r = -ENOMEM;
        core_read_unlock();
        if (!visible || sn->r < 0)
                return sn->r;
        if (sn->n == sn->cap) {
                size_t cap = sn->cap ? sn->cap * 2 : 16;
                Entry *v = realloc(sn->v, cap * sizeof(*v));

                if (!v) {
                        free(path);
                        return sn->r = -ENOMEM;
                }
                sn->v = v;
                sn->cap = cap;
        }
        for (int i = 0; i < _MEM_STAT_MAX; i++)
                bytes += session_held(s, (MemStatItem) i);
        sn->v[sn->n] = (Entry) {
                .s = {
                        .pid = p->creds.pid,
                        .uid = p->creds.uid,
                        .transport = p->creds.transport == SERVICE_TRANSPORT_BUS ? "bus" : "socket",
                        .bytes = bytes,
                        .stock = stock_bytes(p),
                        .reclaimable = p->reclaim.parts != 0 || p->reclaim.items != 0,
                        .reclaim_asked = p->reclaim.asked,
                        .reclaim_released = p->reclaim.released,
                        .reclaim_late = p->reclaim.late,
                },
                .group = path,
        };
        memcpy(sn->v[sn->n].comm, p->comm, sizeof(p->comm));
        sn->v[sn->n].comm[15] = 0;
        sn->n++;
        return 0;
}

int service_list_sessions(Service *svc, Peer *p, const char *path, ServiceSessionFn fn, void *userdata,
                          Refusal *rf) {
        _cleanup_(group_unrefp) MemGroup *top = NULL;
        Snapshot sn = { .who = &p->who };
        int r = 0;

        if (path && *path) {
                r = service_lookup(svc, path, &top, rf);
                if (r < 0)
                        return r;
                sn.top = top;
        }
        (void) registry_for_each_session(svc->registry, snapshot_one, &sn);
        r = sn.r;
        if (r < 0)
                r = refusal_set(rf, r, "out of memory");
        for (size_t i = 0; r >= 0 && i < sn.n; i++) {
                /* The array grows no more: point into it now. */
                sn.v[i].s.comm = sn.v[i].comm;
                sn.v[i].s.group = sn.v[i].group ? sn.v[i].group : "";
                r = fn(userdata, &sn.v[i].s);
                if (r == -ENOSPC)
                        r = refusal_set(rf, r, "too many sessions for one reply; list a subtree");
                else if (r < 0)
                        r = refusal_set(rf, r, "out of memory");
        }
        for (size_t i = 0; i < sn.n; i++)
                free(sn.v[i].group);
        free(sn.v);
        return r;
}
