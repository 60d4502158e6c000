/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The accounting core
 *
 * Owns the group tree (an RCU-protected tree plus a lock-free hash table
 * of paths, liburcu's cds_lfht), the per-thread statistics, the clients
 * and the state of fast path 3 (the global moving count). Writers of the
 * tree serialise on tree_lock; readers never take a lock.
 *
 * Every thread that calls in registers: it becomes an RCU reader of the
 * urcu-memb flavour (read-side sections cost a thread-local increment; the
 * membarrier system call puts the cost on synchronize_rcu, which only
 * group removal and moves use) and receives its statistics slots.
 */

#include <assert.h>
#include <sched.h>
#include <stdlib.h>

#include "core.h"
#include "group-internal.h"
#include "stock.h"

#ifdef MEMACCT_TSAN
char rcu_tsan_gp;
#endif

/* initial-exec: the core is linked into executables, and the general TLS
 * model would make every charge call __tls_get_addr(). */
#define _tls_ __thread __attribute__((tls_model("initial-exec")))

static _tls_ MemCore *tls_core;
static _tls_ int tls_slot = -1;
static _tls_ unsigned tls_rcu_users;

unsigned core_thread_slot(MemCore *core) {
        assert(tls_core == core && tls_slot >= 0);
        (void) core;
        return (unsigned) tls_slot;
}

int core_thread_register(MemCore *core) {
        int r;

        if (tls_core == core)
                return 0;
        assert(!tls_core);
        if (tls_rcu_users++ == 0)
                urcu_memb_register_thread();

        pthread_mutex_lock(&core->tree_lock);
        r = stats_thread_add(&core->stats);
        pthread_mutex_unlock(&core->tree_lock);
        if (r < 0) {
                if (--tls_rcu_users == 0)
                        urcu_memb_unregister_thread();
                return r;
        }
        tls_core = core;
        tls_slot = r;
        return 0;
}

/* The thread's slots stay reserved and keep their sums: the flusher folds
 * them like any other, so nothing the thread accounted is lost. */
void core_thread_unregister(MemCore *core) {
        if (tls_core != core)
                return;
        /* What the thread stocked goes back: nobody else would take it. */
        if (core->stocks)
                stock_drain_mine(core);
        tls_core = NULL;
        tls_slot = -1;
        if (--tls_rcu_users == 0)
                urcu_memb_unregister_thread();
}

static int config_check(const MemCoreConfig *c) {
        if (c->max_threads < 1 || c->max_threads > 4096)
                return -EINVAL;
        if (c->max_groups < 1 || c->max_groups > (1u << 24))
                return -EINVAL;
        /* protection.c walks paths on a 256-entry stack. */
        if (c->max_depth < 1 || c->max_depth > 255)
                return -EINVAL;
        if (c->rss_threshold > (uint64_t) MEM_COUNTER_MAX)
                return -EINVAL;
        return 0;
}

static unsigned long lfht_initial_size(unsigned max_groups) {
        unsigned long n = 64;

        while (n < max_groups && n < (1ul << 20))
                n <<= 1;
        return n;
}

int core_new(const MemCoreConfig *config, MemCore **ret) {
        MemCore *core;
        int r;

        r = config_check(config);
        if (r < 0)
                return r;
        core = cacheline_alloc(sizeof(*core));
        if (!core)
                return -ENOMEM;
        *core = (MemCore) { .config = *config };
        pthread_mutex_init(&core->tree_lock, NULL);
        pthread_mutex_init(&core->limits_lock, NULL);
        pthread_mutex_init(&core->move_mutex, NULL);
        pthread_mutex_init(&core->clients_lock, NULL);
        pthread_mutex_init(&core->stock_lock, NULL);
        pthread_mutex_init(&core->regions_lock, NULL);
        pthread_mutex_init(&core->pressure_lock, NULL);
        CDS_INIT_LIST_HEAD(&core->stock_sessions);
        atomic_store(&core->rss_threshold, (int64_t) config->rss_threshold);
        atomic_store(&core->recursive_protection, config->recursive_protection);

        /* Sized for the configured group count up front: a table that
         * starts small makes every create walk long chains until the
         * background resize catches up. */
        core->groups = cds_lfht_new_flavor(lfht_initial_size(config->max_groups), 64, 0,
                                           CDS_LFHT_AUTO_RESIZE | CDS_LFHT_ACCOUNTING,
                                           &urcu_memb_flavor, NULL);
        core->clients = cds_lfht_new_flavor(64, 64, 0, CDS_LFHT_AUTO_RESIZE | CDS_LFHT_ACCOUNTING,
                                            &urcu_memb_flavor, NULL);
        core->free_ids = calloc(config->max_groups, sizeof(*core->free_ids));
        core->by_id = calloc(config->max_groups, sizeof(*core->by_id));
        if (!core->groups || !core->clients || !core->free_ids || !core->by_id)
                goto fail;
        r = stats_init(&core->stats, config->max_groups, config->max_threads);
        if (r < 0)
                goto fail;
        r = group_create_root(core);
        if (r < 0)
                goto fail;
#ifndef MEMACCT_BEFORE_PATCH
        /* The before variant has no stock: it is what the stock is measured against. */
        if (config->charge_stock) {
                core->stocks = stock_new(config->max_threads);
                if (!core->stocks) {
                        r = -ENOMEM;
                        goto fail;
                }
        }
#endif
        *ret = core;
        return 0;
fail:
        core_free(core);
        return r < 0 ? r : -ENOMEM;
}

MemCore *core_free(MemCore *core) {
        bool registered = tls_rcu_users > 0;

        if (!core)
                return NULL;
        /* The hash table's walks need a registered reader, and its resize
         * worker may still run: whoever frees the core becomes one for the
         * duration. */
        if (!registered)
                urcu_memb_register_thread();
        /* Groups removed earlier are freed by call_rcu callbacks: let them
         * finish first. */
        urcu_memb_barrier();
        core->stocks = stock_free(core->stocks, core->config.max_threads);
        group_free_tree(core);
        for (unsigned slot = 0; slot < MEM_REGION_MAX; slot++)
                free(atomic_load(&core->regions[slot]));
        if (core->groups)
                cds_lfht_destroy(core->groups, NULL);
        if (core->clients)
                cds_lfht_destroy(core->clients, NULL);
        stats_done(&core->stats);
        free(core->free_ids);
        free(core->by_id);
        free(core->flush_set);
        pthread_mutex_destroy(&core->tree_lock);
        pthread_mutex_destroy(&core->limits_lock);
        pthread_mutex_destroy(&core->move_mutex);
        pthread_mutex_destroy(&core->clients_lock);
        pthread_mutex_destroy(&core->stock_lock);
        pthread_mutex_destroy(&core->regions_lock);
        pthread_mutex_destroy(&core->pressure_lock);
        free(core);
        if (!registered)
                urcu_memb_unregister_thread();
        return NULL;
}

/* Children before parents, so each group's total includes its subtree. */
static void flush_subtree(MemStats *s, MemGroup *g) {
        MemGroup *c;

        group_for_each_child(c, g, it)
                flush_subtree(s, c);
        stats_fold_group(s, g->id, &g->stats, g->parent ? &g->parent->stats : NULL);
}

static bool flush_set_add(MemCore *core, size_t *n, MemGroup *g) {
        if (*n == core->flush_set_cap) {
                size_t cap = MAX(core->flush_set_cap * 2, (size_t) 256);
                MemGroup **p = realloc(core->flush_set, cap * sizeof(*p));

                if (!p)
                        return false;
                core->flush_set = p;
                core->flush_set_cap = cap;
        }
        core->flush_set[(*n)++] = g;
        g->flush_queued = true;
        return true;
}

/* Deepest first: a group's descendants are folded before it. */
static int depth_descending(const void *a, const void *b) {
        const MemGroup *x = *(MemGroup *const *) a, *y = *(MemGroup *const *) b;

        return (x->depth < y->depth) - (x->depth > y->depth);
}

/*
 * Fold the groups updated since the last flush and their ancestors, each
 * once, children before parents: the kernel's css_rstat_flush() over the
 * updated tree instead of every group. Return: false when the set could
 * not be built; nothing was folded then and the caller walks the tree.
 */
static bool flush_updated(MemCore *core, const unsigned *ids, size_t nids) {
        size_t n = 0;
        bool ok = true;

        for (size_t i = 0; i < nids && ok; i++) {
                MemGroup *g = atomic_load_explicit(&core->by_id[ids[i]], memory_order_acquire);

                /* NULL: removed since it was noted; removal folded it. */
                for (; g && !g->flush_queued; g = g->parent)
                        if (!flush_set_add(core, &n, g)) {
                                ok = false;
                                break;
                        }
        }
        if (ok) {
                if (n > 1)
                        qsort(core->flush_set, n, sizeof(*core->flush_set), depth_descending);
                for (size_t i = 0; i < n; i++) {
                        MemGroup *g = core->flush_set[i];

                        stats_fold_group(&core->stats, g->id, &g->stats, g->parent ? &g->parent->stats : NULL);
                }
        }
        for (size_t i = 0; i < n; i++)
                core->flush_set[i]->flush_queued = false;
        return ok;
}

void core_stats_flush(MemCore *core, bool force) {
        const unsigned *ids;
        ssize_t n;

        if (!stats_flush_begin(&core->stats, force))
                return;
        core_read_lock();
        n = stats_collect(&core->stats, &ids);
        if (n < 0 || !flush_updated(core, ids, (size_t) n))
                flush_subtree(&core->stats, core->root);
        core_read_unlock();
        stats_flush_end(&core->stats);
}

void core_set_event_hook(MemCore *core, MemEventHook hook, void *userdata) {
        core->event_hook_userdata = userdata;
        core->event_hook = hook;
}

void core_set_move_hook(MemCore *core, MemMoveHook hook, void *userdata) {
        core->move_hook_userdata = userdata;
        core->move_hook = hook;
}

void core_set_recursive_protection(MemCore *core, bool on) {
        atomic_store(&core->recursive_protection, on);
}

void core_set_rss_threshold(MemCore *core, uint64_t bytes) {
        atomic_store(&core->rss_threshold, counter_clamp_limit(bytes));
}

unsigned core_group_count(MemCore *core) {
        unsigned n;

        pthread_mutex_lock(&core->tree_lock);
        n = core->ngroups;
        pthread_mutex_unlock(&core->tree_lock);
        return n;
}

/*
 * A seqcount over moves: a move makes move_seq odd while it changes the
 * counters of both sides. A reader that saw the same even value before
 * and after its reads read no half-done move. It never takes a lock: it
 * may be called inside core_read_lock(), and a mover waits for a grace
 * period while holding move_mutex. Each move is a few atomic operations
 * between grace periods, so the retry loop ends quickly.
 */
void core_read_usage_consistent(MemCore *core, MemGroup *const *groups, size_t n,
                                uint64_t *ret_usage) {
        for (;;) {
                unsigned seq = atomic_load(&core->move_seq);

                if (seq & 1) {
                        sched_yield();
                        continue;
                }
                for (size_t i = 0; i < n; i++)
                        ret_usage[i] = (uint64_t) counter_read(&groups[i]->counter);
                /* The usage reads must not drift past the re-read. */
                atomic_thread_fence(memory_order_acquire);
                if (atomic_load(&core->move_seq) == seq)
                        return;
        }
}
