/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * Device memory regions as the public header hands them out, shared by
 * the socket (client-regions.c) and the bus, which fill them from their
 * own replies (client-regions-list.c holds the list and the group's
 * region entries): the list memacct_list_regions() returns, the regions
 * of a memacct_group_info, and the session charges a handle holds in each
 * region, which a reconnection replays.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "memacct.h"

struct memacct_regions {
        memacct_region *v; /* each name malloc'ed */
        size_t n, cap;
};

/** client_region_is_memory() - is @region memory's: NULL, "" or "memory"? */
bool client_region_is_memory(const char *region);

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

/* What the session holds in one device region, for the replay after a reconnection. */
typedef struct ClientRegionHeld {
        char *region;
        uint64_t bytes;
} ClientRegionHeld;

/**
 * client_region_held_add() - note @bytes more (@charged) or fewer held by
 * the session of @m in @region. Lock held. Return: 0, -ENOMEM (not
 * noted: a reconnection then does not replay them).
 */
int client_region_held_add(memacct *m, const char *region, uint64_t bytes, bool charged);

/**
 * client_region_replay_locked() - charge again, on a fresh session, what
 * the old one held in each device region: forced, or plain without the
 * right to force; what is refused is forgotten. Lock held.
 * Return: 0 with the first refusal in *@ret_replay_r (0: none) and the
 * bytes replayed added to *@ret_replayed; or the error of a broken connection.
 */
int client_region_replay_locked(memacct *m, int *ret_replay_r, uint64_t *ret_replayed);

/** client_region_held_done() - free what @m notes as held (memacct_close()). */
void client_region_held_done(memacct *m);
