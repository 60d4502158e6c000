/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Synchronous RCU callbacks for the fuzz targets
 *
 * The core frees removed groups and ended sessions with call_rcu(), on
 * liburcu's worker thread, some time later; core_free() waits for them
 * with rcu_barrier(), which costs about 10 ms (the worker's batching
 * sleep). Both hurt a fuzzer: a target that makes a core per input spends
 * most of its time in the barrier, and one that keeps a core across
 * inputs frees an input's memory during the next input, so that
 * libFuzzer sees more mallocs than frees and runs its leak check (a scan
 * of the whole heap) after nearly every input.
 *
 * So the fuzz executables define the two functions themselves; their
 * definitions take precedence over liburcu-memb's for the statically
 * linked core. call_rcu() queues the callback; rcu_barrier() waits for a
 * grace period and runs the queue on its caller, until it stays empty (a
 * callback may queue another). That is RCU's contract still: a callback
 * runs after a grace period that began after it was queued, from a
 * thread outside any read-side section (rcu_barrier() may not be called
 * inside one). What it gives up is the worker thread's concurrency, which
 * the concurrency suite tests, not the fuzzers.
 */

#include <pthread.h>
#include <stddef.h>

#include "fuzz-rcu.h"

static pthread_mutex_t queue_lock = PTHREAD_MUTEX_INITIALIZER;
static struct rcu_head *queue; /* linked through next.next, newest first */

void urcu_memb_call_rcu(struct rcu_head *head, void (*func)(struct rcu_head *head)) {
        head->func = func;
        pthread_mutex_lock(&queue_lock);
        head->next.next = (struct cds_wfcq_node *) queue;
        queue = head;
        pthread_mutex_unlock(&queue_lock);
}

void urcu_memb_barrier(void) {
        for (;;) {
                struct rcu_head *list, *prev = NULL;

                pthread_mutex_lock(&queue_lock);
                list = queue;
                queue = NULL;
                pthread_mutex_unlock(&queue_lock);
                if (!list)
                        return;
                /* Oldest first, as liburcu runs them. */
                while (list) {
                        struct rcu_head *next = (struct rcu_head *) list->next.next;

                        list->next.next = (struct cds_wfcq_node *) prev;
                        prev = list;
                        list = next;
                }
                urcu_memb_synchronize_rcu();
                while (prev) {
                        struct rcu_head *next = (struct rcu_head *) prev->next.next;

                        prev->func(prev);
                        prev = next;
                }
        }
}
