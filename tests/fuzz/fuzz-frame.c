/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Varint framing on arbitrary bytes: decode never reads past the input,
 * never accepts more than five prefix bytes or a body over the limit, and
 * what it decodes re-encodes to the same bytes. */

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "frame.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        for (size_t off = 0; off < size;) {
                uint8_t again[FRAME_PREFIX_MAX];
                size_t body, prefix;
                int r = frame_prefix_decode(data + off, size - off, 65536, &body, &prefix);

                if (r == -EAGAIN || r == -EBADMSG || r == -EMSGSIZE)
                        return 0;
                if (r != 0 || prefix > FRAME_PREFIX_MAX || prefix > size - off || body > 65536)
                        abort();
                /* Non-minimal encodings ("80 00") are valid varints; only
                 * compare when the input was minimal. */
                if (frame_prefix_encode((uint32_t) body, again) == prefix &&
                    memcmp(again, data + off, prefix) != 0)
                        abort();
                off += prefix + body;
        }
        return 0;
}
