/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * Group queries over D-Bus: the BusOps entries of memacct_get_group() and
 * memacct_list_groups().
 */

#include "memacct.h"

/** bus_get_group() - memacct_get_group() on a bus handle. Takes the lock. */
int bus_get_group(memacct *m, const char *path, const char *reclaim_root, unsigned flags,
                  memacct_group_info **ret);

/** bus_list_groups() - memacct_list_groups() on a bus handle. Takes the lock. */
int bus_list_groups(memacct *m, const char *path, unsigned flags, memacct_group_list **ret);
