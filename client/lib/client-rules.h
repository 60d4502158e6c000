/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * The list memacct_rule_list() returns, shared by the socket
 * (client-rules.c) and the bus (client-bus-rules.c) transports.
 */

#include <stdbool.h>
#include <stddef.h>

#include "memacct.h"

struct memacct_rules {
        memacct_rule *rules; /* each cgroup and group malloc'ed */
        size_t n, cap;
};

/** client_rule_list_new() - an empty list. Return: NULL on -ENOMEM. */
memacct_rules *client_rule_list_new(void);

/** client_rule_list_append() - copy one rule onto @l, @mirror its kind, @confine its flag. Return: 0, -ENOMEM. */
int client_rule_list_append(memacct_rules *l, const char *cgroup, const char *group, bool mirror, bool confine);
