/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * The socket's hot requests, Charge and Uncharge, served through the hand
 * codec (wire-hot.h): the same service call, counts and Response as
 * request_serve() makes for them, without protobuf-c's unpack, pack and
 * their allocations. Whatever the codec declines goes to
 * request_serve().
 */

#include <stddef.h>
#include <stdint.h>

#include "frame.h"
#include "service/service.h"
#include "sock/request.h"

/*
 * The largest reply: the prefix, id and status (an int32 enum, at most
 * ten bytes each), a refusal's message and refused_path (a tag, a
 * two-byte length and the text each), or a ChargeReply (two tag bytes, a
 * length, three uint64 and a bool with their tags).
 */
#define REQUEST_HOT_REPLY_MAX                                                                   \
        (FRAME_PREFIX_MAX + 2 * (1 + 10) + (1 + 2 + REFUSAL_MESSAGE_MAX) + (1 + 2 + MEM_PATH_MAX) + \
         (2 + 1 + 3 * (1 + 10) + 2))

/**
 * request_hot_serve() - serve the frame body @body of peer @p when the
 * hand codec decodes it (a Charge or Uncharge without a file descriptor),
 * exactly as request_serve() would: its one framed Response goes to @buf
 * (REQUEST_HOT_REPLY_MAX bytes), its length to @ret_len, the request's id
 * to @ret_id. On the peer's thread.
 *
 * @clock_nsec: in, the clock at the end of the request served just before
 * this one from the same read (0: none, the clock is read); out, the
 * clock at this one's end. A request's duration then runs from its
 * predecessor's end, its own decoding included, and a burst reads the
 * clock once per request.
 *
 * Return: 1 (served); 0 (not a request it serves: nothing was done, serve
 * it with request_serve()); REQUEST_WAIT (held for reclaim, no reply: as
 * request_serve()'s); -EPROTO (served, and as with request_serve() the
 * connection must end once the reply is written).
 */
int request_hot_serve(Service *svc, Peer *p, const uint8_t *body, size_t len, int fd,
                      uint8_t buf[static REQUEST_HOT_REPLY_MAX], size_t *ret_len, uint64_t *ret_id,
                      uint64_t *clock_nsec);
