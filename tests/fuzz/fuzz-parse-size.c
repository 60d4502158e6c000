/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * parse_size() and the dmem limit grammar (dmem_limit_parse()) on
 * arbitrary bytes: never a crash; what parse_size() accepts prints back
 * to a string it parses to the same value; every region line the grammar
 * accepts prints back, "NAME VALUE", to the same region and value.
 */

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dmem-limit.h"
#include "parse-size.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_dmem(const char *text) {
        DmemLimit l[8], again;
        char line[128];
        uint64_t v;
        int n = dmem_limit_parse(text, l, 8, NULL);

        if (n < 0 && n != -EINVAL && n != -ENAMETOOLONG && n != -E2BIG)
                abort();
        for (int i = 0; i < n; i++) {
                if (!*l[i].region || strpbrk(l[i].region, " \t\n"))
                        abort();
                if (l[i].kind == DMEM_VALUE_PERCENT)
                        snprintf(line, sizeof(line), "%.63s %u.%02u%%", l[i].region, l[i].permyriad / 100,
                                 l[i].permyriad % 100);
                else if (l[i].kind == DMEM_VALUE_MAX)
                        snprintf(line, sizeof(line), "%.63s max", l[i].region);
                else
                        snprintf(line, sizeof(line), "%.63s %" PRIu64, l[i].region, l[i].bytes);
                if (dmem_limit_parse(line, &again, 1, NULL) != 1 || strcmp(again.region, l[i].region) != 0 ||
                    again.kind != l[i].kind || again.bytes != l[i].bytes || again.permyriad != l[i].permyriad)
                        abort();
                /* A share is never more than the whole capacity. */
                if (dmem_limit_bytes(&l[i], UINT64_C(1) << 40, &v) < 0 ||
                    (l[i].kind == DMEM_VALUE_PERCENT && v > UINT64_C(1) << 40))
                        abort();
        }
}

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
        check_dmem(buf);
        return 0;
}
