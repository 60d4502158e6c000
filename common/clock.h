/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * A clock read in the unit its caller counts in. Static inline: the hot
 * paths that read the clock (a socket connection's timeouts, a request's
 * timing) pay for clock_gettime() alone, a vDSO call with no syscall for
 * CLOCK_MONOTONIC and CLOCK_MONOTONIC_COARSE. The clock is the caller's
 * to name: most want CLOCK_MONOTONIC; a path that reads it per event and
 * wants only seconds takes CLOCK_MONOTONIC_COARSE, cheaper still.
 */

#include <stdint.h>
#include <time.h>

#define MSEC_PER_SEC UINT64_C(1000)
#define USEC_PER_SEC UINT64_C(1000000)
#define NSEC_PER_SEC UINT64_C(1000000000)
#define NSEC_PER_USEC UINT64_C(1000)
#define NSEC_PER_MSEC UINT64_C(1000000)

/** clock_now_nsec() - @clock in nanoseconds. Any thread. */
static inline uint64_t clock_now_nsec(clockid_t clock) {
        struct timespec ts;

        clock_gettime(clock, &ts);
        return (uint64_t) ts.tv_sec * NSEC_PER_SEC + (uint64_t) ts.tv_nsec;
}

/** clock_now_usec() - @clock in microseconds. Any thread. */
static inline uint64_t clock_now_usec(clockid_t clock) {
        struct timespec ts;

        clock_gettime(clock, &ts);
        return (uint64_t) ts.tv_sec * USEC_PER_SEC + (uint64_t) ts.tv_nsec / NSEC_PER_USEC;
}

/** clock_now_msec() - @clock in milliseconds. Any thread. */
static inline uint64_t clock_now_msec(clockid_t clock) {
        struct timespec ts;

        clock_gettime(clock, &ts);
        return (uint64_t) ts.tv_sec * MSEC_PER_SEC + (uint64_t) ts.tv_nsec / NSEC_PER_MSEC;
}
