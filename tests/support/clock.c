/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The tests' clock: CLOCK_MONOTONIC, so that a deadline never moves with
 * the wall clock, and sleeps that are only ever waits between polls.
 */

#include <stdint.h>
#include <time.h>

#include "test-support.h"

uint64_t now_msec(void) {
        return now_usec() / 1000;
}

uint64_t now_usec(void) {
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * 1000000 + (uint64_t) ts.tv_nsec / 1000;
}

void sleep_msec(unsigned msec) {
        struct timespec ts = { .tv_sec = msec / 1000, .tv_nsec = (long) (msec % 1000) * 1000000 };

        nanosleep(&ts, NULL);
}
