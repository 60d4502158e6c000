/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* parse_size() on arbitrary bytes: never crashes, and what it accepts
 * prints back to a string it parses to the same value. */

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "parse-size.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        char buf[256], back[32];
        uint64_t v, v2;
        int r;

        if (size >= sizeof(buf))
                return 0;
        memcpy(buf, data, size);
        buf[size] = 0;
        r = parse_size(buf, &v);
        if (r != 0 && r != -EINVAL && r != -ERANGE)
                abort();
        if (r == 0) {
                if (v == UINT64_MAX)
                        snprintf(back, sizeof(back), "max");
                else
                        snprintf(back, sizeof(back), "%" PRIu64, v);
                if (parse_size(back, &v2) != 0 || v2 != v)
                        abort();
        }
        return 0;
}
