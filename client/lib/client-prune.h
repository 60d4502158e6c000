/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * The list memacct_prune_mirrors() returns, shared by the socket
 * (client-prune.c) and the bus (client-bus-prune.c) transports: the
 * removed groups first, then the kept ones with their reasons.
 */

#include <stddef.h>

#include "memacct.h"

struct memacct_pruned {
        memacct_pruned_group *groups; /* each group and why malloc'ed */
        size_t n, cap;
};

/** client_pruned_new() - an empty list. Return: NULL on -ENOMEM. */
memacct_pruned *client_pruned_new(void);

/** client_pruned_append() - copy one group (@why NULL: removed) onto @l. Return: 0, -ENOMEM. */
int client_pruned_append(memacct_pruned *l, const char *group, const char *why);

/** bus_prune_mirrors() - memacct_prune_mirrors() on a bus handle. */
int bus_prune_mirrors(memacct *m, memacct_pruned **ret);
