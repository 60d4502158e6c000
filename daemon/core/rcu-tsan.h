/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * ThreadSanitizer annotations for RCU.
 *
 * liburcu publishes pointers with its own barriers and atomics, in code
 * TSan does not instrument, and grace periods are invisible to it. Without
 * help TSan reports every reader of a freshly published group as racing
 * with its initialisation, and every deferred free as racing with the
 * readers it waited for. These annotations state the happens-before edges
 * RCU really provides; in other builds they compile to nothing.
 *
 *  - rcu_tsan_publish(p) before p becomes reachable, rcu_tsan_consume(p)
 *    after a reader obtained it (rcu_assign_pointer / rcu_dereference);
 *  - rcu_tsan_reader_done() at the end of every read-side section and
 *    rcu_tsan_grace_period() after synchronize_rcu() or in a call_rcu
 *    callback: everything a reader did before leaving its section happens
 *    before what follows the grace period.
 */

#include <urcu/urcu-memb.h>
#include <urcu/rculist.h>

#if defined(__SANITIZE_THREAD__)
#define MEMACCT_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define MEMACCT_TSAN 1
#endif
#endif

#ifdef MEMACCT_TSAN
void __tsan_acquire(void *addr);
void __tsan_release(void *addr);
extern char rcu_tsan_gp;
#define rcu_tsan_publish(p) __tsan_release((void *) (p))
#define rcu_tsan_consume(p) __tsan_acquire((void *) (p))
#define rcu_tsan_reader_done() __tsan_release(&rcu_tsan_gp)
#define rcu_tsan_grace_period() __tsan_acquire(&rcu_tsan_gp)
#else
#define rcu_tsan_publish(p) ((void) (p))
#define rcu_tsan_consume(p) ((void) (p))
#define rcu_tsan_reader_done() ((void) 0)
#define rcu_tsan_grace_period() ((void) 0)
#endif

/*
 * The links of an RCU list, read and written as liburcu's rculist.h does
 * (a published pointer, a dependent load), but with atomics TSan sees:
 * CMM_LOAD_SHARED() and CMM_STORE_SHARED() are volatile accesses, which
 * it takes for plain ones and reports as racing. In other builds they are
 * liburcu's own.
 */
#ifdef MEMACCT_TSAN
#define rcu_list_next(p) __atomic_load_n(&(p)->next, __ATOMIC_ACQUIRE)

static inline void rcu_list_add_tail(struct cds_list_head *newp, struct cds_list_head *head) {
        newp->next = head;
        newp->prev = head->prev;
        __atomic_store_n(&head->prev->next, newp, __ATOMIC_RELEASE);
        head->prev = newp;
}

static inline void rcu_list_del(struct cds_list_head *elem) {
        elem->next->prev = elem->prev;
        __atomic_store_n(&elem->prev->next, elem->next, __ATOMIC_RELEASE);
}
#else
#define rcu_list_next(p) rcu_dereference((p)->next)
#define rcu_list_add_tail(newp, head) cds_list_add_tail_rcu(newp, head)
#define rcu_list_del(elem) cds_list_del_rcu(elem)
#endif
