/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * Replies held back until the change they report is saved: a
 * connection's queue, in request order. A durable change's OK enters it
 * with the change's sequence number; every reply after it enters it too
 * (with no number of its own), so that a client's replies keep their
 * order. held_release() moves out, from the front, every reply that may
 * go: an OK whose change is saved, or, when the save failed, the
 * refusal that replaces it.
 */

#include <event2/buffer.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "service/service.h"

typedef struct HeldReply HeldReply;

typedef struct HeldReplies {
        HeldReply *head;
        HeldReply **tail;
        size_t bytes; /* of every reply held */
        unsigned n;
} HeldReplies;

#define HELD_REPLIES_INIT(q) { .head = NULL, .tail = &(q).head }

static inline bool held_empty(const HeldReplies *q) {
        return !q->head;
}

/**
 * held_push() - hold the reply in @reply (its content is moved out) to
 * request @id, until change @seq (0: none of its own) is saved.
 * Return: 0 or -ENOMEM (@reply untouched).
 */
int held_push(HeldReplies *q, uint64_t seq, uint64_t id, struct evbuffer *reply);

/**
 * held_release() - move to @out, in order, every reply at the front that
 * may go now (asks service_durable_check()). Return: the replies moved.
 */
unsigned held_release(HeldReplies *q, Service *svc, struct evbuffer *out);

/** held_clear() - drop every held reply (the client is gone). */
void held_clear(HeldReplies *q);
