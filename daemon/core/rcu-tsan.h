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
