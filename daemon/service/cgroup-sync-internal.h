/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * What the files of the kernel cgroup mirror share: cgroup-sync.c (the
 * mirror) and cgroup-read.c (the files of one cgroup directory).
 */

#include <stddef.h>

#include "service/cgroup-sync.h"

/**
 * cgroup_read_file() - read @dir/@name into @buf (@size bytes, NUL-terminated). Any thread.
 * Return: 0; -ENAMETOOLONG; -errno of open() or read().
 */
int cgroup_read_file(const char *dir, const char *name, char *buf, size_t size);
