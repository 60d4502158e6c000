/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Charges: exact ones (memacct_charge(), memacct_uncharge()) and stocked
 * ones (memacct_charge_stocked(), memacct_uncharge_stocked()), the stock's
 * public controls, and memacct_attach(), which says where session charges
 * go.
 *
 * Session charges (no path, no MEMACCT_KEEP) are noted in the stock's
 * held[] as they succeed, whichever way they went: that is what a
 * reconnection replays, so a session charge may be repeated after a
 * break. A kept charge may have been persisted before the break, so it is
 * never repeated; its caller learns it may or may not have been applied.
 * The stocked calls take no lock while the page covers them; on a bus
 * handle, which has no page, they always fall to the slow path and stop
 * there.
 */

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "client-call.h"
#include "client-error.h"
#include "client-reconnect.h"
#include "client-stock-socket.h"
#include "macro.h"

_public_ int memacct_stock_drain(memacct *m) {
        int r;

        if (!m)
                return -EINVAL;
        if (m->bus)
                return client_bus_unsupported(m, "the charge stock");
        pthread_mutex_lock(&m->lock);
        r = client_ensure_connected(m);
        if (r >= 0)
                r = client_stock_drain_locked(m);
        pthread_mutex_unlock(&m->lock);
        return r;
}

_public_ int memacct_stock_prepare(memacct *m) {
        int r = 0;

        if (!m)
                return -EINVAL;
        if (m->bus)
                return client_bus_unsupported(m, "the charge stock");
        pthread_mutex_lock(&m->lock);
        /* The page's round trip now, not in the first charge's. */
        if (!atomic_load_explicit(&m->stock.page, memory_order_relaxed)) {
                r = client_ensure_connected(m);
                if (r >= 0)
                        r = client_stock_setup_locked(m);
        }
        pthread_mutex_unlock(&m->lock);
        return r;
}

_public_ int memacct_stock_region(memacct *m, const char *region) {
        int r;

        if (!m || !region || !*region)
                return client_error(m, -EINVAL, "invalid argument", NULL);
        if (m->bus)
                return client_bus_unsupported(m, "the charge stock");
        if (strcmp(region, MEMACCT_REGION_MEMORY) == 0)
                return MEMACCT_STAT_DEVICE;
        pthread_mutex_lock(&m->lock);
        r = client_stock_region_locked(m, region);
        pthread_mutex_unlock(&m->lock);
        if (r == -ENOSPC)
                return client_error(m, r, "every region stock line is in use", NULL);
        return r < 0 ? client_error(m, r, NULL, NULL) : r;
}

_public_ int memacct_stock_get(memacct *m, int item, uint64_t *ret_stocked, uint64_t *ret_batch) {
        if (!m || item < 0 || item >= STOCK_LINES)
                return -EINVAL;
        if (m->bus)
                return client_bus_unsupported(m, "the charge stock");
        if (!atomic_load_explicit(&m->stock.page, memory_order_acquire))
                return -ENXIO;
        if (ret_stocked)
                *ret_stocked = stock_peek(&m->stock, (unsigned) item);
        if (ret_batch) {
                pthread_mutex_lock(&m->lock);
                *ret_batch = m->stock.items[item].batch;
                pthread_mutex_unlock(&m->lock);
        }
        return 0;
}

_public_ int memacct_attach(memacct *m, const char *path) {
        char *copy;
        int r;

        if (!m || !path)
                return -EINVAL;
        if (m->bus)
                return m->bus->attach(m, path);
        copy = strdup(path);
        if (!copy)
                return -ENOMEM;
        pthread_mutex_lock(&m->lock);
        r = client_ensure_connected(m);
        if (r >= 0)
                r = client_stock_drain_locked(m);
        if (r >= 0) {
                r = client_attach_locked(m, path);
                if (r < 0 && m->conn.fd < 0 && client_ensure_connected(m) >= 0)
                        r = client_attach_locked(m, path);
        }
        if (r >= 0) {
                free(m->attached);
                m->attached = TAKE_PTR(copy);
        }
        pthread_mutex_unlock(&m->lock);
        free(copy);
        return r;
}

_public_ int memacct_attached_group(memacct *m, char *buf, size_t size) {
        int r = 0;

        if (!m || !buf || size == 0)
                return -EINVAL;
        pthread_mutex_lock(&m->lock);
        if (!m->attached_group)
                r = -ENOTCONN;
        else if (strlen(m->attached_group) >= size)
                r = -ERANGE;
        else
                strcpy(buf, m->attached_group);
        pthread_mutex_unlock(&m->lock);
        return r;
}

static bool is_transport_error(memacct *m, int r) {
        return r < 0 && m->conn.fd < 0 && r != -ENOMEM;
}

_public_ int memacct_charge(memacct *m, const char *path, uint64_t bytes, int item, unsigned flags,
                            memacct_charge_result *ret) {
        bool session = !path && !(flags & MEMACCT_KEEP);
        int r;

        if (!m || item < 0 || item >= STOCK_ITEMS || (flags & ~(MEMACCT_KEEP | MEMACCT_FORCE | MEMACCT_NO_WAIT)))
                return client_error(m, -EINVAL, "invalid argument", NULL);
        if ((flags & MEMACCT_KEEP) && !path)
                return client_error(m, -EINVAL, "a kept charge needs a path", NULL);
        if (m->bus)
                return m->bus->charge(m, path, bytes, (unsigned) item, flags, ret);

        pthread_mutex_lock(&m->lock);
        for (unsigned attempt = 0;; attempt++) {
                memacct_charge_result res;

                r = client_ensure_connected(m);
                if (r < 0)
                        break;
                r = client_charge_locked(m, path, bytes, (unsigned) item, flags, &res);
                if (r >= 0) {
                        if (session) {
                                stock_note_charged(&m->stock, (unsigned) item, bytes);
                                stock_note_margin(&m->stock, res.margin);
                        }
                        if (ret)
                                *ret = res;
                        break;
                }
                if (!is_transport_error(m, r) || r == -ETIMEDOUT || attempt > 0)
                        break;
                if (!session) {
                        /* A kept charge may have been persisted before the break. */
                        r = client_ensure_connected(m);
                        if (r >= 0)
                                r = client_error(m, -ECONNRESET,
                                                 "connection lost while the charge was in flight; "
                                                 "it may or may not have been applied",
                                                 NULL);
                        break;
                }
        }
        pthread_mutex_unlock(&m->lock);
        return r;
}

_public_ int memacct_uncharge(memacct *m, const char *path, uint64_t bytes, int item,
                              unsigned flags) {
        bool session = !path && !(flags & MEMACCT_KEEP);
        ChargeRequest cr;
        Request *req;
        int r;

        if (!m || item < 0 || item >= STOCK_ITEMS || (flags & ~MEMACCT_KEEP))
                return client_error(m, -EINVAL, "invalid argument", NULL);
        if ((flags & MEMACCT_KEEP) && !path)
                return client_error(m, -EINVAL, "a kept uncharge needs a path", NULL);
        if (m->bus)
                return m->bus->uncharge(m, path, bytes, (unsigned) item, flags);
        req = client_charge_request(&cr, false, path, bytes, (unsigned) item, flags);

        /* A session uncharge is repeatable: after a restart the replay
         * charged it again, so releasing it again is right. */
        r = client_call(m, req, session, NULL);
        if (r >= 0 && session)
                (void) stock_note_uncharged(&m->stock, (unsigned) item, bytes);
        return r;
}

/*
 * The slow path of memacct_charge_stocked(), out of line: kept in the
 * public function, its loop and its calls made the compiler save six
 * registers and set up a stack frame on every stocked charge.
 */
static __attribute__((cold, noinline)) int charge_stocked_slow(memacct *m, uint64_t bytes, int item, int r) {
        if (!m || item < 0 || item >= STOCK_LINES)
                return client_error(m, -EINVAL, "invalid argument", NULL);
        /* A bus handle never has a page, so it always arrives here, and stops. */
        if (m->bus)
                return client_bus_unsupported(m, "the charge stock");
        /* Not set up yet, or the connection broke: fix that, and try again. */
        for (unsigned attempt = 0; attempt < 2; attempt++) {
                bool retry = false;

                pthread_mutex_lock(&m->lock);
                if (!atomic_load_explicit(&m->stock.page, memory_order_relaxed)) {
                        r = client_ensure_connected(m);
                        if (r >= 0)
                                r = client_stock_setup_locked(m);
                        retry = r >= 0;
                } else if (r == -ENXIO)
                        retry = true; /* another thread set it up meanwhile */
                else if (is_transport_error(m, r) && r != -ETIMEDOUT) {
                        r = client_ensure_connected(m);
                        retry = r >= 0;
                }
                pthread_mutex_unlock(&m->lock);
                if (!retry)
                        break;
                r = stock_charge(&m->stock, (unsigned) item, bytes);
                if (r >= 0)
                        break;
        }
        /* The exact charge recorded its reply's error; a transport error
         * deeper down was not. */
        if (r < 0 && !client_error_is(m, r))
                client_error(m, r, NULL, NULL);
        return r;
}

/* The fast path: stock_charge()'s, inline; anything else is the slow path's. */
_public_ int memacct_charge_stocked(memacct *m, uint64_t bytes, int item) {
        int r = -EINVAL;

        if (_likely_(m && (unsigned) item < STOCK_LINES)) {
                r = stock_charge(&m->stock, (unsigned) item, bytes);
                if (_likely_(r >= 0))
                        return r;
        }
        return charge_stocked_slow(m, bytes, item, r);
}

/* The slow path of memacct_uncharge_stocked(), out of line as charge_stocked_slow(). */
static __attribute__((cold, noinline)) int uncharge_stocked_slow(memacct *m, uint64_t bytes, int item, int r) {
        if (!m || item < 0 || item >= STOCK_LINES)
                return client_error(m, -EINVAL, "invalid argument", NULL);
        if (m->bus)
                return client_bus_unsupported(m, "the charge stock");
        /* A region line charges only through the page: none, nothing held. */
        if (r == -ENXIO && item >= STOCK_ITEMS)
                r = -ERANGE;
        if (r == -ENXIO)
                /* Never set up: what the caller holds was charged exactly. */
                return memacct_uncharge(m, NULL, bytes, item, 0);
        if (r == -ERANGE)
                return client_error(m, r, "uncharge beyond what the session holds", NULL);
        /* The surplus return found the connection broken: the bytes are out
         * of the page and the session that held them is gone; the caller's
         * uncharge itself is done. Rebuild the session now. */
        pthread_mutex_lock(&m->lock);
        if (is_transport_error(m, r))
                r = client_ensure_connected(m);
        pthread_mutex_unlock(&m->lock);
        return r < 0 ? r : 0;
}

_public_ int memacct_uncharge_stocked(memacct *m, uint64_t bytes, int item) {
        int r = -EINVAL;

        if (_likely_(m && (unsigned) item < STOCK_LINES)) {
                r = stock_uncharge(&m->stock, (unsigned) item, bytes);
                if (_likely_(r >= 0))
                        return r;
        }
        return uncharge_stocked_slow(m, bytes, item, r);
}
