/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * What the persistent fuzz targets that keep a Service across inputs
 * share (header-only: each target is one file plus the replayer): the
 * root's limits read once, and the reset after an input, through the
 * service as the daemon itself: every group removed, children first, the
 * kept charges with them, the root's own kept charges released, its
 * limits restored, every device region the input added removed (the
 * root's kept charges there released first). Whatever an input
 * did, its peers gone, the reset must succeed and leave the root holding
 * nothing: a property checked after every input (abort() otherwise).
 */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz-rcu.h"
#include "service/service.h"

typedef struct FuzzPaths {
        char **v;
        size_t n, cap;
} FuzzPaths;

static inline int fuzz_collect_path(void *userdata, const char *path, const MemGroupInfo *info) {
        FuzzPaths *l = userdata;

        (void) info;
        if (l->n == l->cap) {
                l->cap = l->cap ? l->cap * 2 : 64;
                l->v = realloc(l->v, l->cap * sizeof(*l->v));
                if (!l->v)
                        abort();
        }
        if (!(l->v[l->n++] = strdup(path)))
                abort();
        return 0;
}

static inline int fuzz_read_info(void *userdata, const char *path, const MemGroupInfo *info) {
        (void) path;
        *(MemGroupInfo *) userdata = *info;
        return 0;
}

/* The root's MemGroupInfo, read as the daemon. */
static inline MemGroupInfo fuzz_root_info(Service *svc) {
        MemGroupInfo info;
        Refusal rf;

        refusal_init(&rf);
        if (service_get_group(svc, service_daemon_peer(svc), "/", NULL, 0, fuzz_read_info, &info, &rf) < 0)
                abort();
        return info;
}

/* The root's four limits now, as a MemLimits that sets them all. */
static inline MemLimits fuzz_root_limits(Service *svc) {
        MemGroupInfo root = fuzz_root_info(svc);

        return (MemLimits) { .set = MEM_LIMIT_MAX | MEM_LIMIT_HIGH | MEM_LIMIT_LOW | MEM_LIMIT_MIN,
                             .max = root.max, .high = root.high, .low = root.low, .min = root.min };
}

/*
 * The device regions an input added: the root's kept charges in each
 * released, then the region removed, which is refused while anything is
 * still charged to it. A region left in the core would make the next
 * input's AddRegion answer otherwise than on a fresh daemon.
 */
static inline void fuzz_regions_reset(Service *svc) {
        Peer *daemon = service_daemon_peer(svc);
        MemRegionDesc regions[MEM_REGION_MAX];
        MemGroupInfo root = fuzz_root_info(svc);
        Refusal rf;
        int n;

        refusal_init(&rf);
        for (unsigned i = 0; i < root.nr_regions; i++) {
                ServiceCharge c = { .path = "/", .bytes = root.regions[i].kept, .has_bytes = true, .keep = true,
                                    .region = root.regions[i].name };

                if (c.bytes && service_uncharge(svc, daemon, &c, &rf) < 0) {
                        fprintf(stderr, "cannot release the root's kept charge in %s: %s\n", c.region, rf.message);
                        abort();
                }
        }
        n = service_list_regions(svc, daemon, regions, MEM_REGION_MAX, &rf);
        if (n < 1)
                abort();
        for (int i = 1; i < n; i++) /* regions[0] is memory */
                if (service_remove_region(svc, daemon, regions[i].name, &rf) < 0) {
                        fprintf(stderr, "region %s holds %llu bytes with no group and no session: %s\n",
                                regions[i].name, (unsigned long long) regions[i].current, rf.message);
                        abort();
                }
}

/*
 * After an input whose peers are all freed: no session is left; remove
 * every group (the list is parents first: remove from its end), check
 * that the root holds nothing, restore its limits to @root_limits, and
 * run the RCU callbacks, so that the input frees what it allocated.
 */
static inline void fuzz_service_reset(Service *svc, const MemLimits *root_limits) {
        Peer *daemon = service_daemon_peer(svc);
        FuzzPaths l = {};
        MemGroupInfo root;
        Refusal rf;

        if (service_session_count(svc) != 0) {
                fprintf(stderr, "%u sessions outlive their peers\n", service_session_count(svc));
                abort();
        }
        refusal_init(&rf);
        if (service_list_groups(svc, daemon, "/", SERVICE_READ_RECURSIVE | SERVICE_READ_PATHS, fuzz_collect_path,
                                &l, &rf) < 0)
                abort();
        for (size_t i = l.n; i-- > 0;) {
                if (strcmp(l.v[i], "/") != 0 && service_remove_group(svc, daemon, l.v[i], &rf) < 0) {
                        fprintf(stderr, "cannot remove %s: %s\n", l.v[i], rf.message);
                        abort();
                }
                free(l.v[i]);
        }
        free(l.v);
        if (service_group_count(svc) != 1)
                abort();
        fuzz_regions_reset(svc);
        /* The root's own kept charges stay with it: release them. */
        root = fuzz_root_info(svc);
        for (int i = 0; i < _MEM_STAT_MAX; i++) {
                ServiceCharge c = { .path = "/", .bytes = root.kept[i], .has_bytes = true,
                                    .stat = mem_stat_item_to_string((MemStatItem) i), .keep = true };

                if (root.kept[i] && service_uncharge(svc, daemon, &c, &rf) < 0) {
                        fprintf(stderr, "cannot release the root's kept %s: %s\n", c.stat, rf.message);
                        abort();
                }
        }
        root = fuzz_root_info(svc);
        if (root.current != 0) {
                fprintf(stderr, "the root holds %llu bytes with no group and no session\n",
                        (unsigned long long) root.current);
                abort();
        }
        if (root.max != root_limits->max || root.high != root_limits->high || root.low != root_limits->low ||
            root.min != root_limits->min) {
                if (service_set_limits(svc, daemon, "/", root_limits, true, &rf) < 0) {
                        fprintf(stderr, "cannot restore the root's limits: %s\n", rf.message);
                        abort();
                }
        }
        urcu_memb_barrier();
}
