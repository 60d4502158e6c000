/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * Reconnection after a daemon restart, and the calls that reconnect
 * first (the public calls' way to the socket).
 */

#include <stdbool.h>

#include "client.h"

/**
 * client_ensure_connected() - if the connection is broken, reconnect and
 * rebuild the session (attach, stock page, subscriptions, the held
 * charges), with backoff, up to the handle's reconnect attempts; report
 * the replay to the reconnect callback. Lock held.
 * Return: 0 or a recorded error (-ECONNRESET when it was not regained).
 */
int client_ensure_connected(memacct *m);

/**
 * client_call() - client_call_locked() with the lock taken, reconnecting
 * first if the connection is broken, and after a break during the call
 * when @repeatable (the request is sent again once; else -ECONNRESET,
 * since the daemon may have applied it).
 * Return: as client_call_locked().
 */
int client_call(memacct *m, Request *req, bool repeatable, Response **ret);
