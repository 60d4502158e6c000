/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * Subscriptions on the socket (client-events.c), for the public calls of
 * client-events.c and client-regions.c.
 */

#include "client.h"

/**
 * client_subscribe_socket() - Subscribe to @path in @region (NULL, "" or
 * "memory": memory's; "*": every region's) on a socket handle, and
 * remember it for a reconnection to renew. Takes the lock.
 * Return: 0 or a recorded error.
 */
int client_subscribe_socket(memacct *m, const char *path, const char *region);
