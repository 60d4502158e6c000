/* SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef MEMACCT_RECLAIM_H
#define MEMACCT_RECLAIM_H

/*
 * libmemacct and reclaim (memacct(7), RECLAIM): a client that holds
 * memory it could give back (a cache, a pool) says so, and is asked for
 * it before a max refuses a charge elsewhere. Part of memacct.h, which
 * includes it where the types it uses are declared; include memacct.h,
 * not this file.
 */

#include "memacct.h"

#ifdef __cplusplus
extern "C" {
#endif

/**
 * memacct_reclaim_fn - asked to give back @bytes of the session's charges
 * in @region (NULL: memory). Free memory and give its charges back through
 * @m (memacct_uncharge(), memacct_uncharge_stocked(),
 * memacct_uncharge_region() ...) before returning: the daemon counts what
 * the session holds less than when it asked. Called by memacct_process()
 * or memacct_next_event(), on their thread, without the handle's lock.
 * Return: the bytes given back (informative); a negative value or 0: it
 * cannot (more).
 */
typedef int64_t (*memacct_reclaim_fn)(memacct *m, uint64_t bytes, const char *region, void *userdata);

/**
 * memacct_set_reclaimable() - the session's charges in @region (NULL or
 * "memory": memory's) can be given back: @fn is called when the daemon
 * asks for them; NULL withdraws it. Renewed after a reconnection. The
 * requests arrive on the socket, or on a bus handle as ReclaimRequest
 * signals: poll memacct_fd() and call memacct_process(), or wait in
 * memacct_next_event(), which serves them too. A client that takes longer
 * than the daemon's deadline (1 s) to answer counts late and is asked no
 * more until it answers.
 * Return: 0; -ENOENT (no such region); -ENOMEM; -EOPNOTSUPP (a daemon
 * whose bus has no SetReclaimable).
 */
int memacct_set_reclaimable(memacct *m, const char *region, memacct_reclaim_fn fn, void *userdata);

/**
 * memacct_set_reclaimable_stat() - memacct_set_reclaimable() of memory's
 * stat item @item (MEMACCT_STAT_*) alone: the daemon asks for no more
 * than the session holds of the items so declared. Each item is declared
 * apart; @fn, the same for all of them, is the one memory's requests
 * call (its @region NULL). NULL withdraws the item. Memory declared
 * whole with memacct_set_reclaimable() stays whole.
 * Return: as memacct_set_reclaimable(); -EINVAL (a bad item).
 */
int memacct_set_reclaimable_stat(memacct *m, int item, memacct_reclaim_fn fn, void *userdata);

/**
 * memacct_fd() - the descriptor to poll for POLLIN before memacct_process()
 * (an event loop's): it changes with a reconnection, so take it again
 * after each memacct_process(). On a bus handle it stays the same, and is
 * readable too when a call of the handle read a request off the bus.
 * Return: it; -ENOTCONN; -EMFILE and the like (bus: the descriptor made).
 */
int memacct_fd(memacct *m);

/**
 * memacct_process() - read what the daemon sent (up to @timeout_msec for
 * something to arrive; 0: only what is there) and serve the reclaim
 * requests among it: each calls its memacct_reclaim_fn, then answers the
 * daemon. Events are queued for memacct_next_event().
 * Return: the requests served (>= 0); a transport error.
 */
int memacct_process(memacct *m, int timeout_msec);

/**
 * memacct_reclaim() - memory.reclaim: ask the reclaimable sessions at or
 * below @path for @bytes in @region (NULL: memory), by the kernel's
 * split, ignoring @path's own protection; wait for their answers (up to
 * the daemon's deadline) and store what came back in *@ret_released (may
 * be NULL). Who may set @path's limits may ask.
 * Return: 0 (however much came back); -EPERM; -ENOENT; -EOPNOTSUPP (a
 * daemon whose bus has no Reclaim).
 */
int memacct_reclaim(memacct *m, const char *path, const char *region, uint64_t bytes, uint64_t *ret_released);

#ifdef __cplusplus
}
#endif

#endif /* MEMACCT_RECLAIM_H */
