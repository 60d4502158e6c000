/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Socket requests of reclaim (request-internal.h): SetReclaimable and
 * ReclaimDone, each one service call (service.h, service_set_reclaimable(),
 * service_reclaim_done()). The ReclaimRequests the server sends are
 * encoded with the events (wire.c, wire_event_frame()); a Charge that
 * waits for reclaim is held by the connection (conn.c).
 */

#include "sock/request-internal.h"

int request_on_set_reclaimable(Request *x, const Memacct__V1__SetReclaimable *m) {
        return service_set_reclaimable(x->svc, x->peer, m->region, !m->has_on || m->on, &x->rf);
}

int request_on_reclaim_done(Request *x, const Memacct__V1__ReclaimDone *m) {
        if (!m->has_id)
                return refusal_set(&x->rf, -EINVAL, "id is required");
        return service_reclaim_done(x->svc, x->peer, m->id, m->cannot);
}
