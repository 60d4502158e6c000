/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * What every C test may use (tests/support): the monotonic clock and
 * sleeps (clock.c), and a private memacctd on a socket and state
 * directory of its own (daemon.c). Linked as a static library, so a test
 * that never starts a daemon links none of it, nor libmemacct.
 */
#pragma once

#include <stdint.h>
#include <sys/types.h>

/** now_msec() - CLOCK_MONOTONIC. Any thread. Return: milliseconds. */
uint64_t now_msec(void);

/** now_usec() - CLOCK_MONOTONIC. Any thread. Return: microseconds. */
uint64_t now_usec(void);

/** sleep_msec() - sleep for @msec milliseconds (less if a signal wakes it). Any thread. */
void sleep_msec(unsigned msec);

/* How long a daemon is given to answer after it starts, and to exit after a signal. */
#define TEST_DAEMON_WAIT_MSEC 20000

/* A memacctd started by the test: its temporary directory, the socket, state
 * directory and log in it, and its pid while it runs (0 otherwise). */
typedef struct TestDaemon {
        char dir[256];
        char sock[512];
        char state[512];
        char log[512];
        pid_t pid;
} TestDaemon;

/**
 * test_daemon_init() - make a temporary directory for a daemon and name its paths in it.
 * @d: the daemon, not started
 * @name: a word for the directory's name ("client": $TMPDIR/memacct-client.XXXXXX)
 * Return: 0, or a negative errno.
 */
int test_daemon_init(TestDaemon *d, const char *name);

/**
 * test_daemon_start() - fork and exec $MEMACCTD on @d's socket and state directory (its
 * output appended to @d's log) and wait until a client connects, for TEST_DAEMON_WAIT_MSEC
 * at most.
 * Return: 0; -EINVAL ($MEMACCTD is not set), -ECHILD (it exited first), -ETIMEDOUT (it
 * did not answer in time: it is still running, for test_daemon_stop()), or fork()'s errno.
 */
int test_daemon_start(TestDaemon *d);

/**
 * test_daemon_stop() - send @sig to @d's daemon and reap it; SIGKILL it after
 * TEST_DAEMON_WAIT_MSEC.
 * Return: its wait status (0 for a clean exit; 0 too when it was not running), or
 * -ETIMEDOUT when it had to be killed.
 */
int test_daemon_stop(TestDaemon *d, int sig);

/** test_daemon_dump_log() - copy @d's log to stderr, for a failure's report. */
void test_daemon_dump_log(const TestDaemon *d);

/** test_daemon_done() - remove @d's directory (stop the daemon first). Return: 0 or -EIO. */
int test_daemon_done(TestDaemon *d);
