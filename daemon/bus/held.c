/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Held replies on the bus (held.h): a list of (call, reply) pairs, each
 * with the change it waits for. Only replies behind an unsaved change are
 * held; a reply whose change is already saved (the common case) is sent
 * at once and never enters the list.
 */

#include <errno.h>
#include <stdlib.h>

#include "bus/error.h"
#include "bus/held.h"
#include "macro.h"
#include "base/log.h"

struct BusHeldReply {
        BusHeldReply *next;
        uint64_t seq;
        sd_bus_message *call, *reply;
};

static BusHeldReply *held_free(BusHeldReply *h) {
        BusHeldReply *next = h->next;

        sd_bus_message_unref(h->call);
        sd_bus_message_unref(h->reply);
        free(h);
        return next;
}

/* The refusal that replaces the reply to @call: its change cannot be saved. */
static int held_refuse(sd_bus_message *call, const Refusal *rf) {
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;

        (void) bus_refusal(&error, rf);
        return sd_bus_reply_method_error(call, &error);
}

int bus_held_send(BusHeldReply **held, Service *svc, uint64_t seq, sd_bus_message *call,
                  sd_bus_message *reply) {
        BusHeldReply *h;
        Refusal rf;
        int r;

        refusal_init(&rf);
        r = service_durable_check(svc, seq, &rf);
        if (r > 0)
                return sd_bus_send(NULL, reply, NULL);
        if (r < 0)
                return held_refuse(call, &rf);
        h = calloc(1, sizeof(*h));
        if (!h)
                return -ENOMEM;
        *h = (BusHeldReply) {
                .next = *held,
                .seq = seq,
                .call = sd_bus_message_ref(call),
                .reply = sd_bus_message_ref(reply),
        };
        *held = h;
        return 1;
}

void bus_held_release(BusHeldReply **held, Service *svc) {
        BusHeldReply **hp = held;

        while (*hp) {
                BusHeldReply *h = *hp;
                Refusal rf;
                int r;

                refusal_init(&rf);
                r = service_durable_check(svc, h->seq, &rf);
                if (r == 0) {
                        hp = &h->next;
                        continue;
                }
                r = r > 0 ? sd_bus_send(NULL, h->reply, NULL) : held_refuse(h->call, &rf);
                if (r < 0)
                        log_debug_errno(r, "Cannot send a held reply: %m");
                *hp = held_free(h);
        }
}

void bus_held_clear(BusHeldReply **held) {
        while (*held)
                *held = held_free(*held);
}
