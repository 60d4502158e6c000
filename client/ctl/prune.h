/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * memacctctl prune: remove the daemon's mirrors of kernel cgroups that
 * no longer exist, and say what was removed and what stays and why.
 */

#include <stdbool.h>
#include <stdio.h>

#include <memacct.h>

/**
 * prune_print() - @list as "removed<TAB>GROUP" and "kept<TAB>GROUP<TAB>WHY"
 * lines, or with @json one object {"removed":[GROUP...],"kept":[{"group",
 * "why"}...]}, on @out. Return: 0, or 1 when @out fails or memory runs out.
 */
int prune_print(const memacct_pruned *list, bool json, FILE *out);

/**
 * prune_verb_main() - `memacctctl prune`: connects with @connect (0 or an
 * exit status, having said why), prunes, prints. Return: the exit status:
 * 0 (whatever was kept), 1 (refused or failed).
 */
int prune_verb_main(memacct **mp, int (*connect)(memacct **ret));
