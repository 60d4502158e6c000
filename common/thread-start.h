/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * Starting a thread that must get ready before its starter goes on (to
 * register with the core, connect to the bus, acquire a name): the
 * starter waits for the thread's word, so that a daemon that says
 * READY=1 has every thread ready, and a thread that cannot get ready
 * fails the start instead of dying unseen.
 */

#include <pthread.h>
#include <stdbool.h>

typedef struct ThreadStart {
        pthread_mutex_t lock;
        pthread_cond_t cond;
        bool done;
        int result;
} ThreadStart;

/**
 * thread_start() - start @fn(@arg) with every signal blocked (signals are
 * the main thread's business) and wait until it calls thread_started()
 * with @ts, which @arg must lead it to.
 * Return: 0 with the thread in *@ret; the negative errno it reported
 * (it has been joined); or the errno of pthread_create().
 */
int thread_start(pthread_t *ret, ThreadStart *ts, void *(*fn)(void *), void *arg);

/** thread_started() - the started thread's word: 0, or the negative errno it cannot go on with. */
void thread_started(ThreadStart *ts, int result);
