/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * Stream framing: a base-128 varint body length, then the body (protobuf's
 * "delimited" form). Shared by the daemon and libmemacct.
 */

#include <stddef.h>
#include <stdint.h>

/* A 32-bit varint takes at most five bytes (VARINT32_MAX). */
#define FRAME_PREFIX_MAX 5

/**
 * frame_prefix_decode() - read a length prefix from the start of @buf.
 * @max_body: the largest body accepted
 * @ret_body: the body length
 * @ret_prefix: the prefix length in bytes
 *
 * Return: 0; -EAGAIN (incomplete prefix: read more); -EBADMSG (longer than
 * five bytes or above 2^32-1); -EMSGSIZE (body above @max_body).
 */
int frame_prefix_decode(const uint8_t *buf, size_t len, uint32_t max_body, size_t *ret_body,
                        size_t *ret_prefix);

/** frame_prefix_encode() - write the prefix for @body bytes; returns its length. */
size_t frame_prefix_encode(uint32_t body, uint8_t out[FRAME_PREFIX_MAX]);
