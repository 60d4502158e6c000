/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

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
