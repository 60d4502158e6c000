/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdint.h>

/**
 * parse_size() - parse a byte quantity as the command line and the config
 * file take it: decimal digits with an optional K, M, G, T, P or E suffix
 * (1024-based, either case), or "max" / "infinity" for no limit
 * (UINT64_MAX). Surrounding white space is ignored.
 *
 * Unlike the kernel's memparse() there is no octal or hex and no fraction:
 * "010" is ten, "1.5G" is an error; a surprise in a limit is worse than a
 * refusal.
 *
 * Return: 0, -EINVAL (not a size), -ERANGE (does not fit in 64 bits).
 */
int parse_size(const char *s, uint64_t *ret);
