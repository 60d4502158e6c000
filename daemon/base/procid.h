/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * Process instances: which process a pid names. A pid is recycled once
 * its process is reaped, so a pid alone cannot say whether the process
 * that opened a session is the one that has the pid now. An instance
 * stamp can: equal for the same process, different for any other that
 * gets its pid. The core keys its clients by pid and stamp.
 *
 * The stamp is, where the kernel has pidfs (6.9 on, 64-bit inode
 * numbers), the inode number of the process's pidfd, which the kernel
 * never gives to another process while it runs; otherwise the process's
 * start time (/proc/PID/stat field 22, in clock ticks since boot). Both
 * kinds are tagged in the top two bits, so a stamp of one kind never
 * equals one of the other. Which kind a stamp is depends on the kernel
 * only, so every transport, and the look-up of "the process that has this
 * pid now", give the same stamp for the same process.
 */

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define PROC_INSTANCE_KIND_MASK (UINT64_C(3) << 62)
#define PROC_INSTANCE_PIDFS (UINT64_C(1) << 62) /* | the pidfd's inode number */
#define PROC_INSTANCE_START (UINT64_C(2) << 62) /* | the start time in ticks */
#define PROC_INSTANCE_GONE (UINT64_C(3) << 62)  /* | a serial: no live process has it */

/**
 * proc_stat_start_time() - field 22 (starttime) of the text of
 * /proc/PID/stat in @buf (@size bytes, no NUL needed). comm (field 2) is
 * whatever the process chose, spaces and parentheses included: the fields
 * after it are found from its last ')'. Return: 0; -EBADMSG.
 */
int proc_stat_start_time(const char *buf, size_t size, uint64_t *ret);

/**
 * proc_instance_of_pidfd() - the stamp of the process @pidfd refers to
 * (@pid is its pid in our namespace). A pidfd cannot be recycled, so this
 * has no race: a process that has already exited gets a stamp no live
 * process has. Any thread. Return: 0; a negative errno (the stamp could
 * not be read: none).
 */
int proc_instance_of_pidfd(pid_t pid, int pidfd, uint64_t *ret);

/**
 * proc_instance_of_pid() - the stamp of the process that has @pid now.
 * Any thread. Return: 0; -ESRCH (no such process); another negative errno.
 */
int proc_instance_of_pid(pid_t pid, uint64_t *ret);

/**
 * proc_instance_gone() - a fresh stamp that no process has, for a peer
 * whose process could not be identified (it exited before it was asked
 * about): its sessions are never taken for a live process's. Any thread.
 */
uint64_t proc_instance_gone(void);
