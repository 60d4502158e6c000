/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Deadlines of the client's waits: the one place that reads the clock.
 * Everything is CLOCK_MONOTONIC in ns, the clock sd-bus's timeouts are on
 * too, so that a wall clock step never ends or stretches a wait. The time
 * left is rounded up, so a loop never polls with 0 ms just before its
 * deadline and spins.
 */

#include <time.h>

#include "client-deadline.h"
#include "clock.h"
#include "macro.h"

uint64_t client_now_nsec(void) {
        return clock_now_nsec(CLOCK_MONOTONIC);
}

uint64_t client_deadline_nsec(int timeout_msec) {
        if (timeout_msec < 0)
                return CLIENT_NO_DEADLINE;
        return client_now_nsec() + (uint64_t) timeout_msec * 1000000u;
}

int client_deadline_left_msec(uint64_t deadline_nsec) {
        uint64_t now;

        if (deadline_nsec == CLIENT_NO_DEADLINE)
                return -1;
        now = client_now_nsec();
        if (now >= deadline_nsec)
                return 0;
        return (int) MIN((deadline_nsec - now + 999999) / 1000000, (uint64_t) INT32_MAX);
}
