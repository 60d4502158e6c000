/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The daemon at a glance (memacctctl info, as redis-cli INFO): version,
 * uptime, sessions, groups, requests served, and the saver's state. The
 * request count is one relaxed counter every transport thread adds to:
 * nothing is ordered by it, a reader only wants a recent value, and one
 * cache line bouncing between the workers costs one add per request,
 * which the request's own work dwarfs.
 */

#include <stdio.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "service/service-internal.h"

uint64_t service_now_usec(void) {
        return clock_now_usec(CLOCK_MONOTONIC);
}

void service_request_served(Service *svc) {
        atomic_fetch_add_explicit(&svc->requests, 1, memory_order_relaxed);
}

/* The saver's state into @ret. */
static void state_fill(Service *svc, ServiceInfo *ret) {
        SaverStatus st;

        if (!svc->saver) {
                ret->state = "none";
                return;
        }
        saver_status(svc->saver, &st);
        ret->saves = st.saves;
        ret->last_save_usec = st.last_save_usec;
        if (st.error < 0) {
                ret->state = "failing";
                snprintf(ret->state_cause, sizeof(ret->state_cause), "%s: %s", st.cause, strerror(-st.error));
        } else
                ret->state = st.changed > st.saved ? "saving" : "saved";
}

int service_get_info(Service *svc, Peer *p, ServiceInfo *ret, Refusal *rf) {
        if (service_read_access(svc) == READ_ACCESS_ROOT && !authz_is_root(&p->who))
                return refusal_set(rf, -EPERM, "only root reads the daemon's state ([access] read = root)");
        *ret = (ServiceInfo) {
                .version = "memacctd " MEMACCT_VERSION,
                .uptime_usec = service_now_usec() - svc->started_usec,
                .requests = atomic_load_explicit(&svc->requests, memory_order_relaxed),
                .sessions = service_session_count(svc),
                .groups = service_group_count(svc),
                .state = "",
        };
        state_fill(svc, ret);
        return 0;
}
