/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The synchronous call: one request written, the handle's lock held from
 * the write to its reply. Replies come in request order, so the replies of
 * refills and returns sent earlier are dispatched on the way (each to its
 * own completion callback) and ours is the one whose callback fills our
 * slot. Nothing here reconnects: a broken connection is the caller's to
 * repair (client-reconnect.c), which is why a reconnection rebuilds the
 * session from these calls.
 *
 * Invariant: when a call returns, no awaited reply points at its slot,
 * which lives on the caller's stack: a call that gives up before its reply
 * breaks the connection, which answers every awaited reply at once.
 */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client-call.h"
#include "client-error.h"
#include "client-stat.h"
#include "macro.h"
#include "status.h"

int client_wait_msec(const memacct *m) {
        /* 0 is "no timeout" to memacct_set_timeout(). */
        return m->timeout_msec > 0 ? (int) m->timeout_msec : -1;
}

typedef struct SyncSlot {
        Response *resp; /* the reply, owned by the caller once done */
        int r;          /* a transport error, when resp is NULL */
        bool done;
} SyncSlot;

static void sync_reply(const ConnPending *p, Response *resp, int r) {
        SyncSlot *slot = p->userdata;

        slot->resp = resp;
        slot->r = r;
        slot->done = true;
}

static bool sync_done(void *userdata) {
        return ((SyncSlot *) userdata)->done;
}

/* The errno of a reply's status, recorded. Return: 0 or -errno. */
static int reply_error(const memacct *m, const Response *resp) {
        int r;

        if (!resp->has_status || resp->status == MEMACCT__V1__STATUS__STATUS_OK)
                return 0;
        r = status_to_errno((MemStatus) resp->status);
        return client_error(m, r, resp->message, resp->refused_path);
}

int client_call_locked(memacct *m, Request *req, int fd_pass, Response **ret) {
        SyncSlot slot = {};
        ConnPending p = { .done = sync_reply, .userdata = &slot };
        int r;

        r = conn_send(&m->conn, req, &p, fd_pass, client_wait_msec(m));
        if (r >= 0)
                r = conn_pump(&m->conn, client_wait_msec(m), sync_done, &slot);
        if (r < 0 && !slot.done)
                /* The slot lives on this stack: nothing may answer it later. */
                conn_break(&m->conn, r);
        if (!slot.done)
                return client_error(m, r < 0 ? r : -EIO, m->conn.proto_error, NULL);
        if (!slot.resp)
                return client_error(m, slot.r, m->conn.proto_error, NULL);
        r = reply_error(m, slot.resp);
        if (r < 0 || !ret)
                memacct__v1__response__free_unpacked(slot.resp, NULL);
        else
                *ret = slot.resp;
        return r;
}

Request *client_charge_request(ChargeRequest *cr, bool charge, const char *path, uint64_t bytes,
                               unsigned item, unsigned flags) {
        bool keep = flags & MEMACCT_KEEP;

        /* Each has_x is set only with its x, so a field that is false is
         * absent from the frame, as the daemon's defaults expect. */
        *cr = (ChargeRequest) {
                .req = MEMACCT__V1__REQUEST__INIT,
                .charge = MEMACCT__V1__CHARGE__INIT,
                .uncharge = MEMACCT__V1__UNCHARGE__INIT,
        };
        if (charge) {
                cr->charge.path = (char *) path;
                cr->charge.has_bytes = true;
                cr->charge.bytes = bytes;
                cr->charge.stat = (char *) client_stat_name(item);
                cr->charge.has_keep = cr->charge.keep = keep;
                cr->charge.has_force = cr->charge.force = !!(flags & MEMACCT_FORCE);
                cr->charge.has_no_wait = cr->charge.no_wait = !!(flags & MEMACCT_NO_WAIT);
                cr->req.op_case = MEMACCT__V1__REQUEST__OP_CHARGE;
                cr->req.charge = &cr->charge;
        } else {
                cr->uncharge.path = (char *) path;
                cr->uncharge.has_bytes = true;
                cr->uncharge.bytes = bytes;
                cr->uncharge.stat = (char *) client_stat_name(item);
                cr->uncharge.has_keep = cr->uncharge.keep = keep;
                cr->req.op_case = MEMACCT__V1__REQUEST__OP_UNCHARGE;
                cr->req.uncharge = &cr->uncharge;
        }
        return &cr->req;
}

uint64_t client_charge_margin(const Response *resp) {
        if (resp->result_case == MEMACCT__V1__RESPONSE__RESULT_CHARGE && resp->charge->has_margin)
                return resp->charge->margin;
        return UINT64_MAX;
}

int client_charge_locked(memacct *m, const char *path, uint64_t bytes, unsigned item,
                         unsigned flags, memacct_charge_result *ret) {
        ChargeRequest cr;
        Response *resp = NULL;
        int r;

        r = client_call_locked(m, client_charge_request(&cr, true, path, bytes, item, flags), -1,
                               &resp);
        if (r < 0)
                return r;
        if (ret) {
                *ret = (memacct_charge_result) { .margin = client_charge_margin(resp) };
                if (resp->result_case == MEMACCT__V1__RESPONSE__RESULT_CHARGE) {
                        const Memacct__V1__ChargeReply *c = resp->charge;

                        ret->over_high = c->over_high;
                        ret->throttle_usec = c->throttle_usec;
                        ret->over_max = !!c->over_max;
                }
        }
        memacct__v1__response__free_unpacked(resp, NULL);
        return 0;
}

int client_hello_locked(memacct *m) {
        Memacct__V1__Hello hello = MEMACCT__V1__HELLO__INIT;
        Request req = MEMACCT__V1__REQUEST__INIT;
        Response *resp = NULL;
        char agent[128];
        int r;

        snprintf(agent, sizeof(agent), "libmemacct/%s (%s)", MEMACCT_VERSION,
                 program_invocation_short_name);
        hello.has_version = true;
        hello.version = MEMACCT_PROTOCOL_VERSION;
        hello.agent = agent;
        req.op_case = MEMACCT__V1__REQUEST__OP_HELLO;
        req.hello = &hello;
        r = client_call_locked(m, &req, -1, &resp);
        if (r < 0)
                return r;
        if (resp->result_case != MEMACCT__V1__RESPONSE__RESULT_HELLO) {
                memacct__v1__response__free_unpacked(resp, NULL);
                return client_error(m, -EPROTO, "no HelloReply", NULL);
        }
        if (resp->hello->has_version && resp->hello->version != MEMACCT_PROTOCOL_VERSION) {
                char msg[96];

                snprintf(msg, sizeof(msg), "server speaks protocol version %u, not %u",
                         resp->hello->version, MEMACCT_PROTOCOL_VERSION);
                memacct__v1__response__free_unpacked(resp, NULL);
                return client_error(m, -EPROTONOSUPPORT, msg, NULL);
        }
        free(m->server);
        m->server = strdup(resp->hello->server ? resp->hello->server : "");
        m->pid = (pid_t) resp->hello->pid;
        m->conn.max_frame = resp->hello->has_max_frame ? resp->hello->max_frame : 0;
        if (resp->hello->has_charge_batch && resp->hello->charge_batch > 0) {
                /* The daemon's charge-batch caps refills. Written only when it
                 * changes (a reconnect to a reconfigured daemon). */
                uint64_t b = MAX(MIN(resp->hello->charge_batch, STOCK_MAX_BATCH), STOCK_MIN_BATCH);

                if (m->stock.max_batch != b)
                        m->stock.max_batch = b;
        }
        memacct__v1__response__free_unpacked(resp, NULL);
        return m->server ? 0 : client_error(m, -ENOMEM, NULL, NULL);
}

int client_attach_locked(memacct *m, const char *path) {
        Memacct__V1__Attach attach = MEMACCT__V1__ATTACH__INIT;
        Request req = MEMACCT__V1__REQUEST__INIT;
        Response *resp = NULL;
        const char *group = NULL;
        int r;

        attach.path = (char *) path;
        req.op_case = MEMACCT__V1__REQUEST__OP_ATTACH;
        req.attach = &attach;
        r = client_call_locked(m, &req, -1, &resp);
        if (r < 0)
                return r;
        if (resp->result_case == MEMACCT__V1__RESPONSE__RESULT_ATTACHED && resp->attached->path)
                group = resp->attached->path;
        else if (*path && strcmp(path, "auto") != 0)
                group = path; /* an older daemon: only "auto" is unknown */
        r = client_attached_group_set(m, group);
        memacct__v1__response__free_unpacked(resp, NULL);
        return r;
}

int client_subscribe_locked(memacct *m, const char *path, const char *region) {
        Memacct__V1__Subscribe sub = MEMACCT__V1__SUBSCRIBE__INIT;
        Request req = MEMACCT__V1__REQUEST__INIT;

        sub.path = (char *) path;
        sub.region = (char *) region;
        req.op_case = MEMACCT__V1__REQUEST__OP_SUBSCRIBE;
        req.subscribe = &sub;
        return client_call_locked(m, &req, -1, NULL);
}
