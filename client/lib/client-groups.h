/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * Groups as the public header hands them out, shared by the socket
 * (client-groups.c) and the bus, which fill them from their own replies.
 */

#include <stddef.h>

#include "memacct.h"

/* Restarts a list takes (each one a cursor removed under it) before it
 * gives up with EAGAIN, on either transport. */
#define LIST_RESTARTS_MAX 16

struct memacct_group_list {
        memacct_group_info *groups;
        size_t n;
};

/**
 * client_group_info_done() - free what @g points to and zero it: every
 * string and counter array, its regions (a malloc'ed array of
 * n_regions, each with its name and counters malloc'ed as the group's
 * are). Accepts a zeroed @g.
 */
void client_group_info_done(memacct_group_info *g);
