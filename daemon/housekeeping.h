/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * The housekeeping thread: folds the per-thread statistics into the tree
 * every flush interval and runs the kernel cgroup sampler. It also keeps
 * systemd informed: STATUS= when the status line
 * changes, and WATCHDOG=1 when the service has a watchdog.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/core.h"

/* How often the status line is recomputed (and sent if it changed). */
#define HOUSEKEEPING_STATUS_INTERVAL_MSEC 5000

typedef struct Housekeeping Housekeeping;

/* Writes the daemon's one-line status ("... N groups, M sessions") into @buf. */
typedef void (*HousekeepingStatusFn)(void *userdata, char *buf, size_t size);

/**
 * housekeeping_new() - the state of the thread, not started.
 * Return: 0, -ENOMEM.
 */
int housekeeping_new(MemCore *core, unsigned flush_interval_msec, Housekeeping **ret);

/**
 * housekeeping_set_notify() - what to tell systemd (sd_notify(3)) from the
 * thread: STATUS= from @status every HOUSEKEEPING_STATUS_INTERVAL_MSEC when
 * it changed (called on the housekeeping thread), and WATCHDOG=1 every
 * half @watchdog_usec (0: no watchdog; see sd_watchdog_enabled()). The
 * watchdog is kept alive only as long as this thread runs its loop.
 * Before housekeeping_start().
 */
void housekeeping_set_notify(Housekeeping *h, HousekeepingStatusFn status, void *userdata,
                             uint64_t watchdog_usec);

/* Is another thread doing its work (nothing of it stuck for @max_msec)? For the keep-alive. */
typedef bool (*HousekeepingAliveFn)(void *userdata, uint64_t max_msec);

/**
 * housekeeping_set_alive() - ping the watchdog only while @alive says
 * so (the saver: a save stuck on a dead disk). Before housekeeping_start().
 */
void housekeeping_set_alive(Housekeeping *h, HousekeepingAliveFn alive, void *userdata);

/* Periodic work of another module (the kernel cgroup sampler), on the thread. */
typedef void (*HousekeepingSampleFn)(void *userdata);

/**
 * housekeeping_set_sampler() - call @fn every @interval_msec (0: never)
 * on the housekeeping thread, first one interval after the start. Before
 * housekeeping_start().
 */
void housekeeping_set_sampler(Housekeeping *h, HousekeepingSampleFn fn, void *userdata,
                              unsigned interval_msec);

/**
 * housekeeping_set_chore() - call @fn every @interval_msec (0: never) on
 * the housekeeping thread, first one interval after the start: another
 * module's periodic work (the service's transient orphans). Before
 * housekeeping_start().
 */
void housekeeping_set_chore(Housekeeping *h, HousekeepingSampleFn fn, void *userdata, unsigned interval_msec);

/** housekeeping_set_sample_interval() - SIGHUP: a new sampler interval (0: off); any thread. */
void housekeeping_set_sample_interval(Housekeeping *h, unsigned msec);

/**
 * housekeeping_start() - start the thread; it registers with the core.
 * Return: 0 or the negative errno of pthread_create() or core_thread_register().
 */
int housekeeping_start(Housekeeping *h);

/** housekeeping_set_flush_interval() - SIGHUP: a new interval; any thread. */
void housekeeping_set_flush_interval(Housekeeping *h, unsigned msec);

/**
 * housekeeping_stop() - stop the thread after a last flush, and join it.
 * Call once every other thread that changes the core has stopped.
 */
void housekeeping_stop(Housekeeping *h);

/** housekeeping_free() - free a stopped (or never started) Housekeeping. */
Housekeeping *housekeeping_free(Housekeeping *h);
