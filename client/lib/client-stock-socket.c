/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The charge stock's glue to the socket: the StockOps the policy in
 * client-stock.c runs on, and the page it runs over.
 *
 * Refills and surplus returns are written without waiting; their replies
 * come back, in request order, to whichever call next reads the socket,
 * and each goes to its own completion callback, which hands it to the
 * stock (stock_refill_done(), stock_return_done()). Everything here but
 * the fast path's trylock() runs with the handle's lock held, as the
 * connection requires.
 *
 * The page is a sealed memfd of STOCK_PAGE_SIZE, mapped shared and sent
 * with StockSetup as SCM_RIGHTS on the frame's first byte, so the daemon
 * receives the descriptor with the request that needs it.
 */

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "client-call.h"
#include "client-deadline.h"
#include "client-error.h"
#include "client-stock-socket.h"
#include "status.h"

/* The errno of a reply's status, or the transport error @r without one. */
static int reply_errno(const Response *resp, int r) {
        return resp ? status_to_errno((MemStatus) resp->status) : r;
}

static void refill_reply(const ConnPending *p, Response *resp, int r) {
        uint32_t index = resp && resp->result_case == MEMACCT__V1__RESPONSE__RESULT_CHARGE &&
                                         resp->charge->has_stock_index ?
                                 resp->charge->stock_index :
                                 0;

        stock_refill_done(p->userdata, (unsigned) p->index, reply_errno(resp, r),
                          resp ? client_charge_margin(resp) : UINT64_MAX, index);
        if (resp)
                memacct__v1__response__free_unpacked(resp, NULL);
}

static void return_reply(const ConnPending *p, Response *resp, int r) {
        stock_return_done(p->userdata, (unsigned) p->index, p->bytes, reply_errno(resp, r));
        if (resp)
                memacct__v1__response__free_unpacked(resp, NULL);
}

/*
 * A Charge (@charge) or an Uncharge of @bytes on the session for stock
 * line @line: a stat item of memory, or a device region (its name
 * m->stock_regions[], and no stat item).
 */
static Request *line_request(memacct *m, ChargeRequest *cr, bool charge, unsigned line, uint64_t bytes,
                             unsigned flags) {
        const char *region = line >= STOCK_ITEMS ? m->stock_regions[line - STOCK_ITEMS] : NULL;
        Request *req = client_charge_request(cr, charge, NULL, bytes, region ? MEMACCT_STAT_DEVICE : line, flags);

        if (region && charge) {
                cr->charge.stat = NULL;
                cr->charge.region = (char *) region;
        } else if (region) {
                cr->uncharge.stat = NULL;
                cr->uncharge.region = (char *) region;
        }
        return req;
}

int client_stock_charge_line_locked(memacct *m, unsigned line, uint64_t bytes, unsigned flags,
                                    uint64_t *ret_margin) {
        ChargeRequest cr;
        Response *resp = NULL;
        int r;

        r = client_call_locked(m, line_request(m, &cr, true, line, bytes, flags), -1, &resp);
        if (r < 0)
                return r;
        if (ret_margin)
                *ret_margin = client_charge_margin(resp);
        memacct__v1__response__free_unpacked(resp, NULL);
        return 0;
}

/* A refill (a Charge to the stock) or a return (an Uncharge), unanswered. */
static int stock_op_send(memacct *m, bool refill, unsigned item, uint64_t bytes) {
        ConnPending p = {
                .done = refill ? refill_reply : return_reply,
                .userdata = &m->stock,
                .index = item,
                .bytes = bytes,
        };
        ChargeRequest cr;
        Request *req = line_request(m, &cr, refill, item, bytes, 0);

        if (refill)
                cr.charge.has_stock = cr.charge.stock = true;
        return conn_send(&m->conn, req, &p, -1, client_wait_msec(m));
}

static int stock_op_refill_send(void *userdata, unsigned item, uint64_t bytes) {
        return stock_op_send(userdata, true, item, bytes);
}

static int stock_op_return_send(void *userdata, unsigned item, uint64_t bytes) {
        return stock_op_send(userdata, false, item, bytes);
}

static int stock_op_poll(void *userdata) {
        memacct *m = userdata;
        int r;

        if (m->conn.fd < 0)
                return -ECONNRESET;
        r = conn_pump(&m->conn, 0, NULL, NULL);
        return r < 0 ? r : 0;
}

static bool refill_answered(void *userdata) {
        return !atomic_load_explicit((_Atomic bool *) userdata, memory_order_relaxed);
}

static int stock_op_wait(void *userdata, unsigned item) {
        memacct *m = userdata;
        int r;

        r = conn_pump(&m->conn, client_wait_msec(m), refill_answered,
                      &m->stock.items[item].inflight);
        return r < 0 ? r : 0;
}

static int stock_op_charge_exact(void *userdata, unsigned item, uint64_t bytes,
                                 uint64_t *ret_margin) {
        return client_stock_charge_line_locked(userdata, item, bytes, 0, ret_margin);
}

static int stock_op_uncharge_exact(void *userdata, unsigned item, uint64_t bytes) {
        ChargeRequest cr;

        return client_call_locked(userdata, line_request(userdata, &cr, false, item, bytes, 0), -1, NULL);
}

static void stock_op_lock(void *userdata) {
        pthread_mutex_lock(&((memacct *) userdata)->lock);
}

static bool stock_op_trylock(void *userdata) {
        return pthread_mutex_trylock(&((memacct *) userdata)->lock) == 0;
}

static void stock_op_unlock(void *userdata) {
        pthread_mutex_unlock(&((memacct *) userdata)->lock);
}

static uint64_t stock_op_now_nsec(void *userdata) {
        (void) userdata;
        return client_now_nsec();
}

const StockOps client_stock_ops = {
        .refill_send = stock_op_refill_send,
        .return_send = stock_op_return_send,
        .poll = stock_op_poll,
        .wait = stock_op_wait,
        .charge_exact = stock_op_charge_exact,
        .uncharge_exact = stock_op_uncharge_exact,
        .lock = stock_op_lock,
        .trylock = stock_op_trylock,
        .unlock = stock_op_unlock,
        .now_nsec = stock_op_now_nsec,
};

int client_stock_setup_locked(memacct *m) {
        Memacct__V1__StockSetup setup = MEMACCT__V1__STOCK_SETUP__INIT;
        Request req = MEMACCT__V1__REQUEST__INIT;
        _Atomic uint64_t *page;
        void **old;
        int fd, r;

        fd = memfd_create("memacct-stock", MFD_CLOEXEC | MFD_ALLOW_SEALING);
        if (fd < 0)
                return client_error(m, -errno, "memfd_create() failed", NULL);
        if (ftruncate(fd, STOCK_PAGE_SIZE) < 0 ||
            fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) < 0) {
                r = -errno;
                close(fd);
                return client_error(m, r, "cannot seal the stock page", NULL);
        }
        page = mmap(NULL, STOCK_PAGE_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        if (page == MAP_FAILED) {
                r = -errno;
                close(fd);
                return client_error(m, r, "cannot map the stock page", NULL);
        }
        req.op_case = MEMACCT__V1__REQUEST__OP_STOCK_SETUP;
        req.stock_setup = &setup;
        r = client_call_locked(m, &req, fd, NULL);
        close(fd);
        if (r < 0) {
                munmap((void *) page, STOCK_PAGE_SIZE);
                return r;
        }
        if (m->page) {
                old = realloc(m->old_pages, (m->n_old_pages + 1) * sizeof(void *));
                if (!old) {
                        munmap((void *) page, STOCK_PAGE_SIZE);
                        return client_error(m, -ENOMEM, NULL, NULL);
                }
                m->old_pages = old;
                m->old_pages[m->n_old_pages++] = (void *) m->page;
        }
        m->page = page;
        stock_set_page(&m->stock, page);
        m->stock_wanted = true;
        return 0;
}

static bool no_refill_inflight(void *userdata) {
        Stock *s = userdata;

        for (unsigned i = 0; i < STOCK_LINES; i++)
                if (atomic_load_explicit(&s->items[i].inflight, memory_order_relaxed))
                        return false;
        return true;
}

int client_stock_drain_locked(memacct *m) {
        int r;

        if (!m->page)
                return 0;
        r = conn_pump(&m->conn, client_wait_msec(m), no_refill_inflight, &m->stock);
        if (r < 0)
                return client_error(m, r, m->conn.proto_error, NULL);
        for (unsigned i = 0; i < STOCK_LINES; i++) {
                uint64_t v = stock_take(&m->stock, i);
                ChargeRequest cr;

                if (v == 0)
                        continue;
                r = client_call_locked(m, line_request(m, &cr, false, i, v, 0), -1, NULL);
                /* -ERANGE: a drain by the daemon got there first. */
                if (r < 0 && r != -ERANGE)
                        return r;
        }
        return 0;
}

int client_stock_region_locked(memacct *m, const char *region) {
        unsigned i;

        for (i = 0; i < STOCK_REGIONS && m->stock_regions[i]; i++)
                if (strcmp(m->stock_regions[i], region) == 0)
                        return (int) (STOCK_ITEMS + i);
        if (i == STOCK_REGIONS)
                return -ENOSPC;
        m->stock_regions[i] = strdup(region);
        return m->stock_regions[i] ? (int) (STOCK_ITEMS + i) : -ENOMEM;
}
