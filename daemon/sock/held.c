/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Held replies (held.h). A reply is held in an evbuffer of its own: the
 * response was encoded when its request was served, and moving it out is
 * a move of buffer chains, not a copy. Only replies behind an unsaved
 * change are held; the common case (nothing pending) never comes here.
 */

#include <errno.h>
#include <stdlib.h>

#include "sock/held.h"
#include "sock/request.h"

struct HeldReply {
        HeldReply *next;
        uint64_t seq; /* the change it reports; 0: none, it only keeps its place */
        uint64_t id;  /* the request's, for a refusal that replaces it */
        size_t len;
        struct evbuffer *reply;
};

int held_push(HeldReplies *q, uint64_t seq, uint64_t id, struct evbuffer *reply) {
        HeldReply *h = calloc(1, sizeof(*h));

        if (!h)
                return -ENOMEM;
        h->reply = evbuffer_new();
        if (!h->reply || evbuffer_add_buffer(h->reply, reply) < 0) {
                if (h->reply)
                        evbuffer_free(h->reply);
                free(h);
                return -ENOMEM;
        }
        h->seq = seq;
        h->id = id;
        h->len = evbuffer_get_length(h->reply);
        q->bytes += h->len;
        q->n++;
        *q->tail = h;
        q->tail = &h->next;
        return 0;
}

static void held_pop(HeldReplies *q) {
        HeldReply *h = q->head;

        q->head = h->next;
        if (!q->head)
                q->tail = &q->head;
        q->bytes -= h->len;
        q->n--;
        evbuffer_free(h->reply);
        free(h);
}

unsigned held_release(HeldReplies *q, Service *svc, struct evbuffer *out) {
        unsigned n = 0;

        while (q->head) {
                HeldReply *h = q->head;
                Refusal rf;
                int r;

                refusal_init(&rf);
                r = service_durable_check(svc, h->seq, &rf);
                if (r == 0)
                        break;
                if (r > 0)
                        (void) evbuffer_add_buffer(out, h->reply);
                else
                        /* The change is in effect but not saved: the
                         * client is told so instead of OK. */
                        (void) request_refusal_append(h->id, &rf, out);
                held_pop(q);
                n++;
        }
        return n;
}

void held_clear(HeldReplies *q) {
        while (q->head)
                held_pop(q);
}
