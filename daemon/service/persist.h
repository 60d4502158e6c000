/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * The state file: groups, their limits and owners, and kept charges, so
 * that they survive a restart. Session charges are not saved: their
 * clients re-attach and re-charge.
 *
 * <dir>/state       the current state, replaced atomically on every save
 * <dir>/state.old   the state before the last save
 * <dir>/state.bad   a damaged state found at startup, set aside
 */

#include <stddef.h>

#include "core/core.h"

#define PERSIST_STATE "state"
#define PERSIST_STATE_OLD "state.old"
#define PERSIST_STATE_BAD "state.bad"
#define PERSIST_STATE_OLD_BAD "state.old.bad"

/**
 * persist_format() - the state text of @core: a header line, one line per
 * group in pre-order (parents first), and a trailer with the group count
 * and a checksum of everything before it. The calling thread is registered
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
 * persist_save() - write @core's state to @dir/state atomically: a
 * temporary file in @dir, fsync, the current state hard-linked to
 * state.old, rename over state, fsync of @dir. Creates @dir (0700) when
 * missing. A reader never sees a partial file. Errors are logged. The
 * calling thread is registered with @core; one saver at a time.
 *
 * Return: 0 or a negative errno.
 */
int persist_save(MemCore *core, const char *dir);

/**
 * persist_restore() - load @dir/state into @core, which holds only its
 * root and is used by no other thread yet. Nothing is applied before the
 * whole file is validated. A damaged or truncated state is renamed to
 * state.bad and state.old is used instead; with neither, the tree stays
 * empty. Every outcome is logged. Creates @dir (0700) when missing.
 * Kept charges are restored forced (limits may have been lowered).
 *
 * Return: 0 (restored, or nothing to restore); -EMLINK or -ENOSPC when
 * the state does not fit the configured depth or group count; another
 * negative errno when the directory or file cannot be used (the daemon
 * must not start: it could not save either).
 */
int persist_restore(MemCore *core, const char *dir);
