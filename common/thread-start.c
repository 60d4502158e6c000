/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The start-up handshake (thread-start.h). The ThreadStart lives only
 * until thread_start() returns: the thread must not touch it after
 * thread_started(), and the starter destroys it once it has the word.
 */

#include <signal.h>

#include "thread-start.h"

int thread_start(pthread_t *ret, ThreadStart *ts, void *(*fn)(void *), void *arg) {
        sigset_t all, old;
        pthread_t t;
        int r;

        *ts = (ThreadStart) {};
        pthread_mutex_init(&ts->lock, NULL);
        pthread_cond_init(&ts->cond, NULL);
        sigfillset(&all);
        pthread_sigmask(SIG_BLOCK, &all, &old);
        r = -pthread_create(&t, NULL, fn, arg);
        pthread_sigmask(SIG_SETMASK, &old, NULL);
        if (r == 0) {
                pthread_mutex_lock(&ts->lock);
                while (!ts->done)
                        pthread_cond_wait(&ts->cond, &ts->lock);
                r = ts->result;
                pthread_mutex_unlock(&ts->lock);
                if (r < 0)
                        pthread_join(t, NULL);
        }
        pthread_cond_destroy(&ts->cond);
        pthread_mutex_destroy(&ts->lock);
        if (r == 0)
                *ret = t;
        return r;
}

void thread_started(ThreadStart *ts, int result) {
        pthread_mutex_lock(&ts->lock);
        ts->done = true;
        ts->result = result;
        pthread_cond_broadcast(&ts->cond);
        pthread_mutex_unlock(&ts->lock);
}
