/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * memacctctl import-cgroups: the report of an import (the counts, the
 * limits the kernel owns, the user-set limits kept), printed.
 */

#include <stdbool.h>

#include "memacct.h"

/**
 * print_import_report() - the counts as print_import() has them, then in
 * text which limits the kernel owns on the daemon's host and, per group,
 * the user-set limits the import kept beside the kernel's values; in JSON
 * the counts with "kept", "kernel_owns" (names) and "kept_limits"
 * ([{"group", "ours", "kernel"}]).
 * Return: 0 or EXIT_FAILURE (output failed).
 */
int print_import_report(const memacct_import_report *r, bool json);
