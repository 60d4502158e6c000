/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * memacctctl run's kernel memory cgroup: host memory is the kernel's to
 * account and enforce, so the command runs in a memory cgroup of its
 * own, with the group's path in the memory hierarchy (cgroup v2, or v1's
 * memory controller), and the group mirrors it (memacct_import_cgroups()):
 * show and top give the kernel's usage beside the device regions, and a
 * process of it that attaches "auto" lands in the group.
 */

#include <stdbool.h>
#include <stddef.h>

#include "memacct.h"

typedef struct RunCgroup {
        char dir[4096];  /* the cgroup's directory; "" when there is none */
        bool v2;         /* the unified hierarchy (else v1's memory controller) */
        char note[256];  /* what the kernel does not enforce of the limits asked; "" when all */
} RunCgroup;

/**
 * run_cgroup_create() - make the memory cgroup of group @path, with the
 * memory limits of @l (v1 has max only: c->note says the others are not
 * the kernel's). On failure @why says why in words (for the note or the
 * refusal).
 * Return: 0; a negative errno.
 */
int run_cgroup_create(RunCgroup *c, const char *path, const memacct_limits *l, char *why, size_t whylen);

/** run_cgroup_enter() - move the calling process into @c (in the child, before exec). Return: 0, -errno. */
int run_cgroup_enter(const RunCgroup *c);

/**
 * run_cgroup_remove() - remove @c once its processes are gone, waiting a
 * little for those that are exiting; says so on stderr when it stays.
 */
void run_cgroup_remove(RunCgroup *c);
