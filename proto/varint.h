/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * The base-128 varint reader of every decoder on both sides of the
 * socket: the frame prefix, the daemon's NUL scan of a request and its
 * hand decoder of Charge and Uncharge. It reads as protobuf-c's
 * parse_uint64() does: each byte's low seven bits shifted into place,
 * bits past 64 dropped (a non-minimal varint has the same value in
 * both), the high bit saying another byte follows. Static inline: the
 * hand decoder reads several per request on the hot path.
 */

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A 64-bit varint takes at most ten bytes, a 32-bit one at most five. */
#define VARINT64_MAX 10
#define VARINT32_MAX 5

/**
 * varint_decode() - the varint at the start of @p.
 * @n: the bytes there are at @p
 * @max: the most bytes the varint may take (VARINT64_MAX, VARINT32_MAX)
 * @ret: its value
 *
 * Return: its length in bytes (1..@max); 0 when the @n bytes end before
 * it does (read more); -EBADMSG when @max bytes all say another follows.
 */
static inline int varint_decode(const uint8_t *p, size_t n, size_t max, uint64_t *ret) {
        size_t lim = n < max ? n : max;
        uint64_t v = 0;

        for (size_t i = 0; i < lim; i++) {
                v |= (uint64_t) (p[i] & 0x7f) << (7 * i);
                if (!(p[i] & 0x80)) {
                        *ret = v;
                        return (int) i + 1;
                }
        }
        return lim == max ? -EBADMSG : 0;
}

/**
 * varint_is_true() - the @len bytes of a varint (as varint_decode() took
 * it) read as a bool, as protobuf-c's parse_boolean() reads it: true when
 * any byte has a low bit set, which is not "value != 0" for a ten-byte
 * varint whose set bits lie past 64.
 */
static inline bool varint_is_true(const uint8_t *p, size_t len) {
        uint8_t any = 0;

        for (size_t i = 0; i < len; i++)
                any |= p[i] & 0x7f;
        return any != 0;
}
