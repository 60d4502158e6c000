/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * Saver changes: the saver thread and group commit.
 *
 * A change that must survive (a group created or removed, limits, an
 * owner, a kept charge) is admitted first (saver_admit(): refused when
 * the state cannot be written now), made in the core, then committed
 * (saver_committed(): it gets a sequence number and wakes the saver).
 * The transport holds the change's OK until saver_check() says the
 * state holding it is on disk (written and, with sync, fsync'ed). One save
 * covers every change committed before it started: group commit.
 *
 * The saver also keeps room on disk for the next save (the next state
 * file is preallocated, twice the current one and 1 MiB more); a change
 * is admitted only while it could. docs/design.md ("Durability") and
 * memacctd(8) state the guarantee.
 */

#include <stdbool.h>
#include <stdint.h>

#include "base/refusal.h"

typedef struct Saver Saver;
typedef struct MemCore MemCore;

/* After a failed save, the saver tries again this often. */
#define SAVER_RETRY_MSEC 1000
/* Transports that wait for saves (socket workers, the bus thread). */
#define SAVER_WAKERS_MAX 256

/* Told after every save attempt, on the saver thread: look at what waits. */
typedef void (*SaverWakeFn)(void *userdata);

/**
 * saver_new() - the saver for @core's state in @state_dir, not started.
 * @sync: fsync the state file and directory before a change counts as
 *        saved (without: saved means written, which survives a crash of
 *        the daemon but not of the machine)
 * Return: 0, -ENOMEM.
 */
int saver_new(MemCore *core, const char *state_dir, bool sync, Saver **ret);

/** saver_set_sync() - SIGHUP: fsync or not, from the next save on; any thread. */
void saver_set_sync(Saver *d, bool sync);

/** saver_state_dir() - the state directory @d saves in; any thread. */
const char *saver_state_dir(Saver *d);

/**
 * saver_add_waker() - call @fn after every save attempt. Before
 * saver_start(). Return: 0, -ENOSPC (too many).
 */
int saver_add_waker(Saver *d, SaverWakeFn fn, void *userdata);

/**
 * saver_start() - start the saver thread; it registers with the core and
 * prepares the room for the first save (a failure there is logged, and
 * durable changes are refused until it succeeds).
 * Return: 0 or a negative errno.
 */
int saver_start(Saver *d);

/**
 * saver_admit() - may a durable change be made now? Any thread, one
 * relaxed load. Return: 0; the errno of the state's last failure (-ENOSPC,
 * -EROFS, -EIO...), with @rf naming it.
 */
int saver_admit(Saver *d, Refusal *rf);

/**
 * saver_committed() - a durable change was made to the group @path
 * (its creation, removal, limits or kept charges, in memory or a device
 * region; NULL: any number of groups, or a region registered or removed,
 * which every group's line may name): have it saved. NULL saves the
 * whole state. Any thread. Return: its sequence number, for
 * saver_check().
 */
uint64_t saver_committed(Saver *d, const char *path);

/**
 * saver_changed() - something saved changed, but nobody waits for it (a
 * mirror group placed on demand): save it with the next save. Any thread.
 */
void saver_changed(Saver *d);

/** saver_last_change() - the sequence number of the last committed change (0: none yet); any thread. */
uint64_t saver_last_change(Saver *d);

/**
 * saver_check() - is change @seq on disk? Any thread.
 * Return: 1 (saved); 0 (not yet: a waker will be told); a negative errno
 * (the save that should have held it failed: the change is in effect but
 * not saved), with @rf.
 */
int saver_check(Saver *d, uint64_t seq, Refusal *rf);

/**
 * saver_alive() - is the saver not stuck: no save in progress for more
 * than @max_msec? A HousekeepingAliveFn (@userdata is the Saver); any thread.
 */
bool saver_alive(void *userdata, uint64_t max_msec);

/* What saver_status() reports: the saver's state for `memacctctl info`. */
typedef struct SaverStatus {
        int error;               /* 0: saving; < 0: the failure in force (durable changes refused) */
        char cause[96];          /* with error: the step that failed ("reserve ... bytes", "append ...") */
        uint64_t changed, saved; /* the last change committed, and the last on disk */
        uint64_t saves;          /* saves that succeeded */
        uint64_t last_save_usec; /* CLOCK_REALTIME of the last one; 0: none yet */
        bool sync;
} SaverStatus;

/** saver_status() - the saver's state now. Any thread; takes the lock only when failing. */
void saver_status(Saver *d, SaverStatus *ret);

/**
 * saver_stop() - save once more (whatever changed) and join the thread.
 * Call after every thread that changes the core has stopped.
 * Return: the last save's result (0 or a negative errno, logged).
 */
int saver_stop(Saver *d);

/** saver_free() - stop if needed and free. Return: NULL. */
Saver *saver_free(Saver *d);
