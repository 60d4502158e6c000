/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * Device memory regions as the public header hands them out, shared by
 * the socket and the bus transports, which fill them from their own
 * replies (client-regions-list.c): the list memacct_list_regions()
 * returns, and the regions of a memacct_group_info.
 */

#include <stddef.h>
#include <stdint.h>

#include "memacct.h"

struct memacct_regions {
        memacct_region *v; /* each name malloc'ed */
        size_t n, cap;
};

/** client_region_list_new() - an empty list. Return: NULL on -ENOMEM. */
memacct_regions *client_region_list_new(void);

/** client_region_list_append() - copy one region onto @l. Return: 0, -ENOMEM. */
int client_region_list_append(memacct_regions *l, const char *name, uint64_t capacity, uint64_t current,
                              uint64_t peak, uint32_t groups);

/**
 * client_region_infos_free() - free the @n entries of @v (a group's
 * regions: each name and events array malloc'ed) and @v. Accepts NULL.
 */
void client_region_infos_free(const memacct_region_info *v, size_t n);
