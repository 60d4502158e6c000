/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * Reclaim (client-reclaim.c): what the rest of the library calls, the
 * transports' queues and declarations shared.
 */

#include <stdint.h>

#include "client.h"
#include "memacct.pb-c.h"

/**
 * client_reclaim_ask_queue() - a request for @bytes of @region (NULL or
 * "": memory) with @id arrived (read with the lock held): queue it for
 * client_reclaim_serve(). Out of memory it is dropped: the daemon's
 * deadline answers for it.
 */
void client_reclaim_ask_queue(memacct *m, uint64_t id, const char *region, uint64_t bytes);

/**
 * client_reclaim_note_locked() - note a declaration the daemon accepted:
 * memory's stat item @item, or with @item < 0 @region (NULL: memory)
 * whole; @fn NULL withdraws it. Lock held.
 * Return: 0; -ENOMEM (recorded).
 */
int client_reclaim_note_locked(memacct *m, const char *region, int item, memacct_reclaim_fn fn,
                               void *userdata);

/**
 * client_reclaim_queue() - a ReclaimRequest @rq arrived on the socket (an
 * unsolicited frame, read with the lock held): client_reclaim_ask_queue().
 */
void client_reclaim_queue(memacct *m, const Memacct__V1__ReclaimRequest *rq);

/**
 * client_reclaim_serve() - serve every queued request: its callback, then
 * ReclaimDone over the handle's transport (a bus handle's through its
 * BusOps). Called WITHOUT the lock (the callbacks use the handle); any
 * threads at once, each request served by one.
 * Return: the requests served; a transport error.
 */
int client_reclaim_serve(memacct *m);

/** client_reclaim_renew_locked() - SetReclaimable again for each declaration (a reconnection). Lock held. */
int client_reclaim_renew_locked(memacct *m);

/** client_reclaim_done() - free the declarations and the queue (memacct_close()). */
void client_reclaim_done(memacct *m);
