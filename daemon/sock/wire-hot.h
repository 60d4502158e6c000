/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * The hand codec of the socket's hot messages: a Request whose op is
 * Charge or Uncharge, decoded from the frame body into a WireHotRequest
 * without allocation, and a Response of the shape request.c sends (id,
 * status, message, refused_path, a ChargeReply) encoded straight into a
 * caller's buffer. The decoder says "not mine" (0) for everything it
 * cannot prove protobuf-c would decode to the same values, and the
 * caller then goes the protobuf-c way; the encoder writes the bytes
 * protobuf-c's pack would. docs/performance.md ("The hand codec of
 * Charge and Uncharge") lists the rules; tests/fuzz/fuzz-wire-hot.c
 * checks both halves against protobuf-c.
 */

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/model.h"

/* The longest stat item the hand decoder copies; the names are at most
 * six bytes, a longer one is refused by the service (protobuf-c's way). */
#define WIRE_HOT_STAT_MAX 15

typedef enum WireHotOp {
        WIRE_HOT_CHARGE,
        WIRE_HOT_UNCHARGE,
        _WIRE_HOT_OP_MAX,
        _WIRE_HOT_OP_INVALID = -EINVAL,
} WireHotOp;

/*
 * A decoded Charge or Uncharge, as protobuf-c's unpack would have it: an
 * absent string is has_path/has_stat false (protobuf-c's NULL), a
 * present one is NUL-terminated here (and held no NUL byte); absent
 * scalars are 0 and false. force and stock are Charge's only; region
 * (field 7) is both's.
 */
typedef struct WireHotRequest {
        uint64_t id;
        WireHotOp op;
        bool has_path, has_stat, has_bytes, has_region;
        bool keep, force, stock;
        uint64_t bytes;
        char stat[WIRE_HOT_STAT_MAX + 1];
        char region[MEM_REGION_NAME_MAX + 1]; /* a longer name is no region: declined */
        char path[MEM_PATH_MAX + 1];
} WireHotRequest;

/**
 * wire_hot_decode() - decode the Request @body of @len bytes into @ret
 * when it is one the hand codec handles: fields id (at most once) and one
 * charge or uncharge (once), whose own fields each appear at most once
 * with their declared wire type, strings within the bounds above and
 * without a NUL byte, tags of one or two bytes (of one inside the op).
 * Varints are read exactly as protobuf-c reads them (up to ten bytes,
 * non-minimal forms included). Reads nothing outside @body. Any thread.
 *
 * Return: 1 (decoded); 0 (not one it handles: decode it with protobuf-c;
 * @ret is undefined).
 */
int wire_hot_decode(const uint8_t *body, size_t len, WireHotRequest *ret);

/* A Response as request.c sends it for a Charge or Uncharge. */
typedef struct WireHotReply {
        uint64_t id;
        int32_t status;           /* a memacct.v1.Status; packed as protobuf-c packs an enum (int32) */
        const char *message;      /* NULL: absent */
        const char *refused_path; /* NULL: absent */
        bool charge;              /* result is a ChargeReply with its four fields (five with stock_index) */
        uint64_t over_high, throttle_usec, margin;
        uint32_t stock_index;     /* 0: absent (a region refill's page counter otherwise) */
        bool over_max;
} WireHotReply;

/**
 * wire_hot_reply_frame() - @r as one frame (varint length, then the
 * body, byte for byte what memacct__v1__response__pack() writes with
 * has_id and has_status set) at @out, which has @size bytes.
 * Return: the frame's length, or 0 when it does not fit (nothing
 * meaningful written).
 */
size_t wire_hot_reply_frame(const WireHotReply *r, uint8_t *out, size_t size);
