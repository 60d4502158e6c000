/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Byte quantities: "4096", "512K", "1G", "max". The analogue of the
 * kernel's page_counter_memparse(), kept apart from all policy.
 */

#include <ctype.h>
#include <errno.h>
#include <string.h>

#include "parse-size.h"

static const char *skip_space(const char *s) {
        while (*s && isspace((unsigned char) *s))
                s++;
        return s;
}

int parse_size(const char *s, uint64_t *ret) {
        uint64_t v = 0;
        unsigned shift = 0;
        const char *end;
        size_t n;

        if (!s)
                return -EINVAL;
        s = skip_space(s);
        end = s + strlen(s);
        while (end > s && isspace((unsigned char) end[-1]))
                end--;
        n = (size_t) (end - s);
        if ((n == 3 && strncmp(s, "max", 3) == 0) || (n == 8 && strncmp(s, "infinity", 8) == 0)) {
                *ret = UINT64_MAX;
                return 0;
        }
        if (n == 0 || !isdigit((unsigned char) *s))
                return -EINVAL;
        for (; s < end && isdigit((unsigned char) *s); s++)
                if (__builtin_mul_overflow(v, 10, &v) ||
                    __builtin_add_overflow(v, (uint64_t) (*s - '0'), &v))
                        return -ERANGE;
        if (s < end) {
                switch (*s) {
                case 'K': case 'k': shift = 10; break;
                case 'M': case 'm': shift = 20; break;
                case 'G': case 'g': shift = 30; break;
                case 'T': case 't': shift = 40; break;
                case 'P': case 'p': shift = 50; break;
                case 'E': case 'e': shift = 60; break;
                default: return -EINVAL;
                }
                if (++s != end)
                        return -EINVAL;
        }
        if (shift && v > (UINT64_MAX >> shift))
                return -ERANGE;
        *ret = v << shift;
        return 0;
}
