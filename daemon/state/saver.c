/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The saver thread: group commit of durable changes
 *
 * Sequence numbers: every committed change takes the next number of
 * `changed` *after* it was made in the core. A save reads `changed`
 * first, then formats the state: every change numbered up to what it
 * read was made before, so the state it writes holds them all (and maybe
 * some later ones, which are then saved twice, never lost). When the
 * save is on disk, `saved` becomes that number and the wakers are told:
 * each transport sends the OKs whose numbers are now covered. A change
 * that arrives during a save waits for the next one, which covers every
 * change that arrived meanwhile, however many: one fsync for all, as a
 * database's group commit.
 *
 * Failure: when a save fails, `failed` becomes the number it should have
 * covered and `error` its errno: the OKs it should have released become
 * errors (the change is in effect, not saved), saver_admit() refuses
 * every new durable change, and the saver tries again every
 * SAVER_RETRY_MSEC until a save succeeds; reads and session charges go
 * on throughout. The room for the next save is reserved after every save
 * (persist_reserve()): a full disk is found there, after a change was
 * saved and before the next is admitted, so that case never turns an OK
 * into an error. What remains (an I/O error, a file system remounted
 * read-only, a state that outgrew its reservation) is reported as above.
 */

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "core/core.h"
#include "clock.h"
#include "macro.h"
#include "state/saver.h"
#include "base/log.h"
#include "state/persist.h"
#include "base/selfstats.h"
#include "thread-start.h"

/* The room kept for the next save: twice the state and this much more. */
#define RESERVE_SLACK (UINT64_C(1) << 20)
/* The journal is preallocated this far ahead, and again when less is left than a quarter of it. */
#define JOURNAL_AHEAD (UINT64_C(256) << 10)

typedef struct Waker {
        SaverWakeFn fn;
        void *userdata;
} Waker;

struct Saver {
        MemCore *core;
        char *state_dir;
        _Atomic bool sync;

        _Atomic uint64_t changed; /* the last committed change */
        _Atomic uint64_t saved;   /* every change up to this is on disk */
        _Atomic uint64_t failed;  /* the save meant to cover up to this failed */
        _Atomic int error;        /* 0, or the errno of the failure in force */
        _Atomic uint64_t saving_since; /* CLOCK_MONOTONIC ms a save began; 0: none in progress */
        _Atomic uint64_t last_save_usec; /* CLOCK_REALTIME of the last save that succeeded; 0: none */
        _Atomic uint64_t saves;          /* saves that succeeded */
        char cause[96];                  /* lock: d->step of the failure in force */

        pthread_mutex_t lock;
        pthread_cond_t cond; /* CLOCK_MONOTONIC; signalled under lock */
        bool stop;           /* lock */
        /* lock: the groups changed since the last save; all: save them all */
        char **dirty;
        size_t ndirty, dirty_cap;
        bool dirty_all;
        bool running;
        pthread_t thread;
        ThreadStart start;
        int result; /* the last save's, once the thread has ended */

        /* The saver thread's own. */
        int spare_fd;
        size_t last_size;  /* of the last whole state written */
        int journal_fd;    /* -1: none yet, or unusable: the next save is whole */
        uint64_t journal_size, journal_alloc;
        char step[96];

        Waker wakers[SAVER_WAKERS_MAX];
        unsigned nwakers;
};

int saver_new(MemCore *core, const char *state_dir, bool sync, Saver **ret) {
        pthread_condattr_t attr;
        Saver *d;

        d = calloc(1, sizeof(*d));
        if (!d)
                return -ENOMEM;
        d->state_dir = strdup(state_dir);
        if (!d->state_dir) {
                free(d);
                return -ENOMEM;
        }
        d->core = core;
        d->spare_fd = -1;
        d->journal_fd = -1;
        atomic_init(&d->sync, sync);
        pthread_mutex_init(&d->lock, NULL);
        pthread_condattr_init(&attr);
        pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
        pthread_cond_init(&d->cond, &attr);
        pthread_condattr_destroy(&attr);
        *ret = d;
        return 0;
}

const char *saver_state_dir(Saver *d) {
        return d->state_dir;
}

void saver_set_sync(Saver *d, bool sync) {
        atomic_store(&d->sync, sync);
}

int saver_add_waker(Saver *d, SaverWakeFn fn, void *userdata) {
        if (d->nwakers >= SAVER_WAKERS_MAX)
                return -ENOSPC;
        d->wakers[d->nwakers++] = (Waker) { fn, userdata };
        return 0;
}

/* Whatever the cause (a full disk, a quota, a read-only file system), the
 * client is told RESOURCE_EXHAUSTED with the cause in words: -EDQUOT or
 * -EROFS as such would read as another status. */
static int refuse(Saver *d, int r, Refusal *rf) {
        return refusal_set(rf, -ENOSPC, "the state cannot be saved to %s (%s): durable changes are refused "
                           "until it can; reads and session charges go on", d->state_dir,
                           strerrordesc_np(-r));
}

int saver_admit(Saver *d, Refusal *rf) {
        int r = atomic_load_explicit(&d->error, memory_order_relaxed);

        return r < 0 ? refuse(d, r, rf) : 0;
}

/* Remember @path (NULL: everything) for the next save. Under the lock. */
static void note_dirty(Saver *d, char *path) {
        if (!path) {
                d->dirty_all = true;
                return;
        }
        if (d->ndirty == d->dirty_cap) {
                size_t cap = MAX(d->dirty_cap * 2, (size_t) 64);
                char **p = realloc(d->dirty, cap * sizeof(char *));

                if (!p) {
                        /* Out of memory: the whole state, which needs no list. */
                        free(path);
                        d->dirty_all = true;
                        return;
                }
                d->dirty = p;
                d->dirty_cap = cap;
        }
        d->dirty[d->ndirty++] = path;
}

uint64_t saver_committed(Saver *d, const char *path) {
        char *copy = path ? strdup(path) : NULL;
        uint64_t seq;

        /* The number is taken under the lock the saver takes the list
         * under: a save that covers the number has the path. */
        pthread_mutex_lock(&d->lock);
        if (path && !copy)
                d->dirty_all = true;
        else
                note_dirty(d, copy);
        seq = atomic_fetch_add(&d->changed, 1) + 1;
        pthread_cond_signal(&d->cond);
        pthread_mutex_unlock(&d->lock);
        return seq;
}

void saver_changed(Saver *d) {
        (void) saver_committed(d, NULL);
}

bool saver_alive(void *userdata, uint64_t max_msec) {
        Saver *d = userdata;
        uint64_t since = atomic_load(&d->saving_since);

        return since == 0 || clock_now_msec(CLOCK_MONOTONIC) - since <= max_msec;
}

uint64_t saver_last_change(Saver *d) {
        return atomic_load(&d->changed);
}

int saver_check(Saver *d, uint64_t seq, Refusal *rf) {
        int r;

        /* `saved` first: a later save that succeeded covers the change
         * even if an earlier one failed. */
        if (atomic_load(&d->saved) >= seq)
                return 1;
        if (atomic_load(&d->failed) < seq)
                return 0;
        r = atomic_load(&d->error);
        if (atomic_load(&d->saved) >= seq)
                return 1; /* saved by a retry meanwhile */
        if (r >= 0)
                r = -EIO;
        return refusal_set(rf, -EIO, "the change is in effect but could not be saved to %s (%s); it will be "
                           "saved when the state can be written again", d->state_dir, strerrordesc_np(-r));
}

static void wake_all(Saver *d) {
        for (unsigned i = 0; i < d->nwakers; i++)
                d->wakers[i].fn(d->wakers[i].userdata);
}

/* The room for the next save. On the saver thread. */
static int reserve(Saver *d) {
        uint64_t size = (uint64_t) d->last_size * 2 + RESERVE_SLACK;
        int r;

        if (d->spare_fd >= 0)
                return 0;
        r = persist_reserve(d->state_dir, size, &d->spare_fd);
        if (r < 0)
                snprintf(d->step, sizeof(d->step), "reserve %llu bytes for the next save",
                         (unsigned long long) size);
        return r;
}

/* Mark the state failing with @r (a transition is logged once). */
static void fail(Saver *d, int r, uint64_t seq) {
        if (atomic_load(&d->error) == 0)
                log_error_errno(r, "Cannot save the state to %s (%s: %m): durable changes are refused until "
                                "it can be saved; trying again every %u ms", d->state_dir, d->step,
                                SAVER_RETRY_MSEC);
        /* d->step is the saver's own; saver_status() reads this copy. */
        pthread_mutex_lock(&d->lock);
        snprintf(d->cause, sizeof(d->cause), "%s", d->step);
        pthread_mutex_unlock(&d->lock);
        atomic_store(&d->error, r);
        if (seq > atomic_load(&d->failed))
                atomic_store(&d->failed, seq);
}

/* The whole state, then an empty journal. Return: 0 or a negative errno, with d->step. */
static int save_whole(Saver *d, bool sync) {
        const char *step = NULL;
        int r;

        r = persist_save(d->core, d->state_dir, d->spare_fd, sync, &d->last_size, &step);
        d->spare_fd = -1;
        if (r >= 0) {
                if (d->journal_fd >= 0)
                        close(d->journal_fd);
                d->journal_fd = -1;
                d->journal_alloc = 0;
                r = persist_journal_reset(d->state_dir, sync, &d->journal_fd, &d->journal_size, &step);
        }
        if (r < 0)
                snprintf(d->step, sizeof(d->step), "%s", step ? step : "save");
        return r;
}

/* One batch of the groups in @paths onto the journal. */
static int save_batch(Saver *d, char **paths, size_t n, bool sync) {
        _cleanup_free_ char *text = NULL;
        size_t size;
        int r;

        r = persist_journal_batch(d->core, (const char *const *) paths, n, &text, &size);
        if (r >= 0)
                r = persist_journal_append(d->journal_fd, text, size, sync);
        if (r < 0) {
                snprintf(d->step, sizeof(d->step), "append to the journal");
                /* A part of the batch may be in the file: only a whole
                 * state and a new journal are sure again. */
                close(d->journal_fd);
                d->journal_fd = -1;
                return r;
        }
        d->journal_size += size;
        return 0;
}

/*
 * Is the journal just written still <state dir>/journal? write(2) and
 * fdatasync(2) succeed on a file whose directory was removed or renamed
 * (rm -rf of the directory, tmpfiles, a lazy unmount): what they saved
 * would be acknowledged and then missing at the next start. So before a
 * save counts, the journal's descriptor and a fresh look-up of its path
 * must name one file (st_dev, st_ino). A mismatch fails the save as a
 * full disk does: durable changes are refused, the journal is dropped,
 * and the next try writes the whole state, which succeeds once the
 * directory is back. One stat(2) per save, next to an fsync.
 * Return: 0, or a negative errno with d->step.
 */
static int journal_check(Saver *d) {
        char path[PATH_MAX];
        struct stat fd_st, path_st;
        int r = 0;

        if (d->journal_fd < 0)
                return 0;
        if ((size_t) snprintf(path, sizeof(path), "%s/%s", d->state_dir, PERSIST_JOURNAL) >= sizeof(path))
                r = -ENAMETOOLONG;
        else if (fstat(d->journal_fd, &fd_st) < 0 || stat(path, &path_st) < 0)
                r = -errno;
        else if (fd_st.st_dev != path_st.st_dev || fd_st.st_ino != path_st.st_ino || fd_st.st_nlink == 0)
                r = -ESTALE;
        if (r < 0) {
                snprintf(d->step, sizeof(d->step), "find the journal: the directory is gone or replaced");
                close(d->journal_fd);
                d->journal_fd = -1;
        }
        return r;
}

/* Room for the next batches and the next whole state. */
static int reserve_next(Saver *d) {
        int r = reserve(d);

        if (r >= 0 && d->journal_fd >= 0 && d->journal_alloc < d->journal_size + JOURNAL_AHEAD / 4) {
                if (fallocate(d->journal_fd, FALLOC_FL_KEEP_SIZE, (off_t) d->journal_size, (off_t) JOURNAL_AHEAD) <
                            0 &&
                    errno != EOPNOTSUPP && errno != ENOSYS) {
                        r = -errno;
                        snprintf(d->step, sizeof(d->step), "reserve %llu bytes for the journal",
                                 (unsigned long long) JOURNAL_AHEAD);
                } else
                        d->journal_alloc = d->journal_size + JOURNAL_AHEAD;
        }
        return r;
}

/*
 * One save of everything committed so far: a batch onto the journal, or
 * the whole state when the journal is unusable, grew past four times the
 * state, or everything changed; then the room for the next. On the saver
 * thread, without the lock. Return: 0 or a negative errno.
 */
static int save(Saver *d, bool last) {
        bool sync = atomic_load(&d->sync), whole;
        char **paths;
        uint64_t seq;
        size_t n;
        int r;

        pthread_mutex_lock(&d->lock);
        seq = atomic_load(&d->changed);
        paths = d->dirty;
        n = d->ndirty;
        whole = d->dirty_all || d->journal_fd < 0 ||
                d->journal_size > 4 * (uint64_t) d->last_size + RESERVE_SLACK;
        d->dirty = NULL;
        d->ndirty = d->dirty_cap = 0;
        d->dirty_all = false;
        pthread_mutex_unlock(&d->lock);

        atomic_store(&d->saving_since, clock_now_msec(CLOCK_MONOTONIC));
        r = whole ? save_whole(d, sync) : save_batch(d, paths, n, sync);
        if (r >= 0)
                r = journal_check(d);
        atomic_store(&d->saving_since, 0);
        for (size_t i = 0; i < n; i++)
                free(paths[i]);
        free(paths);
        if (r < 0) {
                selfstats_count(SELF_STATE_SAVE_FAILURES);
                fail(d, r, seq);
                if (!last)
                        wake_all(d);
                return r;
        }
        atomic_store(&d->saved, seq);
        /* Relaxed: a report, ordered with nothing. */
        atomic_store_explicit(&d->last_save_usec, clock_now_usec(CLOCK_REALTIME), memory_order_relaxed);
        atomic_fetch_add_explicit(&d->saves, 1, memory_order_relaxed);
        selfstats_count(SELF_STATE_SAVES);
        /* After the last save nobody waits (the transports are gone);
         * before it, the OKs go out first: the reservation only guards
         * the next save. */
        if (last)
                return 0;
        wake_all(d);
        r = reserve_next(d);
        if (r < 0) {
                fail(d, r, 0);
                return r;
        }
        if (atomic_exchange(&d->error, 0) < 0)
                log_notice("State saved again to %s: durable changes are accepted", d->state_dir);
        return 0;
}

static void *saver_main(void *userdata) {
        Saver *d = userdata;
        uint64_t retry_at = 0;
        int r;

        r = core_thread_register(d->core);
        thread_started(&d->start, r);
        if (r < 0)
                return NULL;

        pthread_mutex_lock(&d->lock);
        while (!d->stop) {
                bool failing = atomic_load(&d->error) < 0;
                bool pending = atomic_load(&d->changed) > atomic_load(&d->saved) || d->journal_fd < 0;
                uint64_t now = clock_now_msec(CLOCK_MONOTONIC);

                /* The first save (whole: the journal replayed at start is
                 * folded into the state), every change, and a failure's
                 * retry. */
                if ((pending || failing) && (!failing || now >= retry_at)) {
                        pthread_mutex_unlock(&d->lock);
                        r = save(d, false);
                        pthread_mutex_lock(&d->lock);
                        if (atomic_load(&d->error) < 0)
                                retry_at = clock_now_msec(CLOCK_MONOTONIC) + SAVER_RETRY_MSEC;
                        continue;
                }
                if (failing) {
                        struct timespec ts = {
                                .tv_sec = (time_t) (retry_at / 1000),
                                .tv_nsec = (long) (retry_at % 1000) * 1000000,
                        };

                        pthread_cond_timedwait(&d->cond, &d->lock, &ts);
                } else
                        pthread_cond_wait(&d->cond, &d->lock);
        }
        pthread_mutex_unlock(&d->lock);

        /* The last save, whatever changed (kept charges released as the
         * sessions ended are saved too): the whole state, so that the
         * next start finds an empty journal. */
        pthread_mutex_lock(&d->lock);
        d->dirty_all = true;
        pthread_mutex_unlock(&d->lock);
        r = save(d, true);
        if (r < 0)
                log_error_errno(r, "The last save of the state to %s failed (%s: %m)", d->state_dir, d->step);
        d->result = r;
        core_thread_unregister(d->core);
        return NULL;
}

int saver_start(Saver *d) {
        int r;

        /* The first reservation on the caller's thread: a state directory
         * that cannot be written is reported before READY=1. */
        r = reserve(d);
        if (r < 0)
                fail(d, r, 0);
        r = thread_start(&d->thread, &d->start, saver_main, d);
        if (r < 0)
                return r;
        d->running = true;
        return 0;
}

int saver_stop(Saver *d) {
        if (!d || !d->running)
                return 0;
        pthread_mutex_lock(&d->lock);
        d->stop = true;
        pthread_cond_signal(&d->cond);
        pthread_mutex_unlock(&d->lock);
        pthread_join(d->thread, NULL);
        d->running = false;
        return d->result;
}

Saver *saver_free(Saver *d) {
        if (!d)
                return NULL;
        (void) saver_stop(d);
        if (d->spare_fd >= 0)
                close(d->spare_fd);
        if (d->journal_fd >= 0)
                close(d->journal_fd);
        for (size_t i = 0; i < d->ndirty; i++)
                free(d->dirty[i]);
        free(d->dirty);
        pthread_mutex_destroy(&d->lock);
        pthread_cond_destroy(&d->cond);
        free(d->state_dir);
        free(d);
        return NULL;
}

void saver_status(Saver *d, SaverStatus *ret) {
        int error = atomic_load(&d->error);

        *ret = (SaverStatus) {
                .error = error,
                .changed = atomic_load(&d->changed),
                .saved = atomic_load(&d->saved),
                .saves = atomic_load_explicit(&d->saves, memory_order_relaxed),
                .last_save_usec = atomic_load_explicit(&d->last_save_usec, memory_order_relaxed),
                .sync = atomic_load(&d->sync),
        };
        if (error < 0) {
                pthread_mutex_lock(&d->lock);
                snprintf(ret->cause, sizeof(ret->cause), "%s", d->cause);
                pthread_mutex_unlock(&d->lock);
        }
}
