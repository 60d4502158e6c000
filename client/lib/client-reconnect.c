/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Reconnection after a daemon restart. A broken connection (conn.fd -1) is
 * noticed by the next call that needs the socket, which reconnects before
 * it goes on.
 *
 * Reconnection rebuilds the session the caller had: the same group, a new
 * stock page (the old one stays mapped until memacct_close(), since another
 * thread may still be reading it), the subscriptions, and a forced charge of
 * what the caller held per stock line (stat item or device region: stock
 * handed out plus exact charges through the stock; Stock.direct) and per
 * device region charged outside the stock (client-regions.c). The
 * old page's unused bytes are not replayed: the old session, and what it
 * held, died with the old daemon.
 *
 * Invariants: everything here runs with the handle's lock held; a
 * reconnection never nests (m->reconnecting): a failure inside one is
 * returned to it, not repaired by another.
 */

#include <errno.h>
#include <time.h>

#include "client-call.h"
#include "client-error.h"
#include "client-reclaim.h"
#include "client-reconnect.h"
#include "client-stock-socket.h"
#include "macro.h"

/*
 * Charge again what the caller held; forced, since it was admitted once
 * and the caller is using it. Without the right to force (not root, not
 * the owner) it is tried as a plain charge. Return: 0 and the outcome in
 * @ret_replay_r/@ret_replayed, or the error of a broken connection.
 */
static int reconnect_replay(memacct *m, int *ret_replay_r, uint64_t *ret_replayed) {
        uint64_t replayed = 0;
        int r, replay_r = 0;

        for (unsigned i = 0; i < STOCK_LINES && m->attached; i++) {
                uint64_t held = stock_held(&m->stock, i);

                if (held == 0)
                        continue;
                r = client_stock_charge_line_locked(m, i, held, MEMACCT_FORCE, NULL);
                if (r == -EPERM)
                        r = client_stock_charge_line_locked(m, i, held, 0, NULL);
                if (r < 0 && m->conn.fd < 0)
                        return r;
                if (r < 0) {
                        /* Not held any more: forget it, or uncharges would fail. */
                        (void) stock_note_uncharged(&m->stock, i, held);
                        if (replay_r == 0)
                                replay_r = r;
                        continue;
                }
                replayed += held;
        }
        *ret_replay_r = replay_r;
        *ret_replayed = replayed;
        return 0;
}

/*
 * Rebuild the session on a fresh connection. Return: 0 and the replay's
 * outcome in @ret_replay_r/@ret_replayed; or the error that broke the
 * rebuild before the replay (worth another attempt if the connection broke).
 */
static int reconnect_rebuild(memacct *m, int *ret_replay_r, uint64_t *ret_replayed) {
        int r;

        r = conn_open(&m->conn, m->socket_path);
        if (r < 0)
                return r;
        r = client_hello_locked(m);
        if (r < 0)
                return r;
        if (m->attached) {
                r = client_attach_locked(m, m->attached);
                if (r < 0)
                        return r;
        }
        if (m->stock_wanted) {
                r = client_stock_setup_locked(m);
                if (r < 0)
                        return r;
        }
        for (size_t i = 0; i < m->n_subscriptions; i++) {
                r = client_subscribe_locked(m, m->subscriptions[i].path, m->subscriptions[i].region);
                if (r < 0 && m->conn.fd < 0)
                        return r;
        }
        r = client_reclaim_renew_locked(m);
        if (r < 0)
                return r;
        r = reconnect_replay(m, ret_replay_r, ret_replayed);
        if (r < 0 || !m->attached)
                return r;
        return client_region_replay_locked(m, ret_replay_r, ret_replayed);
}

int client_ensure_connected(memacct *m) {
        unsigned delay_msec = 20;
        uint64_t replayed = 0;
        int r = -ECONNRESET, replay_r = 0;

        if (m->conn.fd >= 0)
                return 0;
        if (m->reconnect_attempts == 0 || m->reconnecting)
                return client_error(m, -ECONNRESET, "connection to memacctd lost", NULL);

        m->reconnecting = true;
        /* The old session is gone, and with it the bytes of its page: a
         * thread consuming from it now takes nothing the daemon counts. */
        for (unsigned i = 0; i < STOCK_LINES; i++)
                (void) stock_take(&m->stock, i);

        for (unsigned attempt = 0; attempt < m->reconnect_attempts; attempt++) {
                if (attempt > 0) {
                        struct timespec ts = { .tv_sec = delay_msec / 1000,
                                               .tv_nsec = (long) (delay_msec % 1000) * 1000000 };

                        nanosleep(&ts, NULL);
                        delay_msec = MIN(delay_msec * 2, 1000u);
                }
                r = reconnect_rebuild(m, &replay_r, &replayed);
                if (r >= 0)
                        break;
                if (m->conn.fd >= 0)
                        conn_break(&m->conn, -ECONNRESET);
                /* Refused for a reason a retry will not change. (EPIPE:
                 * a daemon on its way out accepted the connection and
                 * closed it; its successor may be up by the next try.) */
                if (r != -ECONNRESET && r != -ECONNREFUSED && r != -ENOENT && r != -ETIMEDOUT &&
                    r != -EPROTO && r != -EAGAIN && r != -EPIPE)
                        break;
        }
        m->reconnecting = false;
        if (r < 0)
                return client_error(m, r == -ENOENT || r == -ECONNREFUSED ? -ECONNRESET : r,
                                    "connection to memacctd lost and not regained", NULL);
        m->reconnects++;
        if (m->reconnect_fn)
                m->reconnect_fn(m, replay_r, replayed, m->reconnect_userdata);
        return 0;
}

int client_call(memacct *m, Request *req, bool repeatable, Response **ret) {
        int r;

        pthread_mutex_lock(&m->lock);
        r = client_ensure_connected(m);
        if (r >= 0) {
                r = client_call_locked(m, req, -1, ret);
                /* Broken meanwhile (not by a timeout: the daemon may be
                 * stuck rather than gone). */
                if (r < 0 && m->conn.fd < 0 && r != -ETIMEDOUT) {
                        int k = client_ensure_connected(m);

                        if (k < 0)
                                r = k;
                        else if (repeatable)
                                r = client_call_locked(m, req, -1, ret);
                        else
                                r = client_error(m, -ECONNRESET,
                                                 "connection lost while the request was in flight; "
                                                 "it may or may not have been applied",
                                                 NULL);
                }
        }
        pthread_mutex_unlock(&m->lock);
        return r;
}
