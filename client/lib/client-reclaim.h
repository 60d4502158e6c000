/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Reclaim on the socket (client-reclaim.c): what the rest of the library calls. */

#include "client.h"
#include "memacct.pb-c.h"

/**
 * client_reclaim_queue() - a ReclaimRequest @rq arrived (an unsolicited
 * frame, read with the lock held): queue it for client_reclaim_serve().
 * Out of memory it is dropped: the daemon's deadline answers for it.
 */
void client_reclaim_queue(memacct *m, const Memacct__V1__ReclaimRequest *rq);

/**
 * client_reclaim_serve() - serve every queued request: its callback, then
 * ReclaimDone. Called WITHOUT the lock (the callbacks use the handle).
 * Return: the requests served; a transport error.
 */
int client_reclaim_serve(memacct *m);

/** client_reclaim_renew_locked() - SetReclaimable again for each declaration (a reconnection). Lock held. */
int client_reclaim_renew_locked(memacct *m);

/** client_reclaim_done() - free the declarations and the queue (memacct_close()). */
void client_reclaim_done(memacct *m);
