/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Protobuf encoding and decoding helpers of the socket transport. */

#include <event2/buffer.h>
#include <stddef.h>
#include <stdint.h>

#include "group.h"
#include "memacct.pb-c.h"

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
 * wire_group_info_fill() - @gi for @g from @info. It points into @g (its
 * path) and into arrays it allocates: free with wire_group_info_free(),
 * and keep a reference on @g until @gi is encoded. Return: 0 or -ENOMEM.
 */
int wire_group_info_fill(Memacct__V1__GroupInfo *gi, MemGroup *g, const MemGroupInfo *info);
void wire_group_info_free(Memacct__V1__GroupInfo *gi);
