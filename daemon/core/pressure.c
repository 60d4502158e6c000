/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Pressure (pressure.h): per group, the charges of its subtree that wait
 * for reclaim, the time they stall and its running averages: the
 * kernel's PSI (kernel/sched/psi.c) for one resource, memory, and one
 * "CPU", since stalls here are counted under one lock rather than in
 * per-CPU buckets.
 *
 * Invariants, for every group with a record (g->pressure): nr_waiting is
 * the number of stalls begun and not ended in its subtree; total[SOME]
 * grew by exactly the time nr_waiting > 0, total[FULL] by the time
 * nr_waiting > 0 and nr_waiting >= nr_attached, nr_attached being the
 * sessions attached in the subtree as counted at the record's last
 * transition (a stall beginning or ending at or below it). An attach or
 * detach during a stall therefore takes effect at the next transition:
 * counting them as they happen would put a hook on the attach path for a
 * figure only stalls need. The totals are exact up to state_start; the
 * time since is folded in by every read and transition (record_times()),
 * so a read in the middle of a stall includes it, as psi's
 * get_recent_times() adds the state in progress.
 *
 * The averages are psi's (update_averages(), calc_avgs()), kept in the
 * same fixed point and sampled on a grid of PRESSURE_PERIOD_USEC from the
 * record's creation. psi's work runs every period while the group is
 * busy and stops when it is idle, decaying the periods it missed when it
 * runs again. Here nothing runs: a read or transition first samples each
 * boundary it passed, and the state never changes between two of those
 * calls, so each period's stall time is known exactly, as if the work had
 * run on time (docs/reclaim.md, "Pressure", says where that departs). A
 * group that is idle costs nothing until it is read: the boundaries up
 * to then are missed periods, decayed in one step.
 *
 * Locking: one mutex, core->pressure_lock, for every record. Stalls are
 * the slow path (a charge waits for a round of reclaim: milliseconds to
 * seconds), each makes two transitions that walk the tree once anyway,
 * and a read of a group that never stalled takes no lock; a lock per
 * record would buy nothing but a lock order up the path. Transitions
 * take it outside core_read_lock() and walk the tree in a read-side
 * section inside it; reads may take it inside one (a listing). Both are
 * allowed because nobody waits for a grace period while holding it:
 * group_unref() only queues a callback, and records are freed from the
 * group's RCU callback without the lock, when nobody can reach the
 * group.
 */

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>

#include "core.h"
#include "group-internal.h"
#include "macro.h"
#include "pressure.h"

/* include/linux/sched/loadavg.h's fixed point, which psi keeps its averages in. */
#define PSI_FSHIFT 11
#define PSI_FIXED_1 (UINT64_C(1) << PSI_FSHIFT)

/* psi.c's EXP_10s, EXP_60s, EXP_300s: 1/exp(2s/10s), 1/exp(2s/60s) and
 * 1/exp(2s/300s) in that fixed point, the decay of one period. */
static const uint64_t psi_exp[3] = { 1677, 1981, 2034 };

struct MemPressure {
        unsigned nr_waiting;  /* stalls in the subtree */
        unsigned nr_attached; /* sessions attached in the subtree, at the last transition */
        unsigned counted;     /* count_attached()'s scratch */
        uint64_t state_start; /* µs: the totals are exact up to here */
        uint64_t total[_MEM_PRESSURE_MAX]; /* µs */
        /* update_averages()'s */
        uint64_t avg_last_update, avg_next_update;
        uint64_t avg_total[_MEM_PRESSURE_MAX];
        uint64_t avg[_MEM_PRESSURE_MAX][3]; /* percent, fixed point */
};

static const char *const mem_pressure_kind_table[_MEM_PRESSURE_MAX] = {
        [MEM_PRESSURE_SOME] = "some",
        [MEM_PRESSURE_FULL] = "full",
};

DEFINE_STRING_TABLE_TO_STRING(mem_pressure_kind, MemPressureKind, _MEM_PRESSURE_MAX)

/*
 * calc_load(): one period's decay of @load toward @active. Rising, it
 * rounds up, so that a steady input is reached rather than approached
 * forever.
 */
static uint64_t psi_calc_load(uint64_t load, uint64_t exp, uint64_t active) {
        uint64_t l = load * exp + active * (PSI_FIXED_1 - exp);

        if (active >= load)
                l += PSI_FIXED_1 - 1;
        return l / PSI_FIXED_1;
}

/* fixed_power_int(): @x to the @n in the fixed point, by squaring, each product rounded to nearest. */
static uint64_t psi_fixed_power(uint64_t x, uint64_t n) {
        uint64_t r = PSI_FIXED_1;

        for (; n > 0; n >>= 1) {
                if (n & 1)
                        r = (r * x + PSI_FIXED_1 / 2) >> PSI_FSHIFT;
                /* x <= PSI_FIXED_1: the square cannot overflow. */
                x = (x * x + PSI_FIXED_1 / 2) >> PSI_FSHIFT;
        }
        return r;
}

/*
 * calc_avgs(): @missed periods without a sample decay the averages first
 * (calc_load_n() toward 0), then the period just ended adds its sample:
 * @time stalled of @period, as a whole percentage, psi's truncation.
 */
static void psi_calc_avgs(uint64_t avg[3], uint64_t missed, uint64_t time, uint64_t period) {
        uint64_t pct;

        if (missed > 0)
                for (size_t i = 0; i < 3; i++)
                        avg[i] = psi_calc_load(avg[i], psi_fixed_power(psi_exp[i], missed), 0);
        pct = time * 100 / period * PSI_FIXED_1;
        for (size_t i = 0; i < 3; i++)
                avg[i] = psi_calc_load(avg[i], psi_exp[i], pct);
}

/*
 * update_averages() at @now, a boundary of the grid: the stall time
 * recorded since the last update is the sample of the period that ended
 * (capped at the period, as psi punts an overage to the next one: here
 * there is none, the times being split at the boundaries exactly); the
 * whole periods before it, if any, were missed. Return: the next
 * boundary.
 */
static uint64_t psi_update_averages(MemPressure *pr, uint64_t now) {
        uint64_t expires = pr->avg_next_update, missed = 0, period;

        if (now - expires >= PRESSURE_PERIOD_USEC)
                missed = (now - expires) / PRESSURE_PERIOD_USEC;
        period = now - (pr->avg_last_update + missed * PRESSURE_PERIOD_USEC);
        pr->avg_last_update = now;
        for (size_t s = 0; s < _MEM_PRESSURE_MAX; s++) {
                uint64_t sample = MIN(pr->total[s] - pr->avg_total[s], period);

                pr->avg_total[s] += sample;
                psi_calc_avgs(pr->avg[s], missed, sample, period);
        }
        return expires + (1 + missed) * PRESSURE_PERIOD_USEC;
}

static bool psi_full(const MemPressure *pr) {
        return pr->nr_waiting > 0 && pr->nr_waiting >= pr->nr_attached;
}

/* record_times(): the time since state_start counts for the states in force. */
static void psi_record_times(MemPressure *pr, uint64_t now) {
        uint64_t delta = now - pr->state_start;

        if (pr->nr_waiting > 0)
                pr->total[MEM_PRESSURE_SOME] += delta;
        if (psi_full(pr))
                pr->total[MEM_PRESSURE_FULL] += delta;
        pr->state_start = now;
}

/*
 * Bring @pr to @now: sample every boundary passed, then record the time
 * since the last one. The state has not changed since state_start (every
 * transition calls this first), so each period's stall time is recorded
 * up to its boundary and sampled there, psi_avgs_work() on time. Once the
 * group is idle with every stall sampled, the boundaries up to @now
 * carry nothing: psi's work would have stopped, and the next
 * update_averages() decays them as missed periods, in one step. Pressure
 * lock held.
 */
static void pressure_advance(MemPressure *pr, uint64_t now) {
        /* Callers read the clock before the lock: a later one may have
         * gone first. Time does not run backwards for a record. */
        now = MAX(now, pr->state_start);
        while (now >= pr->avg_next_update) {
                uint64_t t = pr->avg_next_update;

                if (pr->nr_waiting == 0 && pr->total[MEM_PRESSURE_SOME] == pr->avg_total[MEM_PRESSURE_SOME] &&
                    pr->total[MEM_PRESSURE_FULL] == pr->avg_total[MEM_PRESSURE_FULL])
                        t += (now - t) / PRESSURE_PERIOD_USEC * PRESSURE_PERIOD_USEC;
                psi_record_times(pr, t);
                pr->avg_next_update = psi_update_averages(pr, t);
        }
        psi_record_times(pr, now);
}

static MemPressure *pressure_new(uint64_t now) {
        MemPressure *pr = calloc(1, sizeof(*pr));

        if (!pr)
                return NULL;
        /* group_init() of psi: the first period starts now. */
        pr->state_start = pr->avg_last_update = now;
        pr->avg_next_update = now + PRESSURE_PERIOD_USEC;
        return pr;
}

MemPressure *pressure_free(MemPressure *pr) {
        free(pr);
        return NULL;
}

/* group_walk(): a group's sessions count for the deepest group of the stalled path above it. */
static int count_one(MemGroup *n, void *userdata) {
        MemGroup *g = userdata;
        unsigned k = atomic_load_explicit(&n->nr_attached, memory_order_relaxed);

        if (k > 0)
                atomic_load_explicit(&group_common_ancestor(n, g)->pressure, memory_order_relaxed)->counted += k;
        return 0;
}

/*
 * The sessions attached in the subtree of each group from @g up, into
 * each record's counted: one walk of the tree, then sums up the path.
 * Every group of the path has a record. The counts are a snapshot:
 * attaches race with the walk, and count at the next transition.
 * Pressure lock held.
 */
static void count_attached(MemGroup *g) {
        MemGroup *top = g;
        unsigned sum = 0;

        for (MemGroup *a = g; a; a = a->parent) {
                atomic_load_explicit(&a->pressure, memory_order_relaxed)->counted = 0;
                top = a;
        }
        core_read_lock();
        (void) group_walk(top, count_one, g);
        core_read_unlock();
        for (MemGroup *a = g; a; a = a->parent) {
                MemPressure *pr = atomic_load_explicit(&a->pressure, memory_order_relaxed);

                sum += pr->counted;
                pr->counted = sum;
        }
}

/* psi_group_change() on every group from @g up: @delta stalls, then the state anew. Pressure lock held. */
static void change_path(MemGroup *g, uint64_t now, int delta) {
        count_attached(g);
        for (MemGroup *a = g; a; a = a->parent) {
                MemPressure *pr = atomic_load_explicit(&a->pressure, memory_order_relaxed);

                pressure_advance(pr, now);
                pr->nr_waiting = (unsigned) ((int) pr->nr_waiting + delta);
                pr->nr_attached = pr->counted;
        }
}

/* Drop the references pressure_stall_begin() took, from @g up to (not including) @stop. */
static void unref_path(MemGroup *g, MemGroup *stop) {
        while (g != stop) {
                MemGroup *parent = g->parent;

                group_unref(g);
                g = parent;
        }
}

/*
 * A reference on @g and every ancestor, for as long as the stall lasts:
 * pressure_stall_end() walks up from @g, which may be removed meanwhile
 * (a kept charge's group), and its parent with it. Under the read lock a
 * group that is not dead has its ancestors linked, so the walk reaches
 * live groups only; group_tryget() refuses one whose last reference
 * went in a removal that raced with it. Return: 0 or -ENOENT.
 */
static int ref_path(MemGroup *g) {
        int r = 0;

        core_read_lock();
        if (atomic_load(&g->dead))
                r = -ENOENT;
        for (MemGroup *a = g; r == 0 && a; a = a->parent)
                if (!group_tryget(a)) {
                        unref_path(g, a);
                        r = -ENOENT;
                }
        core_read_unlock();
        return r;
}

int pressure_stall_begin(MemCore *core, MemGroup *g, uint64_t now_usec) {
        int r;

        r = ref_path(g);
        if (r < 0)
                return r;
        pthread_mutex_lock(&core->pressure_lock);
        /* Every record of the path first: nothing is counted unless all are. */
        for (MemGroup *a = g; a; a = a->parent) {
                MemPressure *pr;

                if (atomic_load_explicit(&a->pressure, memory_order_relaxed))
                        continue;
                pr = pressure_new(now_usec);
                if (!pr) {
                        pthread_mutex_unlock(&core->pressure_lock);
                        unref_path(g, NULL);
                        return -ENOMEM;
                }
                /* Readers take the lock only for a record they saw: the
                 * release makes its fields visible with the pointer. */
                atomic_store_explicit(&a->pressure, pr, memory_order_release);
        }
        change_path(g, now_usec, +1);
        pthread_mutex_unlock(&core->pressure_lock);
        return 0;
}

void pressure_stall_end(MemCore *core, MemGroup *g, uint64_t now_usec) {
        pthread_mutex_lock(&core->pressure_lock);
        change_path(g, now_usec, -1);
        pthread_mutex_unlock(&core->pressure_lock);
        unref_path(g, NULL);
}

/* LOAD_INT.LOAD_FRAC of psi_show(), as hundredths. */
static unsigned psi_hundredths(uint64_t avg) {
        return (unsigned) ((avg >> PSI_FSHIFT) * 100 + (((avg & (PSI_FIXED_1 - 1)) * 100) >> PSI_FSHIFT));
}

void pressure_read(MemCore *core, MemGroup *g, uint64_t now_usec, MemPressureFigures ret[_MEM_PRESSURE_MAX]) {
        MemPressure *pr = atomic_load_explicit(&g->pressure, memory_order_acquire);

        for (size_t s = 0; s < _MEM_PRESSURE_MAX; s++)
                ret[s] = (MemPressureFigures) {};
        if (!pr)
                return; /* never stalled: no lock, nothing to roll forward */
        pthread_mutex_lock(&core->pressure_lock);
        pressure_advance(pr, now_usec);
        for (size_t s = 0; s < _MEM_PRESSURE_MAX; s++)
                ret[s] = (MemPressureFigures) {
                        .avg10 = psi_hundredths(pr->avg[s][0]),
                        .avg60 = psi_hundredths(pr->avg[s][1]),
                        .avg300 = psi_hundredths(pr->avg[s][2]),
                        .total_usec = pr->total[s],
                };
        pthread_mutex_unlock(&core->pressure_lock);
}
