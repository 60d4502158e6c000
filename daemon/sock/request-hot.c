/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Hot socket requests (request-hot.h)
 *
 * A Charge or Uncharge decoded by the hand codec is served as
 * request_serve() serves it (request.c: on_charge(), on_uncharge() and
 * the frame around them), in the same order: the request counted, the
 * clock read, the one service call, its count and duration, the
 * Response of its id with the status, the refusal's words and refusing
 * group, or the ChargeReply. The string check of request_serve() has
 * nothing to find here: the codec declines a string holding NUL. A
 * frame above the frame limit, or one carrying a descriptor, is left
 * to request_serve(), which answers both.
 */

#include <assert.h>

#include "base/selfstats.h"
#include "sock/request-hot.h"
#include "sock/wire-hot.h"
#include "status.h"

int request_hot_serve(Service *svc, Peer *p, const uint8_t *body, size_t len, int fd,
                      uint8_t buf[static REQUEST_HOT_REPLY_MAX], size_t *ret_len, uint64_t *ret_id,
                      uint64_t *clock_nsec) {
        WireHotRequest req;
        WireHotReply reply = {};
        ServiceChargeResult res;
        ServiceCharge c;
        uint64_t start_nsec;
        Refusal rf;
        int r;

        if (fd >= 0 || len > service_max_frame(svc) || wire_hot_decode(body, len, &req) <= 0)
                return 0;

        c = (ServiceCharge) {
                .path = req.has_path ? req.path : NULL,
                .has_bytes = req.has_bytes,
                .bytes = req.bytes,
                .stat = req.has_stat ? req.stat : NULL,
                .keep = req.keep,
                .force = req.force,
                .stock = req.stock,
                .region = req.has_region ? req.region : NULL,
                .can_wait = true,
        };
        refusal_init(&rf);
        service_request_served(svc);
        start_nsec = *clock_nsec != 0 ? *clock_nsec : selfstats_clock_nsec();
        if (req.op == WIRE_HOT_CHARGE)
                r = service_charge(svc, p, &c, &res, &rf);
        else
                r = service_uncharge(svc, p, &c, &rf);
        if (r == -EINPROGRESS) {
                /* Held while reclaim runs (request_serve()'s REQUEST_WAIT). */
                *clock_nsec = 0;
                *ret_id = req.id;
                return REQUEST_WAIT;
        }
        *clock_nsec = selfstats_request(SERVICE_TRANSPORT_SOCKET, req.op == WIRE_HOT_CHARGE ? SERVICE_OP_CHARGE : SERVICE_OP_UNCHARGE,
                          status_from_errno(r < 0 ? r : 0), start_nsec);

        reply.id = req.id;
        reply.status = (int32_t) status_from_errno(r < 0 ? r : 0);
        if (r < 0) {
                reply.message = rf.message;
                reply.refused_path = rf.refused_by[0] ? rf.refused_by : NULL;
        } else if (req.op == WIRE_HOT_CHARGE) {
                reply.charge = true;
                reply.over_high = res.over_high;
                reply.throttle_usec = res.throttle_usec;
                reply.over_max = res.over_max;
                reply.margin = res.margin;
                reply.stock_index = res.stock_index;
        }
        *ret_len = wire_hot_reply_frame(&reply, buf, REQUEST_HOT_REPLY_MAX);
        /* REQUEST_HOT_REPLY_MAX bounds every reply: the refusal's strings are bounded arrays. */
        assert(*ret_len > 0);
        *ret_id = req.id;
        return r == -EPROTO ? -EPROTO : 1;
}
