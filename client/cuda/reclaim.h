/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * The interposer gives back what a process's pools hold unused when the
 * daemon asks (memacct(7), RECLAIM): a pool's reserve is memory the
 * driver keeps for later allocations, the way a page cache keeps pages,
 * and trimming it frees device memory at once. A GPU whose pools hold a
 * reserve is declared reclaimable in its region; a thread of the
 * interposer's serves the requests (the program has no event loop of
 * ours to serve them in), trims, and the charge follows the reserve.
 */

/** ma_reclaim_declare() - @device's pools hold a reserve: say so to the daemon (once), and serve requests. */
void ma_reclaim_declare(int device);

/** ma_reclaim_atfork_child() - a forked child has no serving thread and has declared nothing. */
void ma_reclaim_atfork_child(void);
