/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Varint framing. protobuf-c has no delimited read or write helpers, so
 * they live here, bounded: at most five bytes, at most 32 bits, and a
 * body limit checked before anything is buffered. The reading is
 * varint.h's, the one every decoder shares.
 */

#include <errno.h>

#include "frame.h"
#include "varint.h"

int frame_prefix_decode(const uint8_t *buf, size_t len, uint32_t max_body, size_t *ret_body,
                        size_t *ret_prefix) {
        uint64_t v;
        int k;

        k = varint_decode(buf, len, FRAME_PREFIX_MAX, &v);
        if (k == 0)
                return -EAGAIN;
        if (k < 0 || v > UINT32_MAX)
                return -EBADMSG;
        if (v > max_body)
                return -EMSGSIZE;
        *ret_body = (size_t) v;
        *ret_prefix = (size_t) k;
        return 0;
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
