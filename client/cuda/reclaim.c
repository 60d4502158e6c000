/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Reclaim in the interposer (reclaim.h).
 *
 * Requests arrive on the session's socket; libmemacct serves them from
 * memacct_process() on whichever thread calls it. The program's threads
 * are the program's, so the interposer starts one thread of its own, on
 * the first declaration, that waits on the socket and serves: a poll()
 * with a timeout, since the socket changes when libmemacct reconnects.
 * It trims the device's pools (hooks-pool.c), whose charges follow.
 */

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "account.h"
#include "hooks.h"
#include "memacct.h"
#include "reclaim.h"

static _Atomic bool declared[MA_DEVICES_MAX];
static _Atomic bool serving;

static int64_t on_request(memacct *m, uint64_t bytes, const char *region, void *userdata) {
        (void) m, (void) region;
        return (int64_t) ma_pools_trim((int) (intptr_t) userdata, bytes);
}

static void *serve(void *userdata) {
        memacct *m = userdata;

        for (;;) {
                struct pollfd pfd = { .fd = memacct_fd(m), .events = POLLIN };

                if (pfd.fd < 0 || poll(&pfd, 1, 1000) > 0)
                        (void) memacct_process(m, pfd.fd < 0 ? 1000 : 0);
        }
        return NULL;
}

void ma_reclaim_declare(int device) {
        char region[96];
        pthread_attr_t attr;
        pthread_t thread;
        memacct *m;

        if (device < 0 || device >= MA_DEVICES_MAX || atomic_exchange(&declared[device], true))
                return;
        m = ma_session();
        if (!m || ma_region_name(device, region, sizeof(region)) < 0 ||
            memacct_set_reclaimable(m, region, on_request, (void *) (intptr_t) device) < 0) {
                atomic_store(&declared[device], false); /* tried again at the next growth */
                return;
        }
        if (atomic_exchange(&serving, true))
                return;
        /* Detached: it serves as long as the process lives. */
        pthread_attr_init(&attr);
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        if (pthread_create(&thread, &attr, serve, m) != 0)
                atomic_store(&serving, false);
        pthread_attr_destroy(&attr);
}

void ma_reclaim_atfork_child(void) {
        for (int i = 0; i < MA_DEVICES_MAX; i++)
                atomic_store_explicit(&declared[i], false, memory_order_relaxed);
        atomic_store_explicit(&serving, false, memory_order_relaxed);
}
