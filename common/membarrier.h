/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * A memory barrier on every running thread of the process, for the
 * asymmetric fences of the core's flush (docs/kernel.md): the hot side
 * pays nothing, the rare side pays a system call. liburcu's memb flavour
 * relies on the same membarrier(2) command.
 */

#include <stdbool.h>

/** membarrier_register() - make membarrier_all() usable. Return: false when the kernel lacks it. */
bool membarrier_register(void);

/**
 * membarrier_all() - run a full memory barrier on every thread of the
 * process that is running now (threads not running have passed one when
 * they were switched out). After membarrier_register() only.
 *
 * Return: 0 or a negative errno.
 */
int membarrier_all(void);
