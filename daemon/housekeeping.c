/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Housekeeping thread
 *
 * One thread and one condition variable for the daemon's periodic
 * duties, run one at a time in this order when due (the keep-alive
 * first: it is late if it waits):
 * - WATCHDOG=1 at half the watchdog interval, as sd_watchdog_enabled(3)
 *   advises, when systemd runs the service with one;
 * - the status line (STATUS=), when it changed;
 * - every flush interval, core_stats_flush(core, true), so that readers
 *   who do not ask for exact numbers see statistics at most one interval
 *   old (the kernel's periodic rstat flush, flush_memcg_stats_dwork);
 * - every sample interval, a sampler another module installed (the
 *   kernel's usage of mirrored cgroups, mirror.c).
 *
 * Saving the state is not among them: saver.c has a thread of its own,
 * so that a slow disk delays neither the flush nor the keep-alive.
 */

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <systemd/sd-daemon.h>
#include <time.h>

#include "core/core.h"
#include "clock.h"
#include "macro.h"
#include "housekeeping.h"
#include "base/log.h"
#include "base/selfstats.h"
#include "thread-start.h"

struct Housekeeping {
        MemCore *core;

        _Atomic unsigned flush_interval_msec;
        _Atomic unsigned sample_interval_msec; /* 0: no sampling */
        HousekeepingSampleFn sample;
        void *sample_userdata;

        pthread_mutex_t lock;
        pthread_cond_t cond; /* CLOCK_MONOTONIC */
        bool stop;           /* lock */
        bool running;
        pthread_t thread;

        ThreadStart start;

        /* Set before the thread starts, then read by it only. */
        HousekeepingStatusFn status;
        void *status_userdata;
        HousekeepingAliveFn alive;
        void *alive_userdata;
        HousekeepingSampleFn chore;
        void *chore_userdata;
        unsigned chore_interval_msec;
        uint64_t watchdog_usec;
        char last_status[256];
};

static struct timespec msec_to_timespec(uint64_t msec) {
        return (struct timespec) { .tv_sec = (time_t) (msec / 1000), .tv_nsec = (long) (msec % 1000) * 1000000 };
}

int housekeeping_new(MemCore *core, unsigned flush_interval_msec, Housekeeping **ret) {
        pthread_condattr_t attr;
        Housekeeping *h;

        h = calloc(1, sizeof(*h));
        if (!h)
                return -ENOMEM;
        h->core = core;
        atomic_init(&h->flush_interval_msec, flush_interval_msec ? flush_interval_msec : 1);
        pthread_mutex_init(&h->lock, NULL);
        pthread_condattr_init(&attr);
        pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
        pthread_cond_init(&h->cond, &attr);
        pthread_condattr_destroy(&attr);
        *ret = h;
        return 0;
}

void housekeeping_set_alive(Housekeeping *h, HousekeepingAliveFn alive, void *userdata) {
        h->alive = alive;
        h->alive_userdata = userdata;
}

void housekeeping_set_notify(Housekeeping *h, HousekeepingStatusFn status, void *userdata,
                             uint64_t watchdog_usec) {
        h->status = status;
        h->status_userdata = userdata;
        h->watchdog_usec = watchdog_usec;
}

/* STATUS= when the line changed since it was last sent. */
static void notify_status(Housekeeping *h) {
        char buf[sizeof(h->last_status)];

        h->status(h->status_userdata, buf, sizeof(buf));
        if (strcmp(buf, h->last_status) == 0)
                return;
        memcpy(h->last_status, buf, sizeof(buf));
        (void) sd_notifyf(0, "STATUS=%s", buf);
}

static void wake(Housekeeping *h) {
        pthread_mutex_lock(&h->lock);
        pthread_cond_signal(&h->cond);
        pthread_mutex_unlock(&h->lock);
}

void housekeeping_set_sampler(Housekeeping *h, HousekeepingSampleFn fn, void *userdata,
                              unsigned interval_msec) {
        h->sample = fn;
        h->sample_userdata = userdata;
        atomic_store(&h->sample_interval_msec, interval_msec);
}

void housekeeping_set_chore(Housekeeping *h, HousekeepingSampleFn fn, void *userdata, unsigned interval_msec) {
        h->chore = fn;
        h->chore_userdata = userdata;
        h->chore_interval_msec = interval_msec;
}

void housekeeping_set_sample_interval(Housekeeping *h, unsigned msec) {
        atomic_store(&h->sample_interval_msec, msec);
        wake(h);
}

void housekeeping_set_flush_interval(Housekeeping *h, unsigned msec) {
        atomic_store(&h->flush_interval_msec, msec ? msec : 1);
        wake(h);
}

/* When each duty is next due, in CLOCK_MONOTONIC ms; UINT64_MAX: never. */
typedef struct Schedule {
        uint64_t flush, status, watchdog, sample, chore;
        uint64_t watchdog_msec; /* sd_watchdog_enabled(3): ping at half the interval */
} Schedule;

static void duty_watchdog(Housekeeping *h, Schedule *s, uint64_t now) {
        /* A daemon whose saver is stuck (a dead disk) holds every durable
         * OK: no keep-alive, so that systemd restarts it. */
        if (!h->alive || h->alive(h->alive_userdata, 2 * s->watchdog_msec))
                (void) sd_notify(0, "WATCHDOG=1");
        s->watchdog = now + s->watchdog_msec;
}

static void duty_status(Housekeeping *h, Schedule *s, uint64_t now) {
        notify_status(h);
        s->status = now + HOUSEKEEPING_STATUS_INTERVAL_MSEC;
}

static void duty_flush(Housekeeping *h, Schedule *s, uint64_t now) {
        uint64_t start = selfstats_clock_nsec();

        core_stats_flush(h->core, true);
        selfstats_observe(SELF_HIST_FLUSH, selfstats_clock_nsec() - start);
        s->flush = now + atomic_load(&h->flush_interval_msec);
}

static void duty_sample(Housekeeping *h, Schedule *s, uint64_t now) {
        (void) now;
        h->sample(h->sample_userdata);
        s->sample = UINT64_MAX; /* rescheduled by next_wake() */
}

static void duty_chore(Housekeeping *h, Schedule *s, uint64_t now) {
        h->chore(h->chore_userdata);
        s->chore = now + h->chore_interval_msec;
}

/*
 * Run the first duty that is due at @now, outside the lock (the caller
 * holds it). The keep-alive goes first: whatever else is due, it is late
 * if it waits. Return: whether one ran (then look again).
 */
static bool run_due(Housekeeping *h, Schedule *s, uint64_t now) {
        void (*duty)(Housekeeping *h, Schedule *s, uint64_t now) = NULL;

        if (now >= s->watchdog)
                duty = duty_watchdog;
        else if (now >= s->status)
                duty = duty_status;
        else if (now >= s->flush)
                duty = duty_flush;
        else if (now >= s->sample)
                duty = duty_sample;
        else if (now >= s->chore)
                duty = duty_chore;
        if (!duty)
                return false;
        pthread_mutex_unlock(&h->lock);
        duty(h, s, now);
        pthread_mutex_lock(&h->lock);
        return true;
}

/* When to wake up next; a new interval is picked up here. */
static uint64_t next_wake(Housekeeping *h, Schedule *s, uint64_t now) {
        unsigned sample_msec = atomic_load(&h->sample_interval_msec);
        uint64_t at;

        s->flush = MIN(s->flush, now + atomic_load(&h->flush_interval_msec));
        /* 0 turns the sampler off. */
        s->sample = !h->sample || !sample_msec ? UINT64_MAX : MIN(s->sample, now + sample_msec);
        at = MIN(MIN(MIN(s->flush, s->status), MIN(s->watchdog, s->sample)), s->chore);
        return at;
}

static void *housekeeping_main(void *userdata) {
        Housekeeping *h = userdata;
        Schedule s = {
                .status = UINT64_MAX, .watchdog = UINT64_MAX, .sample = UINT64_MAX, .chore = UINT64_MAX,
                .watchdog_msec = h->watchdog_usec ? MAX(h->watchdog_usec / 2000, 1) : 0,
        };
        uint64_t now;
        int r;

        r = core_thread_register(h->core);
        thread_started(&h->start, r);
        if (r < 0)
                return NULL;

        now = clock_now_msec(CLOCK_MONOTONIC);
        s.flush = now + atomic_load(&h->flush_interval_msec);
        if (h->sample && atomic_load(&h->sample_interval_msec))
                s.sample = now + atomic_load(&h->sample_interval_msec);
        if (h->status)
                s.status = now + HOUSEKEEPING_STATUS_INTERVAL_MSEC;
        if (h->chore && h->chore_interval_msec)
                s.chore = now + h->chore_interval_msec;
        if (s.watchdog_msec)
                s.watchdog = now + s.watchdog_msec;
        pthread_mutex_lock(&h->lock);
        while (!h->stop) {
                struct timespec ts;

                now = clock_now_msec(CLOCK_MONOTONIC);
                if (run_due(h, &s, now))
                        continue;
                ts = msec_to_timespec(next_wake(h, &s, now));
                pthread_cond_timedwait(&h->cond, &h->lock, &ts);
        }
        pthread_mutex_unlock(&h->lock);

        core_stats_flush(h->core, true);
        core_thread_unregister(h->core);
        return NULL;
}

int housekeeping_start(Housekeeping *h) {
        int r;

        r = thread_start(&h->thread, &h->start, housekeeping_main, h);
        if (r < 0)
                return r;
        h->running = true;
        return 0;
}

void housekeeping_stop(Housekeeping *h) {
        if (!h || !h->running)
                return;
        pthread_mutex_lock(&h->lock);
        h->stop = true;
        pthread_cond_signal(&h->cond);
        pthread_mutex_unlock(&h->lock);
        pthread_join(h->thread, NULL);
        h->running = false;
}

Housekeeping *housekeeping_free(Housekeeping *h) {
        if (!h)
                return NULL;
        housekeeping_stop(h);
        pthread_mutex_destroy(&h->lock);
        pthread_cond_destroy(&h->cond);
        free(h);
        return NULL;
}
