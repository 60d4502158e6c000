/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The state directory: restoring the state at start, saving it, and the
 * room kept on disk for the next save. The text itself is persist.c's.
 *
 * Invariants: the file named "state" is always complete (written to a
 * temporary file, fsync'ed, renamed over, directory fsync'ed); the state
 * it replaces stays as "state.old"; and a state found damaged at startup
 * is renamed aside, never overwritten, so no good state is lost silently.
 */

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "core/charge.h"
#include "core/region.h"
#include "file-util.h"
#include "macro.h"
#include "base/log.h"
#include "state/persist-internal.h"
#include "base/selfstats.h"

/* mkdir -p; the last component gets @mode, the ones above it 0755. */
static int mkdir_p(const char *dir, mode_t mode) {
        _cleanup_free_ char *p = strdup(dir);
        char *s;

        if (!p)
                return -ENOMEM;
        for (s = p + 1; *s; s++) {
                if (*s != '/')
                        continue;
                *s = 0;
                if (mkdir(p, 0755) < 0 && errno != EEXIST)
                        return -errno;
                *s = '/';
        }
        if (mkdir(p, mode) < 0 && errno != EEXIST)
                return -errno;
        return 0;
}

static int open_dir(const char *dir, int *ret) {
        int fd, r;

        r = mkdir_p(dir, 0700);
        if (r < 0)
                return log_error_errno(r, "Cannot create the state directory %s: %m", dir);
        fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0)
                return log_error_errno(errno, "Cannot open the state directory %s: %m", dir);
        *ret = fd;
        return 0;
}

/*
 * Load and check @dir/@name. Return: 0; -ENOENT; -EBADMSG (damaged:
 * logged); -EMLINK / -ENOSPC (does not fit the configuration: logged);
 * another negative errno (logged).
 */
static int state_load(MemCore *core, int dirfd, const char *dir, const char *name, State *ret) {
        CheckContext ctx = {};
        char *text = NULL;
        size_t size = 0;
        int r;

        r = read_file_at(dirfd, name, O_NOFOLLOW, SIZE_MAX, &text, &size);
        if (r == -ENOENT)
                return r;
        if (r == -EINVAL) /* damaged: set aside, as a bad file is */
                return log_error_errno(EBADMSG, "State file %s/%s is not a regular file", dir, name);
        if (r < 0)
                return log_error_errno(r, "Cannot read the state file %s/%s: %m", dir, name);
        r = state_parse(text, size, core->config.max_depth, core->config.max_groups, ret, &ctx);
        if (r == -EBADMSG)
                log_error("State file %s/%s is damaged: %s", dir, name, ctx.error ? ctx.error : "?");
        else if (r == -EMLINK || r == -ENOSPC)
                log_error("State file %s/%s does not fit the configuration: it %s; "
                          "raise the limit or move the file away",
                          dir, name, ctx.error ? ctx.error : "?");
        else if (r < 0)
                log_error_errno(r, "Cannot check the state file %s/%s: %m", dir, name);
        free(ctx.error);
        return r;
}

/* A saved kept charge, in memory (of @item) or in the device region @key
 * (@item unused), forced and in pieces the core takes. */
static int charge_kept_forced(MemCore *core, MemGroup *g, int key, MemStatItem item, uint64_t bytes,
                              unsigned flags) {
        flags |= MEM_CHARGE_FORCE | MEM_CHARGE_NO_OOM;
        while (bytes > 0) {
                uint64_t n = MIN(bytes, MEM_CHARGE_MAX);
                MemChargeResult res;
                int r;

                r = key == MEM_REGION_MEMORY ? group_charge_kept(core, g, n, item, flags, &res)
                                             : region_charge_kept(core, g, key, n, flags, &res);
                charge_result_done(&res);
                if (r < 0)
                        return r;
                bytes -= n;
        }
        return 0;
}

/* The key of @st's region named by the use @u (parsed: its name is the region's own pointer). */
static int use_key(const State *st, const int *keys, const StateRegionUse *u) {
        for (unsigned i = 0; i < st->regions.n; i++)
                if (st->regions.v[i].name == u->region)
                        return keys[i];
        return -ENOENT;
}

/* Register @st's regions in @core, their keys into @keys. */
static int state_apply_regions(MemCore *core, const State *st, const char *file, int *keys) {
        for (unsigned i = 0; i < st->regions.n; i++) {
                int r = core_region_add(core, st->regions.v[i].name, st->regions.v[i].capacity);

                if (r < 0)
                        return log_error_errno(r, "Cannot restore region %s from %s: %m", st->regions.v[i].name,
                                               file);
                keys[i] = r;
        }
        return 0;
}

/* @sg's kept charges in its regions, forced; @g is its group. */
static int state_apply_region_kept(MemCore *core, const State *st, const int *keys, const StateGroup *sg,
                                   MemGroup *g) {
        for (unsigned k = 0; k < sg->nr_regions; k++) {
                const StateRegionUse *u = &sg->regions[k];
                int key = use_key(st, keys, u), r;

                /* state_parse() saw kept_delegator <= kept. */
                r = key < 0 ? key : charge_kept_forced(core, g, key, MEM_STAT_ANON, u->kept - u->kept_delegator, 0);
                if (r >= 0)
                        r = charge_kept_forced(core, g, key, MEM_STAT_ANON, u->kept_delegator, MEM_CHARGE_DELEGATOR);
                if (r < 0)
                        return log_error_errno(r, "Cannot restore the kept charge of %s in region %s: %m", sg->path,
                                               u->region);
        }
        return 0;
}

/* @sg's limits in its regions (never a max on the root: state_parse() checked it). */
static int state_apply_region_limits(MemCore *core, const State *st, const int *keys, const StateGroup *sg,
                                     MemGroup *g) {
        for (unsigned k = 0; k < sg->nr_regions; k++) {
                const StateRegionUse *u = &sg->regions[k];
                int key = use_key(st, keys, u), r;

                if (!u->limits.set)
                        continue;
                r = key < 0 ? key : region_set_limits(core, g, key, &u->limits, true);
                if (r < 0)
                        return log_error_errno(r, "Cannot restore the limits of %s in region %s: %m", sg->path,
                                               u->region);
                if (r > 0)
                        log_warning("Restored group %s holds more kept charges in region %s than its max", sg->path,
                                    u->region);
        }
        return 0;
}

/* @sg's group, created by state_apply()'s first pass; logged if it is gone. */
static int restored_group(MemCore *core, const StateGroup *sg, MemGroup **ret) {
        int r;

        r = group_get(core, sg->path, ret);
        if (r < 0)
                return log_error_errno(r, "Cannot find restored group %s: %m", sg->path);
        return 0;
}

/* The depth of a checked path: its slashes, "/" being 0. */
static unsigned path_depth(const char *path) {
        unsigned n = 0;

        if (path[1] == 0)
                return 0;
        for (; *path; path++)
                n += *path == '/';
        return n;
}

/*
 * Which groups of @st hold kept charges in their subtree (their own or a
 * descendant's): only those can have usage when the limits are set. The
 * groups are in pre-order (state_parse() checked it), so a group's parent
 * is the last group seen one level up. Return: the flags (free()), NULL
 * on OOM.
 */
static bool *state_subtree_held(const State *st) {
        _cleanup_free_ size_t *parent = malloc(st->n * sizeof(size_t));
        bool *held = calloc(st->n, sizeof(bool));
        size_t stack[256];

        if (!parent || !held) {
                free(held);
                return NULL;
        }
        for (size_t i = 0; i < st->n; i++) {
                unsigned depth = path_depth(st->groups[i].path);

                assert(depth < ELEMENTSOF(stack));
                stack[depth] = i;
                parent[i] = depth > 0 ? stack[depth - 1] : 0;
                for (MemStatItem item = 0; item < _MEM_STAT_MAX; item++)
                        if (st->groups[i].kept[item] > 0)
                                held[i] = true;
        }
        /* Children come after their parent: backwards, each passes its flag up. */
        for (size_t i = st->n; i-- > 1;)
                if (held[i])
                        held[parent[i]] = true;
        return held;
}

/* Does state_apply() need @st's group @i again after its create? In the order it looks them up. */
static bool needs_group(const State *st, const bool *held, size_t i) {
        return i == 0 || held[i] || st->groups[i].transient || st->groups[i].user_limits ||
               st->groups[i].nr_regions > 0;
}

/* The kept charges, forced, before any limit is set: @groups are needs_group()'s, in order. */
static int state_apply_kept(MemCore *core, const State *st, const int *keys, const bool *held,
                            MemGroup *const *groups) {
        size_t k = 0;
        int r;

        for (size_t i = 0; i < st->n; i++) {
                const StateGroup *sg = &st->groups[i];

                if (!needs_group(st, held, i))
                        continue;
                for (MemStatItem item = 0; item < _MEM_STAT_MAX; item++) {
                        /* persist_check() saw kept_delegator <= kept. */
                        r = charge_kept_forced(core, groups[k], MEM_REGION_MEMORY, item,
                                               sg->kept[item] - sg->kept_delegator[item], 0);
                        if (r >= 0)
                                r = charge_kept_forced(core, groups[k], MEM_REGION_MEMORY, item,
                                                       sg->kept_delegator[item], MEM_CHARGE_DELEGATOR);
                        if (r < 0)
                                return log_error_errno(r, "Cannot restore the kept %s charge of %s: %m",
                                                       mem_stat_item_to_string(item), sg->path);
                }
                r = state_apply_region_kept(core, st, keys, sg, groups[k]);
                if (r < 0)
                        return r;
                k++;
        }
        return 0;
}

/*
 * The limits of the root and of the groups created without them (those
 * with kept charges below), and every limit in a region.
 */
static int state_apply_limits(MemCore *core, const State *st, const int *keys, const bool *held,
                              MemGroup *const *groups) {
        size_t k = 0;
        int r;

        for (size_t i = 0; i < st->n; i++) {
                const StateGroup *sg = &st->groups[i];

                if (!needs_group(st, held, i))
                        continue;
                if (i == 0 || held[i]) {
                        r = group_set_limits(groups[k], &sg->limits, true);
                        if (r < 0)
                                return log_error_errno(r, "Cannot restore the limits of %s: %m", sg->path);
                        if (r > 0)
                                log_warning("Restored group %s holds more kept charges than its max", sg->path);
                }
                r = state_apply_region_limits(core, st, keys, sg, groups[k]);
                if (r < 0)
                        return r;
                k++;
        }
        return 0;
}

/*
 * Build the tree: the regions, groups top-down, then kept charges
 * (forced, before any limit exists, so they raise no events), then the
 * limits. The core is private to the caller, so only resource errors can
 * occur.
 *
 * A group with no kept charge in its subtree has no usage when the limits
 * are set, so setting them later or at creation
 * (group_create_child(), which applies them before the group is linked)
 * gives the same counter: those are created with their limits, and only
 * the groups that need more than the create (kept charges below them, a
 * transient flag, user limits) are kept in @groups for the passes after.
 * No group is looked up by path: each is created below its parent's
 * reference. At a million groups the lookups were most of the restore.
 */
static int state_apply(MemCore *core, const State *st, const char *file) {
        _cleanup_free_ bool *held = state_subtree_held(st);
        _cleanup_free_ MemGroup **groups = NULL;
        /* The last group created at each depth, referenced: in pre-order
         * the parent of a group is the one a level up, and is created
         * below it without a lookup. */
        MemGroup *open[256] = {};
        int keys[MEM_REGION_MAX - 1];
        size_t n = 0;
        int r;

        if (!held)
                return log_error_errno(ENOMEM, "Out of memory");
        groups = malloc(st->n * sizeof(MemGroup *));
        if (!groups)
                return log_error_errno(ENOMEM, "Out of memory");
        r = state_apply_regions(core, st, file, keys);
        if (r < 0)
                return r;
        r = restored_group(core, &st->groups[0], &open[0]);
        if (r < 0)
                return r;
        for (size_t i = 0; i < st->n; i++) {
                const StateGroup *sg = &st->groups[i];
                unsigned depth = path_depth(sg->path);

                /* The root exists already; its limits are set below. */
                if (i > 0) {
                        MemGroup *g;

                        /* state_parse() checked the order; not trusted blindly. */
                        if (depth == 0 || depth >= ELEMENTSOF(open) || !open[depth - 1])
                                r = -EINVAL;
                        else
                                r = group_create_child(core, open[depth - 1], sg->path, sg->owner,
                                                       held[i] ? NULL : &sg->limits, &g);
                        if (r < 0) {
                                r = log_error_errno(r, "Cannot restore group %s from %s: %m", sg->path, file);
                                goto out;
                        }
                        if (open[depth])
                                group_unref(open[depth]);
                        open[depth] = g;
                }
                if (!needs_group(st, held, i))
                        continue;
                groups[n++] = group_ref(open[depth]);
                /* The service makes it an orphan (service_new()). */
                atomic_store(&groups[n - 1]->transient, sg->transient);
                group_set_user_limits(groups[n - 1], sg->user_limits);
        }
        r = state_apply_kept(core, st, keys, held, groups);
        if (r >= 0)
                r = state_apply_limits(core, st, keys, held, groups);
out:
        for (size_t i = 0; i < n; i++)
                group_unref(groups[i]);
        for (size_t d = 0; d < ELEMENTSOF(open); d++)
                if (open[d])
                        group_unref(open[d]);
        return r;
}

/*
 * Set a damaged file aside, so that the next save cannot overwrite it:
 * as @bad, or, when an earlier damaged file has that name, as
 * @bad.YYYYmmddTHHMMSSZ (.N after it when one second held several).
 * RENAME_NOREPLACE: no damaged file ever replaces another, each may be
 * the only copy of someone's state.
 */
static int set_aside(int dirfd, const char *dir, const char *name, const char *bad) {
        char to[NAME_MAX + 1], stamp[32];
        time_t now = time(NULL);
        struct tm tm;

        snprintf(to, sizeof(to), "%s", bad);
        if (!gmtime_r(&now, &tm) || strftime(stamp, sizeof(stamp), "%Y%m%dT%H%M%SZ", &tm) == 0)
                snprintf(stamp, sizeof(stamp), "%lld", (long long) now);
        for (unsigned n = 0; renameat2(dirfd, name, dirfd, to, RENAME_NOREPLACE) < 0; n++) {
                if (errno != EEXIST || n >= 1000)
                        return log_error_errno(errno, "Cannot rename the damaged %s/%s to %s: %m", dir, name, to);
                if (n == 0)
                        snprintf(to, sizeof(to), "%s.%s", bad, stamp);
                else
                        snprintf(to, sizeof(to), "%s.%s.%u", bad, stamp, n);
        }
        log_error("Kept the damaged state as %s/%s", dir, to);
        return 0;
}

/* A tree of the root alone, with its defaults: what a journal replays over when there is no state. */
static int state_root_only(State *ret) {
        StateGroup *root = calloc(1, sizeof(StateGroup));

        if (!root)
                return -ENOMEM;
        *root = (StateGroup) {
                .path = (char *) "/",
                .limits = { .max = UINT64_MAX, .high = UINT64_MAX },
        };
        *ret = (State) { .groups = root, .n = 1 };
        return 0;
}

/*
 * Replay @dir/journal over @st. A journal that ends in a save cut short
 * replays what came before (that save's OKs were never sent); a damaged
 * one too, and is kept aside as journal.bad; one that cannot be used at
 * all is set aside and @st stays. Return: 0, or -EMLINK / -ENOSPC (the
 * result does not fit the configuration), -ENOMEM; logged.
 */
static int journal_load(MemCore *core, int dirfd, const char *dir, State *st, unsigned *ret_batches) {
        _cleanup_free_ char *text = NULL;
        CheckContext ctx = {};
        JournalInfo info;
        size_t size = 0;
        int r;

        *ret_batches = 0;
        r = read_file_at(dirfd, PERSIST_JOURNAL, O_NOFOLLOW, SIZE_MAX, &text, &size);
        if (r == -ENOENT)
                return 0;
        if (r < 0) {
                log_error_errno(r, "Cannot read the journal %s/%s, ignoring it: %m", dir, PERSIST_JOURNAL);
                (void) set_aside(dirfd, dir, PERSIST_JOURNAL, PERSIST_JOURNAL_BAD);
                return 0;
        }
        if (st->n == 0) {
                r = state_root_only(st);
                if (r < 0)
                        return log_error_errno(r, "Out of memory");
        }
        r = journal_replay(st, text, size, core->config.max_depth, core->config.max_groups, &info, &ctx);
        if (r == -EMLINK || r == -ENOSPC)
                log_error("The state with its journal %s/%s does not fit the configuration: it %s; raise the "
                          "limit or move the files away", dir, PERSIST_JOURNAL, ctx.error ? ctx.error : "?");
        else if (r < 0 && r != -ENOMEM) {
                log_error("The journal %s/%s cannot be used (%s): restoring the state without it", dir,
                          PERSIST_JOURNAL, ctx.error ? ctx.error : "?");
                (void) set_aside(dirfd, dir, PERSIST_JOURNAL, PERSIST_JOURNAL_BAD);
                r = 0;
        } else if (r >= 0 && info.damaged) {
                log_error("The journal %s/%s is damaged (%s): the changes saved after that point are lost",
                          dir, PERSIST_JOURNAL, ctx.error ? ctx.error : "?");
                (void) set_aside(dirfd, dir, PERSIST_JOURNAL, PERSIST_JOURNAL_BAD);
        } else if (r >= 0 && info.torn)
                log_info("The journal %s/%s ends in a save cut short (its changes were never acknowledged): "
                         "ignored", dir, PERSIST_JOURNAL);
        free(ctx.error);
        if (r >= 0)
                *ret_batches = info.batches;
        return r;
}

int persist_restore(MemCore *core, const char *dir) {
        _cleanup_(state_done) State st = {};
        _cleanup_close_ int dirfd = -EBADF;
        const char *used = PERSIST_STATE;
        bool damaged = false, fallback = false;
        int r;

        r = open_dir(dir, &dirfd);
        if (r < 0)
                return r;

        r = state_load(core, dirfd, dir, PERSIST_STATE, &st);
        if (r == -EBADMSG) {
                damaged = true;
                r = set_aside(dirfd, dir, PERSIST_STATE, PERSIST_STATE_BAD);
                if (r < 0)
                        return r;
                r = -ENOENT;
        }
        if (r == -ENOENT) {
                used = PERSIST_STATE_OLD;
                fallback = true;
                r = state_load(core, dirfd, dir, PERSIST_STATE_OLD, &st);
                if (r == -EBADMSG) {
                        r = set_aside(dirfd, dir, PERSIST_STATE_OLD, PERSIST_STATE_OLD_BAD);
                        if (r < 0)
                                return r;
                        log_error("No usable state in %s: starting from the journal alone, if any", dir);
                        r = 0;
                        goto replay;
                }
                if (r == -ENOENT) {
                        if (damaged)
                                log_error("No previous state %s/%s to fall back to: starting from the journal "
                                          "alone, if any", dir, PERSIST_STATE_OLD);
                        else
                                log_info("No saved state in %s: starting with an empty tree", dir);
                        r = 0;
                        goto replay;
                }
        }
        if (r < 0)
                return r;

replay:
        {
                _cleanup_free_ char *file = NULL;
                unsigned batches;

                r = journal_load(core, dirfd, dir, &st, &batches);
                if (r < 0)
                        return r;
                if (st.n == 0)
                        return 0;

                if (asprintf(&file, "%s/%s", dir, used) < 0)
                        return log_error_errno(ENOMEM, "Out of memory");
                r = state_apply(core, &st, file);
                if (r < 0)
                        return r;
                if (st.regions.n > 0)
                        log_info("Restored %u device memory regions from %s", st.regions.n, file);
                if (!fallback)
                        log_info("Restored %zu groups from %s and %u saves of its journal", st.n, file, batches);
                else
                        log_warning("Restored %zu groups from the previous state %s and %u saves of the "
                                    "journal%s", st.n, file, batches,
                                    damaged ? "; changes saved between them are lost" : "");
        }
        return r;
}

/* fsync() (fdatasync() with @data_only) of @fd, timed for memacctd_fsync_duration_seconds. */
static int timed_sync(int fd, bool data_only) {
        uint64_t start = selfstats_clock_nsec();
        int r = data_only ? fdatasync(fd) : fsync(fd);

        selfstats_observe(SELF_HIST_FSYNC, selfstats_clock_nsec() - start);
        return r;
}

/* timed_sync() as the atomic replace of file-util.h wants it. */
static int timed_fsync(int fd) {
        return timed_sync(fd, false) < 0 ? -errno : 0;
}

/* Return: the directory's descriptor, or a negative errno. */
static int open_state_dir(const char *dir) {
        int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

        return fd < 0 ? -errno : fd;
}

int persist_reserve(const char *dir, uint64_t size, int *ret_fd) {
        int dirfd, fd, r;

        dirfd = open_state_dir(dir);
        if (dirfd < 0)
                return dirfd;
        fd = openat(dirfd, STATE_TMP, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
        r = fd < 0 ? -errno : 0;
        close(dirfd);
        if (r < 0)
                return r;
        /* KEEP_SIZE: the blocks are ours, the file stays empty until a
         * save writes into them. A file system that cannot preallocate
         * still gets its save; only the reservation is lost. */
        if (size > 0 && fallocate(fd, FALLOC_FL_KEEP_SIZE, 0, (off_t) MIN(size, (uint64_t) INT64_MAX)) < 0 &&
            errno != EOPNOTSUPP && errno != ENOSYS) {
                r = -errno;
                close(fd);
                return r;
        }
        *ret_fd = fd;
        return 0;
}

/*
 * The current state becomes state.old without a moment in which "state"
 * is missing: a second name for it, renamed over the old state.old. Where
 * hard links fail, move it (restore falls back to state.old when state is
 * missing). Return: 0 (also when there is no state yet), or -errno.
 */
static int keep_previous_state(int dirfd) {
        struct stat st;
        int r;

        if (fstatat(dirfd, PERSIST_STATE, &st, AT_SYMLINK_NOFOLLOW) < 0)
                return 0;
        (void) unlinkat(dirfd, STATE_OLD_TMP, 0);
        if (linkat(dirfd, PERSIST_STATE, dirfd, STATE_OLD_TMP, 0) == 0)
                r = renameat(dirfd, STATE_OLD_TMP, dirfd, PERSIST_STATE_OLD);
        else
                r = renameat(dirfd, PERSIST_STATE, dirfd, PERSIST_STATE_OLD);
        if (r < 0) {
                r = -errno;
                (void) unlinkat(dirfd, STATE_OLD_TMP, 0);
        }
        return r;
}

int persist_save(MemCore *core, const char *dir, int spare_fd, bool sync, size_t *ret_size,
                 const char **ret_step) {
        _cleanup_close_ int fd = spare_fd, dirfd = -EBADF;
        _cleanup_free_ char *text = NULL;
        FsyncFunc flush = sync ? timed_fsync : NULL;
        const char *step = "format the state";
        AtomicStep at;
        size_t size = 0;
        int r;

        r = persist_format(core, &text, &size);
        if (r < 0)
                goto out;
        step = "open the state directory";
        r = dirfd = open_state_dir(dir);
        if (r < 0)
                goto out;

        /* The spare descriptor is the reservation: written into and truncated. */
        r = write_tmp_file_at(dirfd, STATE_TMP, TAKE_FD(fd), text, size, flush, &at);
        if (r < 0) {
                step = at == ATOMIC_STEP_CREATE ? "create " STATE_TMP : "write " STATE_TMP;
                goto out;
        }
        step = "keep the previous state as " PERSIST_STATE_OLD;
        r = keep_previous_state(dirfd);
        if (r < 0) {
                (void) unlinkat(dirfd, STATE_TMP, 0);
                goto out;
        }
        r = rename_tmp_file_at(dirfd, STATE_TMP, PERSIST_STATE, flush, &at);
        if (r < 0) {
                step = at == ATOMIC_STEP_RENAME ? "rename " STATE_TMP " to " PERSIST_STATE
                                                : "fsync the state directory";
                goto out;
        }
        if (ret_size)
                *ret_size = size;
out:
        if (ret_step)
                *ret_step = r < 0 ? step : NULL;
        return r;
}

int persist_journal_reset(const char *dir, bool sync, int *ret_fd, uint64_t *ret_size, const char **ret_step) {
        const char *step = "open the state directory";
        int dirfd, fd = -1, r;
        AtomicStep at;

        dirfd = open_state_dir(dir);
        r = dirfd < 0 ? dirfd : 0;
        if (r >= 0) {
                step = "create " JOURNAL_TMP;
                fd = openat(dirfd, JOURNAL_TMP, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC | O_NOFOLLOW,
                            0600);
                r = fd < 0 ? -errno : 0;
        }
        if (r >= 0) {
                step = "write " JOURNAL_TMP;
                r = loop_write(fd, JOURNAL_HEADER, strlen(JOURNAL_HEADER));
        }
        if (r >= 0 && sync && timed_sync(fd, false) < 0)
                r = -errno;
        /* The descriptor stays open past the rename: appends go to it. */
        if (r >= 0) {
                r = rename_tmp_file_at(dirfd, JOURNAL_TMP, PERSIST_JOURNAL, sync ? timed_fsync : NULL, &at);
                if (r < 0)
                        step = at == ATOMIC_STEP_RENAME ? "rename " JOURNAL_TMP " to " PERSIST_JOURNAL
                                                        : "fsync the state directory";
        }
        if (r < 0) {
                if (fd >= 0) {
                        close(fd);
                        (void) unlinkat(dirfd, JOURNAL_TMP, 0);
                }
                fd = -1;
        }
        if (dirfd >= 0)
                close(dirfd);
        if (ret_step)
                *ret_step = r < 0 ? step : NULL;
        if (r < 0)
                return r;
        *ret_fd = fd;
        *ret_size = strlen(JOURNAL_HEADER);
        return 0;
}

int persist_journal_append(int fd, const char *text, size_t size, bool sync) {
        int r = loop_write(fd, text, size);

        /* fdatasync: the size the append grew is metadata it covers. */
        if (r >= 0 && sync && timed_sync(fd, true) < 0)
                r = -errno;
        return r;
}
