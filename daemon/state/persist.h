/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * The state file: groups, their limits and owners, kept charges, and the
 * device memory regions with each group's limits and kept charges in
 * them, so that they survive a restart. Session charges are not saved:
 * their clients re-attach and re-charge.
 *
 * <dir>/state       the current state, replaced atomically on every save
 * <dir>/state.old   the state before the last save
 * <dir>/state.bad   a damaged state found at startup, set aside
 * <dir>/journal     the changes saved since the state, one batch per save
 *                   (journal.c); replayed over the state at start
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/core.h"

#define PERSIST_STATE "state"
#define PERSIST_STATE_OLD "state.old"
#define PERSIST_STATE_BAD "state.bad"
#define PERSIST_STATE_OLD_BAD "state.old.bad"
#define PERSIST_JOURNAL "journal"
#define PERSIST_JOURNAL_BAD "journal.bad"

/**
 * persist_format() - the state text of @core: a header line, a line per
 * device region, one line per group in pre-order (parents first), and a
 * trailer with the group count and a checksum of everything before it. The calling thread is registered
 * with @core; concurrent changes may or may not be included.
 * @ret: malloc'ed text (not NUL-terminated); @ret_size: its length
 *
 * Return: 0 or -ENOMEM.
 */
int persist_format(MemCore *core, char **ret, size_t *ret_size);

/**
 * persist_check() - validate state text completely (header, every line,
 * pre-order, no duplicates, count and checksum), as restore does before it
 * touches a core. Pure; for tests and fuzzing.
 * @max_depth, @max_groups: the configured bounds the state must fit in
 * @ret_error: optional; on failure a malloc'ed reason ("line 3: ...")
 *
 * Return: the number of groups; -EBADMSG (damaged or truncated); -EMLINK
 * (a path deeper than @max_depth); -ENOSPC (more than @max_groups);
 * -ENOMEM.
 */
int persist_check(const char *text, size_t size, unsigned max_depth, unsigned max_groups, char **ret_error);

/**
 * persist_reserve() - create @dir/state.tmp with @size bytes allocated to
 * it (fallocate(2), keeping its size 0): the room the next save writes
 * into, so that a full disk refuses the reservation rather than a save.
 * A file system that cannot preallocate gets the file without. Nothing
 * is logged. Return: 0 with the open file in *@ret_fd; -ENOSPC, -EROFS,
 * -EACCES, another negative errno.
 */
int persist_reserve(const char *dir, uint64_t size, int *ret_fd);

/**
 * persist_save() - write @core's state to @dir/state atomically: into
 * @spare_fd (from persist_reserve(); taken and closed) or, with -1, a new
 * temporary file in @dir; with @sync, fsync; the current state
 * hard-linked to state.old; rename over state; with @sync, fsync of @dir.
 * A reader never sees a partial file. Nothing is logged: on failure
 * *@ret_step says what failed ("write state.tmp"). The calling thread is
 * registered with @core; one saver at a time.
 * @ret_size: optional; the size of the state written
 *
 * Return: 0 or a negative errno.
 */
int persist_save(MemCore *core, const char *dir, int spare_fd, bool sync, size_t *ret_size,
                 const char **ret_step);

/**
 * persist_restore() - load @dir/state into @core, which holds only its
 * root and is used by no other thread yet. Nothing is applied before the
 * whole file is validated. A damaged or truncated state is renamed to
 * state.bad and state.old is used instead; with neither, the tree stays
 * empty. Every outcome is logged. Creates @dir (0700) when missing.
 * The regions are registered first; kept charges, memory's and the
 * regions', are restored forced, before any limit (limits may have been
 * lowered).
 *
 * Return: 0 (restored, or nothing to restore); -EMLINK or -ENOSPC when
 * the state does not fit the configured depth or group count; another
 * negative errno when the directory or file cannot be used (the daemon
 * must not start: it could not save either).
 */
int persist_restore(MemCore *core, const char *dir);

/**
 * persist_journal_batch() - the journal batch that records @paths (the
 * groups changed; their ancestors are added): every device region @core
 * has, each group's state as @core has it now, or its removal, and the
 * commit line. The calling thread is
 * registered with @core. Return: 0 with malloc'ed text; -ENOMEM.
 */
int persist_journal_batch(MemCore *core, const char *const *paths, size_t n, char **ret, size_t *ret_size);

/**
 * persist_journal_reset() - replace @dir/journal by an empty one (a new
 * file renamed over; with @sync, fsync'ed with its directory), after a
 * save of the whole state made the old one redundant. Return: 0 with the
 * new journal open for appending in *@ret_fd and its size; a negative
 * errno, with *@ret_step saying what failed. Nothing is logged.
 */
int persist_journal_reset(const char *dir, bool sync, int *ret_fd, uint64_t *ret_size, const char **ret_step);

/**
 * persist_journal_append() - append the batch @text to the journal @fd;
 * with @sync, fdatasync(). Return: 0 or a negative errno (a part of the
 * batch may be in the file: save the whole state before appending more).
 */
int persist_journal_append(int fd, const char *text, size_t size, bool sync);

/**
 * persist_journal_check() - replay the journal @journal over the state
 * @state, as restore does, and check the result. Pure; for tests and
 * fuzzing. Return: the number of groups after the replay; -EBADMSG,
 * -EMLINK, -ENOSPC, -ENOMEM, with @ret_error (optional, malloc'ed).
 */
int persist_journal_check(const char *state, size_t state_size, const char *journal, size_t journal_size,
                          unsigned max_depth, unsigned max_groups, char **ret_error);
