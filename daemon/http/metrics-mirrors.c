/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The cgroup label of a scrape: group -> kernel cgroup, one copy per scrape
 *
 * The mirror table belongs to mirror.c, behind its mutex. A scrape
 * takes one copy of it before the walk of the tree (service_list_rules()
 * with mirrors: the placement rules' lock, then the cgroup object's lock,
 * each released before the next, and both before service_list_groups()
 * starts), sorts it by group and searches it once per group. So the
 * scrape never holds the cgroup lock while it reads groups, and never
 * calls into the cgroup code from the walk's callback: the only order is
 * cgroup lock -> core (as mirror-place.c has it), never the reverse. A
 * mirror made or removed during the walk shows in the next scrape.
 */

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "http/metrics-internal.h"

typedef struct Gather {
        MetricsMirror *v;
        size_t n, cap;
        size_t cgroup_max;
} Gather;

/* ServiceRuleFn: the mirrors only, copied (the strings are the lister's). */
static int gather(void *userdata, const char *cgroup, const char *group, bool mirror, unsigned flags) {
        Gather *g = userdata;
        MetricsMirror *m;

        (void) flags;
        if (!mirror)
                return 0;
        if (g->n == g->cap) {
                size_t cap = g->cap ? g->cap * 2 : 16;

                m = reallocarray(g->v, cap, sizeof(*g->v));
                if (!m)
                        return -ENOMEM;
                g->v = m;
                g->cap = cap;
        }
        m = &g->v[g->n];
        m->group = strdup(group);
        m->cgroup = strdup(cgroup);
        if (!m->group || !m->cgroup) {
                free(m->group);
                free(m->cgroup);
                return -ENOMEM;
        }
        g->n++;
        if (strlen(cgroup) > g->cgroup_max)
                g->cgroup_max = strlen(cgroup);
        return 0;
}

/* By group, then cgroup: of two cgroups mirrored into one group, the first is the label. */
static int cmp_mirror(const void *x, const void *y) {
        const MetricsMirror *a = x, *b = y;
        int d = strcmp(a->group, b->group);

        return d != 0 ? d : strcmp(a->cgroup, b->cgroup);
}

int metrics_mirrors_load(Service *svc, MetricsMirrors *ret) {
        Gather g = {};
        Refusal rf;
        int r;

        refusal_init(&rf);
        r = service_list_rules(svc, service_daemon_peer(svc), true, gather, &g, &rf);
        if (r < 0) {
                *ret = (MetricsMirrors) { .v = g.v, .n = g.n };
                metrics_mirrors_done(ret);
                return -ENOMEM;
        }
        if (g.n > 1) /* g.v is NULL when there is none: qsort() must not see it */
                qsort(g.v, g.n, sizeof(*g.v), cmp_mirror);
        *ret = (MetricsMirrors) { .v = g.v, .n = g.n, .cgroup_max = g.cgroup_max };
        return 0;
}

const char *metrics_mirrors_find(const MetricsMirrors *t, const char *group) {
        size_t lo = 0, hi = t->n;

        /* The lowest entry of @group: the first cgroup in order. */
        while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;

                if (strcmp(t->v[mid].group, group) < 0)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        return lo < t->n && strcmp(t->v[lo].group, group) == 0 ? t->v[lo].cgroup : NULL;
}

void metrics_mirrors_done(MetricsMirrors *t) {
        for (size_t i = 0; i < t->n; i++) {
                free(t->v[i].group);
                free(t->v[i].cgroup);
        }
        free(t->v);
        *t = (MetricsMirrors) {};
}
