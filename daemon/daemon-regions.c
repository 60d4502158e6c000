/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The device memory regions memacctd.conf declares ([regions]), applied
 * at start (after the state is restored) and at every reload, through the
 * service as the daemon itself: a registration is audited and saved as
 * root's would be.
 *
 * The file adds; it never takes away. A declared region that is missing
 * is registered. One registered with another capacity (restored from the
 * state, or declared so before a reload) takes the file's while nothing
 * is charged to it: removed and registered again, as a driver would,
 * which drops the limits its groups had in it, as the kernel's dmem
 * drops its pools with a region. With something charged it keeps its
 * capacity, with a warning, until a reload finds it empty. A region the
 * file no longer names stays registered with its groups' limits and kept
 * charges: a line deleted from a file is no reason to lose them, and
 * memacctctl region remove is there to do it on purpose.
 */

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "base/log.h"
#include "daemon-internal.h"
#include "macro.h"

static const char *capacity_text(uint64_t capacity, char *buf, size_t size) {
        if (capacity == UINT64_MAX)
                return "max";
        snprintf(buf, size, "%" PRIu64, capacity);
        return buf;
}

/* The registered region named @name in @have (@n of them), or NULL. */
static const MemRegionDesc *find_region(const MemRegionDesc *have, int n, const char *name) {
        for (int i = 0; i < n; i++)
                if (strcmp(have[i].name, name) == 0)
                        return &have[i];
        return NULL;
}

/* A registered region @d whose capacity differs from @want's: re-registered when nothing is charged. */
static int region_recapacity(Service *svc, Peer *p, const MemRegionDesc *d, const ConfigRegion *want) {
        char was[32], now[32];
        Refusal rf;
        int r;

        refusal_init(&rf);
        capacity_text(d->capacity, was, sizeof(was));
        capacity_text(want->capacity, now, sizeof(now));
        r = d->current > 0 ? -EBUSY : service_remove_region(svc, p, want->name, &rf);
        if (r == -EBUSY) {
                /* Not an error: the file is applied again at the next reload. */
                log_warning("[regions] region %s: capacity %s declared, but %" PRIu64 " bytes are charged to it: "
                            "it keeps its capacity %s until nothing is", want->name, now, d->current, was);
                return 0;
        }
        if (r < 0)
                return log_error_errno(r, "[regions] region %s: cannot change its capacity from %s to %s: %s",
                                       want->name, was, now, rf.message);
        r = service_add_region(svc, p, want->name, want->capacity, &rf);
        if (r < 0)
                return log_error_errno(r, "[regions] region %s: removed to change its capacity from %s to %s, "
                                       "and cannot be registered again: %s", want->name, was, now, rf.message);
        log_notice("[regions] region %s: capacity changed from %s to %s%s", want->name, was, now,
                   d->groups > 1 ? "; the limits its groups had in it are dropped" : "");
        return 0;
}

int daemon_regions_apply(Service *svc, const Config *c) {
        Peer *p = service_daemon_peer(svc);
        MemRegionDesc have[MEM_REGION_MAX];
        Refusal rf;
        int n, r, ret = 0;

        if (c->n_regions == 0)
                return 0;
        refusal_init(&rf);
        n = service_list_regions(svc, p, have, ELEMENTSOF(have), &rf);
        if (n < 0)
                return log_error_errno(n, "[regions] cannot list the regions: %s", rf.message);
        for (unsigned i = 0; i < c->n_regions; i++) {
                const ConfigRegion *want = &c->regions[i];
                const MemRegionDesc *d = find_region(have, n, want->name);

                if (d && d->capacity == want->capacity)
                        continue;
                if (d)
                        r = region_recapacity(svc, p, d, want);
                else {
                        refusal_init(&rf);
                        r = service_add_region(svc, p, want->name, want->capacity, &rf);
                        if (r < 0)
                                r = log_error_errno(r, "[regions] region %s cannot be registered: %s", want->name,
                                                    rf.message);
                }
                /* Every one is tried; the first failure is the answer. */
                if (r < 0 && ret == 0)
                        ret = r;
        }
        return ret;
}
