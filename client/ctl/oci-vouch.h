/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * What the OCI hook vouches for before it asks the daemon for a confining
 * placement rule (oci-vouch.c): that a cgroup is the container's.
 */

#include <stddef.h>
#include <sys/types.h>

/**
 * oci_proc_memory_cgroup() - the memory cgroup of @pid from /proc/PID/cgroup,
 * read as memacctd reads it for placement: v1's "memory" line when there is
 * one (on a hybrid host that is where memory is accounted), else the
 * unified "0::" line. Return: 0; -ESRCH (no such process); -ENOENT (no such
 * line); another negative errno.
 */
int oci_proc_memory_cgroup(pid_t pid, char *buf, size_t size);

/**
 * oci_vouch() - is @cgroup, @pid's memory cgroup, the container's? Not when
 * @pid is 1, the hook or an ancestor of it; not "/" or the hook's own
 * cgroup; and not elsewhere than the cgroupsPath of @bundle's config.json
 * when it names one ("" or an unreadable config.json: no such check).
 * @err: why not. Return: 0 or -EPERM (@err says why).
 */
int oci_vouch(pid_t pid, const char *bundle, const char *cgroup, char *err, size_t errlen);
