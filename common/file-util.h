/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <errno.h>
#include <stddef.h>

/**
 * read_file_at() - the whole regular file @name (relative to @dirfd, or
 * AT_FDCWD), into a malloc'ed buffer with a NUL after its @ret_size bytes.
 * What fstat() said is read: a file growing under us is read up to there.
 * @flags: more open(2) flags (O_NOFOLLOW)
 * @max: the largest size accepted
 *
 * Return: 0; -EINVAL (not a regular file); -EFBIG (above @max); -ENOMEM;
 * the -errno of open() or read().
 */
int read_file_at(int dirfd, const char *name, int flags, size_t max, char **ret, size_t *ret_size);

/**
 * loop_write() - all @n bytes of @p to @fd, through short writes and
 * EINTR. Return: 0, or the -errno of write().
 */
int loop_write(int fd, const void *p, size_t n);

/**
 * fsync_fd() - fsync(2) as an FsyncFunc. Return: 0, or its -errno.
 */
int fsync_fd(int fd);

/*
 * How an atomic replace flushes the temporary file and then the directory:
 * fsync_fd(), or a caller's own (one that times each flush). Return: 0, or
 * a negative errno.
 */
typedef int (*FsyncFunc)(int fd);

/* Where an atomic replace failed, for the caller's words. */
typedef enum AtomicStep {
        ATOMIC_STEP_CREATE,   /* opening the temporary file */
        ATOMIC_STEP_WRITE,    /* writing, truncating, flushing or closing it */
        ATOMIC_STEP_RENAME,   /* renaming it over the file */
        ATOMIC_STEP_SYNC_DIR, /* flushing the directory */
        _ATOMIC_STEP_MAX,
        _ATOMIC_STEP_INVALID = -EINVAL,
} AtomicStep;

/*
 * Replacing a file atomically: its new contents written to a temporary
 * file beside it and flushed, then renamed over it, then the directory
 * flushed, so that a reader (or a restart after a crash) sees the old
 * file or the new one, never a mix. Two halves, for a caller with a step
 * of its own between them (the state keeps the file it replaces under a
 * second name), and both in one. A NULL @sync flushes nothing: the
 * replace is still atomic, but not durable.
 */

/**
 * write_tmp_file_at() - the first half: @size bytes of @data to @tmp in
 * @dirfd, flushed with @sync, closed.
 * @fd: a descriptor of @tmp already open for writing (room reserved ahead,
 *      and truncated to @size here), or -1 to create @tmp (0600, replacing
 *      any, not through a symlink). It is closed in every case.
 * @ret_step: where it failed (ATOMIC_STEP_CREATE or ATOMIC_STEP_WRITE)
 *
 * On a failure after @tmp was opened, @tmp is removed.
 * Return: 0, or a negative errno.
 */
int write_tmp_file_at(int dirfd, const char *tmp, int fd, const void *data, size_t size, FsyncFunc sync,
                      AtomicStep *ret_step);

/**
 * rename_tmp_file_at() - the second half: @tmp renamed over @name in
 * @dirfd, then @dirfd flushed with @sync. A failed rename removes @tmp.
 * @ret_step: where it failed (ATOMIC_STEP_RENAME or ATOMIC_STEP_SYNC_DIR)
 *
 * Return: 0, or a negative errno.
 */
int rename_tmp_file_at(int dirfd, const char *tmp, const char *name, FsyncFunc sync, AtomicStep *ret_step);

/**
 * write_file_atomic_at() - both halves: @name in @dirfd replaced by @size
 * bytes of @data, through @tmp. @ret_step (may be NULL): where it failed.
 *
 * Return: 0, or a negative errno; @name is untouched on a failure before
 * ATOMIC_STEP_SYNC_DIR.
 */
int write_file_atomic_at(int dirfd, const char *name, const char *tmp, const void *data, size_t size,
                         FsyncFunc sync, AtomicStep *ret_step);
