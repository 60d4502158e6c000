/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * The protobuf side of the socket transport: a bounded decoding arena,
 * framed encoding of responses and events, and a group's GroupInfo. The
 * request handler (request.c) decides what to say; this file only turns
 * it into bytes.
 */

#include <event2/buffer.h>
#include <stddef.h>
#include <stdint.h>

#include "core/model.h"
#include "memacct.pb-c.h"
#include "service/events.h"

/**
 * wire_arena_reset() - empty the calling thread's decoding arena, sized for
 * frames of @max_frame bytes (a frame may decode to at most 8x its size;
 * more fails the unpack). The arena is freed when the thread exits.
 * Return: 0 or -ENOMEM.
 */
int wire_arena_reset(uint32_t max_frame);

/** wire_arena_allocator() - the calling thread's arena as a protobuf-c allocator. */
ProtobufCAllocator wire_arena_allocator(void);

/**
 * wire_find_nul_string() - the first string field of @body (an encoded
 * message of @desc) that holds a NUL byte, as its dotted name
 * ("create_group.path") in @ret_name. protobuf strings may hold NUL, C
 * strings end at one: unchecked, "/a\0b" would be taken as "/a". Only
 * for a body protobuf-c has unpacked (it is well-formed).
 * Return: 1 (found), 0 (none), -EBADMSG (not well-formed after all).
 */
int wire_find_nul_string(const ProtobufCMessageDescriptor *desc, const uint8_t *body, size_t len, char *ret_name,
                         size_t size);

/**
 * wire_response_append() - append @resp to @out as one frame (varint length,
 * then the body). Return: 0, -EMSGSIZE, -ENOMEM.
 */
int wire_response_append(const Memacct__V1__Response *resp, struct evbuffer *out);

/**
 * wire_frame_new() - @resp as one frame in a buffer of its own, for pushing
 * to connections on other threads. Freed by the caller; NULL on -ENOMEM.
 */
uint8_t *wire_frame_new(const Memacct__V1__Response *resp, size_t *ret_len);

/**
 * wire_event_frame() - @ev as one Response frame (id 0) in a new buffer:
 * an Event, or a Moved for EVENT_MOVED. The socket's EventDelivery
 * encoder. Return: 0, -EINVAL (a kind the socket does not carry), -ENOMEM.
 */
int wire_event_frame(const EventItem *ev, uint8_t **ret, size_t *ret_len);

/**
 * wire_group_info_fill() - @gi for the group @path from @info. It points
 * at @path and into arrays it allocates: free with wire_group_info_free(),
 * and keep @path until @gi is encoded. Return: 0 or -ENOMEM.
 */
int wire_group_info_fill(Memacct__V1__GroupInfo *gi, const char *path, const MemGroupInfo *info);
void wire_group_info_free(Memacct__V1__GroupInfo *gi);
