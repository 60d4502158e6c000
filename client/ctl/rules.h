/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * memacctctl rule add|remove|list: the daemon's placement rules
 * (memacct(7), PLACEMENT RULES).
 */

#include <stdio.h>

#include <memacct.h>

/**
 * rule_print_list() - @rules as "CGROUP<TAB>GROUP" lines, or with @json
 * one JSON array of {"cgroup","group"} objects, on @out.
 * Return: 0, or 1 when @out fails.
 */
int rule_print_list(const memacct_rules *rules, bool json, FILE *out);

/**
 * rule_verb_main() - `memacctctl rule add CGROUP GROUP`, `rule remove
 * CGROUP`, `rule list`: checks its arguments, then connects with
 * @connect (0 or an exit status, having said why).
 * Return: the exit status: 0, 1 (refused or failed), 2 (usage).
 */
int rule_verb_main(memacct **mp, int argc, char **argv, int (*connect)(memacct **ret));
