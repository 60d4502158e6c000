/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Varint framing. protobuf-c has no delimited read or write helpers, so
 * the ten lines of varint live here, bounded: at most five bytes, at most
 * 32 bits, and a body limit checked before anything is buffered.
 */

#include <errno.h>

#include "frame.h"

int frame_prefix_decode(const uint8_t *buf, size_t len, uint32_t max_body, size_t *ret_body,
                        size_t *ret_prefix) {
        uint64_t v = 0;

        for (size_t i = 0; i < FRAME_PREFIX_MAX; i++) {
                if (i >= len)
                        return -EAGAIN;
                v |= (uint64_t) (buf[i] & 0x7f) << (7 * i);
                if (!(buf[i] & 0x80)) {
                        if (v > UINT32_MAX)
                                return -EBADMSG;
                        if (v > max_body)
                                return -EMSGSIZE;
                        *ret_body = (size_t) v;
                        *ret_prefix = i + 1;
                        return 0;
                }
        }
        return -EBADMSG;
}

size_t frame_prefix_encode(uint32_t body, uint8_t out[FRAME_PREFIX_MAX]) {
        size_t n = 0;

        do {
                out[n] = (uint8_t) (body & 0x7f);
                body >>= 7;
                if (body)
                        out[n] |= 0x80;
                n++;
        } while (body);
        return n;
}
