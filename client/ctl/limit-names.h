/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * The four limits by name (max high low min), as memacctctl's KEY=SIZE
 * arguments and the OCI hook's org.memacct.<name> annotations spell them.
 */

#include <stddef.h>
#include <stdint.h>

#include <memacct.h>

/**
 * limit_by_name() - the MEMACCT_LIMIT_* bit of the limit called @name,
 * @n bytes long (not NUL-terminated).
 * Return: the bit, or 0 for no limit of that name.
 */
unsigned limit_by_name(const char *name, size_t n);

/** limits_set() - set the limit @bit (MEMACCT_LIMIT_*) of @l to @bytes. */
void limits_set(memacct_limits *l, unsigned bit, uint64_t bytes);
