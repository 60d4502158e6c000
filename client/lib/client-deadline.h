/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * Deadlines of the client's waits, on CLOCK_MONOTONIC: a wait of
 * timeout_msec is turned into an absolute deadline once, and every poll()
 * of the loop that waits takes the time left until it, so that wakeups
 * which are not what the loop waits for do not lengthen the wait.
 */

#include <stdint.h>

/* The deadline of a wait without a timeout. */
#define CLIENT_NO_DEADLINE UINT64_MAX

/** client_now_nsec() - CLOCK_MONOTONIC in ns. Any thread. */
uint64_t client_now_nsec(void);

/**
 * client_deadline_nsec() - when a wait of @timeout_msec that starts now
 * ends. Any thread.
 * Return: CLIENT_NO_DEADLINE when @timeout_msec < 0 (wait forever), else
 * client_now_nsec() plus @timeout_msec (0: now, do not wait).
 */
uint64_t client_deadline_nsec(int timeout_msec);

/**
 * client_deadline_left_msec() - the poll() timeout left until
 * @deadline_nsec (client_deadline_nsec(), or any CLOCK_MONOTONIC time in
 * ns). Any thread.
 * Return: -1 for CLIENT_NO_DEADLINE (poll() forever), else the ms to it
 * rounded up (at most INT32_MAX), 0 once it has passed.
 */
int client_deadline_left_msec(uint64_t deadline_nsec);
