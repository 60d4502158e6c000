/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Socket requests of reclaim (request-internal.h): SetReclaimable,
 * ReclaimDone and Reclaim, each one service call (service.h,
 * service_set_reclaimable(), service_reclaim_done(), service_reclaim()). The ReclaimRequests the server sends are
 * encoded with the events (wire.c, wire_event_frame()); a Charge that
 * waits for reclaim is held by the connection (conn.c).
 */

#include "sock/request-internal.h"

int request_on_set_reclaimable(Request *x, const Memacct__V1__SetReclaimable *m) {
        return service_set_reclaimable(x->svc, x->peer, m->region, m->stat, !m->has_on || m->on, &x->rf);
}

int request_on_reclaim_done(Request *x, const Memacct__V1__ReclaimDone *m) {
        if (!m->has_id)
                return refusal_set(&x->rf, -EINVAL, "id is required");
        return service_reclaim_done(x->svc, x->peer, m->id, m->cannot);
}

int request_on_reclaim(Request *x, const Memacct__V1__Reclaim *m) {
        ServiceReclaim rq = {
                .path = m->path,
                .region = m->region,
                .bytes = m->bytes,
                .can_wait = true,
        };
        uint64_t released;
        int r;

        if (!m->has_bytes)
                return refusal_set(&x->rf, -EINVAL, "bytes is required");
        r = service_reclaim(x->svc, x->peer, &rq, &released, &x->rf);
        if (r < 0)
                return r;
        x->res.reclaimed = (Memacct__V1__ReclaimReply) MEMACCT__V1__RECLAIM_REPLY__INIT;
        x->res.reclaimed.has_released = true;
        x->res.reclaimed.released = released;
        x->resp.result_case = MEMACCT__V1__RESPONSE__RESULT_RECLAIMED;
        x->resp.reclaimed = &x->res.reclaimed;
        return 0;
}
