/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Pipelined batches: N requests encoded into one buffer, written at once
 * (one round trip carries many messages, for ~30 ns each on this kind of
 * machine), and N replies collected in order. While the buffer is being
 * written, replies that arrive are read, so a daemon that pauses reading
 * until its replies are consumed does not stall the write. A batch is
 * never repeated after a broken connection: its unanswered operations
 * report -ECONNRESET.
 *
 * Each operation's reply goes to batch_reply() through the connection's
 * completion callback. Invariant: once memacct_batch_commit() returns, no
 * awaited reply points at the batch, which the caller may then free.
 */

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "client-call.h"
#include "client-error.h"
#include "client-reconnect.h"
#include "macro.h"
#include "status.h"

typedef struct BatchOp {
        bool charge;
        char *path;
        uint64_t bytes;
        int item;
        unsigned flags;
        int result;
        char *refused_path;
} BatchOp;

struct memacct_batch {
        memacct *m;
        BatchOp *ops;
        size_t n, size;
        size_t answered;
        bool committed;
};

_public_ int memacct_batch_begin(memacct *m, memacct_batch **ret) {
        memacct_batch *b;

        if (!m || !ret)
                return -EINVAL;
        if (m->bus)
                return client_bus_unsupported(m, "a batch");
        b = calloc(1, sizeof(*b));
        if (!b)
                return -ENOMEM;
        b->m = m;
        *ret = b;
        return 0;
}

static int batch_add(memacct_batch *b, bool charge, const char *path, uint64_t bytes, int item,
                     unsigned flags) {
        unsigned allowed = charge ? MEMACCT_KEEP | MEMACCT_FORCE : MEMACCT_KEEP;
        BatchOp *op;

        if (!b || b->committed || item < 0 || item >= STOCK_ITEMS || (flags & ~allowed) ||
            ((flags & MEMACCT_KEEP) && !path) || b->n >= (size_t) INT32_MAX)
                return -EINVAL;
        if (b->n == b->size) {
                size_t size = b->size > 0 ? b->size * 2 : 64;
                BatchOp *ops = realloc(b->ops, size * sizeof(*ops));

                if (!ops)
                        return -ENOMEM;
                b->ops = ops;
                b->size = size;
        }
        op = &b->ops[b->n];
        *op = (BatchOp) {
                .charge = charge,
                .bytes = bytes,
                .item = item,
                .flags = flags,
                .result = -EINPROGRESS,
        };
        if (path) {
                op->path = strdup(path);
                if (!op->path)
                        return -ENOMEM;
        }
        return (int) b->n++;
}

_public_ int memacct_batch_charge(memacct_batch *b, const char *path, uint64_t bytes, int item,
                                  unsigned flags) {
        return batch_add(b, true, path, bytes, item, flags);
}

_public_ int memacct_batch_uncharge(memacct_batch *b, const char *path, uint64_t bytes, int item,
                                    unsigned flags) {
        return batch_add(b, false, path, bytes, item, flags);
}

/* The outcome of @op, from its reply. Lock held. */
static void batch_op_done(memacct_batch *b, BatchOp *op, const Response *resp) {
        bool session = !op->path && !(op->flags & MEMACCT_KEEP);

        op->result = resp->has_status ? status_to_errno((MemStatus) resp->status) : 0;
        if (op->result == -EDQUOT && resp->refused_path)
                op->refused_path = strdup(resp->refused_path);
        if (op->result < 0 || !session)
                return;
        /* Session charges are what a reconnection replays. */
        if (op->charge) {
                stock_note_charged(&b->m->stock, (unsigned) op->item, op->bytes);
                if (resp->result_case == MEMACCT__V1__RESPONSE__RESULT_CHARGE &&
                    resp->charge->has_margin)
                        stock_note_margin(&b->m->stock, resp->charge->margin);
        } else
                (void) stock_note_uncharged(&b->m->stock, (unsigned) op->item, op->bytes);
}

/* The reply to operation p->index of batch p->userdata, or the transport
 * error @r. Lock held. */
static void batch_reply(const ConnPending *p, Response *resp, int r) {
        memacct_batch *b = p->userdata;
        BatchOp *op = &b->ops[p->index];

        b->answered++;
        if (resp) {
                batch_op_done(b, op, resp);
                memacct__v1__response__free_unpacked(resp, NULL);
        } else
                op->result = r;
}

static bool batch_done(void *userdata) {
        memacct_batch *b = userdata;

        return b->answered == b->n;
}

static int batch_queue(memacct_batch *b, size_t i, uint8_t **buf, size_t *len, size_t *size) {
        ConnPending p = { .done = batch_reply, .userdata = b, .index = i };
        const BatchOp *op = &b->ops[i];
        ChargeRequest cr;

        return conn_queue(&b->m->conn,
                          client_charge_request(&cr, op->charge, op->path, op->bytes,
                                                (unsigned) op->item, op->flags),
                          &p, buf, len, size);
}

_public_ int memacct_batch_commit(memacct_batch *b) {
        _cleanup_free_ uint8_t *buf = NULL;
        size_t len = 0, size = 0, queued = 0;
        memacct *m;
        int r, failed = 0;

        if (!b || b->committed)
                return -EINVAL;
        m = b->m;
        b->committed = true;
        b->answered = 0;
        if (b->n == 0)
                return 0;

        pthread_mutex_lock(&m->lock);
        r = client_ensure_connected(m);
        for (; r >= 0 && queued < b->n; queued++)
                r = batch_queue(b, queued, &buf, &len, &size);
        if (r < 0) {
                /* Nothing was written: forget the queued entries. */
                conn_unqueue(&m->conn, queued);
                client_error(m, r, "cannot queue the batch", NULL);
                pthread_mutex_unlock(&m->lock);
                for (size_t i = 0; i < b->n; i++)
                        if (b->ops[i].result == -EINPROGRESS)
                                b->ops[i].result = r;
                return r;
        }
        r = conn_write(&m->conn, buf, len, -1, client_wait_msec(m));
        if (r >= 0)
                r = conn_pump(&m->conn, client_wait_msec(m), batch_done, b);
        if (r < 0 && m->conn.fd >= 0)
                /* Timed out: the pendings point at @b, which the caller may free. */
                conn_break(&m->conn, r);
        pthread_mutex_unlock(&m->lock);

        for (size_t i = 0; i < b->n; i++) {
                if (b->ops[i].result == -EINPROGRESS)
                        b->ops[i].result = r < 0 ? r : -EIO;
                if (b->ops[i].result < 0)
                        failed++;
        }
        if (r < 0 && b->answered == 0)
                return client_error(m, r, m->conn.proto_error, NULL);
        return failed;
}

_public_ int memacct_batch_result(const memacct_batch *b, size_t i, const char **ret_refused_path) {
        if (!b || !b->committed || i >= b->n)
                return -EINVAL;
        if (ret_refused_path)
                *ret_refused_path = b->ops[i].refused_path;
        return b->ops[i].result;
}

_public_ memacct_batch *memacct_batch_free(memacct_batch *b) {
        if (!b)
                return NULL;
        for (size_t i = 0; i < b->n; i++) {
                free(b->ops[i].path);
                free(b->ops[i].refused_path);
        }
        free(b->ops);
        free(b);
        return NULL;
}
