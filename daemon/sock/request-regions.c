/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Socket requests on device memory regions (request-internal.h): AddRegion,
 * RemoveRegion, ListRegions, Transfer and EvictValuable, each one service
 * call (service.h, "device memory regions") between its decoding and its
 * encoding, as request.c serves every other operation. The region fields
 * of the older messages (Charge, SetLimits, GetGroup ...) are passed on by
 * their handlers in request.c and request-hot.c.
 */

#include <stdlib.h>

#include "macro.h"
#include "sock/request-internal.h"

int request_on_add_region(Request *x, const Memacct__V1__AddRegion *m) {
        /* An absent capacity is no bound, as "max" is UINT64_MAX everywhere on the wire. */
        return service_add_region(x->svc, x->peer, m->name, m->has_capacity ? m->capacity : UINT64_MAX, &x->rf);
}

int request_on_remove_region(Request *x, const Memacct__V1__RemoveRegion *m) {
        return service_remove_region(x->svc, x->peer, m->name, &x->rf);
}

/* A RegionList, its items and the descriptions they point into: one
 * allocation, freed by request_done() (MEM_REGION_MAX always fit). */
typedef struct WireRegionList {
        Memacct__V1__RegionList list;
        Memacct__V1__Region *ptrs[MEM_REGION_MAX];
        Memacct__V1__Region items[MEM_REGION_MAX];
        MemRegionDesc descs[MEM_REGION_MAX];
} WireRegionList;

int request_on_list_regions(Request *x) {
        WireRegionList *w;
        int n;

        w = malloc(sizeof(*w));
        if (!w)
                return refusal_set(&x->rf, -ENOMEM, "out of memory");
        x->regions = w;
        n = service_list_regions(x->svc, x->peer, w->descs, MEM_REGION_MAX, &x->rf);
        if (n < 0)
                return n;
        w->list = (Memacct__V1__RegionList) MEMACCT__V1__REGION_LIST__INIT;
        for (int i = 0; i < n; i++) {
                Memacct__V1__Region *r = &w->items[i];

                memacct__v1__region__init(r);
                r->name = w->descs[i].name;
                r->has_capacity = r->has_current = r->has_peak = r->has_groups = true;
                r->capacity = w->descs[i].capacity;
                r->current = w->descs[i].current;
                r->peak = w->descs[i].peak;
                r->groups = w->descs[i].groups;
                w->ptrs[i] = r;
        }
        w->list.regions = w->ptrs;
        w->list.n_regions = (size_t) n;
        x->resp.result_case = MEMACCT__V1__RESPONSE__RESULT_REGIONS;
        x->resp.regions = &w->list;
        return 0;
}

int request_on_transfer(Request *x, const Memacct__V1__Transfer *m) {
        if (!m->has_bytes)
                return refusal_set(&x->rf, -EINVAL, "Transfer: bytes is required");
        return service_transfer(x->svc, x->peer, m->from_group, m->to_group, m->bytes, m->region, m->stat,
                                &x->rf);
}

int request_on_evict_valuable(Request *x, const Memacct__V1__EvictValuable *m) {
        static const Memacct__V1__EvictAnswer answers[] = {
                [SERVICE_EVICT_NO] = MEMACCT__V1__EVICT_ANSWER__EVICT_ANSWER_NO,
                [SERVICE_EVICT_YES] = MEMACCT__V1__EVICT_ANSWER__EVICT_ANSWER_YES,
                [SERVICE_EVICT_HIT_LOW] = MEMACCT__V1__EVICT_ANSWER__EVICT_ANSWER_HIT_LOW,
        };
        Memacct__V1__EvictReply *er = &x->res.er;
        int r;

        r = service_evict_valuable(x->svc, x->peer, m->limit, m->candidate, m->region, m->ignore_low, &x->rf);
        if (r < 0)
                return r;
        if ((size_t) r >= ELEMENTSOF(answers))
                return refusal_set(&x->rf, -EIO, "an eviction answer the socket cannot say");
        *er = (Memacct__V1__EvictReply) MEMACCT__V1__EVICT_REPLY__INIT;
        er->has_answer = true;
        er->answer = answers[r];
        x->resp.result_case = MEMACCT__V1__RESPONSE__RESULT_EVICT;
        x->resp.evict = er;
        return 0;
}
