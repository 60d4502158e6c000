/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The kernel's dmem limit grammar (dmem-limit.h), kept apart from all
 * policy: what the client sends is bytes or "max" per region.
 */

#include <errno.h>
#include <string.h>

#include "dmem-limit.h"
#include "parse-size.h"

static int is_space(char c) {
        return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r';
}

/* "N%" or "N.D%" / "N.DD%", 0 < share <= 100%, into permyriad. */
static int parse_share(const char *s, unsigned *ret) {
        unsigned whole = 0, frac = 0, digits = 0;
        const char *p = s;

        if (*p < '0' || *p > '9')
                return -EINVAL;
        for (; *p >= '0' && *p <= '9'; p++) {
                whole = whole * 10 + (unsigned) (*p - '0');
                if (whole > 100)
                        return -EINVAL;
        }
        if (*p == '.') {
                for (p++; *p >= '0' && *p <= '9'; p++) {
                        if (++digits > 2)
                                return -EINVAL;
                        frac = frac * 10 + (unsigned) (*p - '0');
                }
                if (digits == 0)
                        return -EINVAL;
                if (digits == 1)
                        frac *= 10;
        }
        if (strcmp(p, "%") != 0)
                return -EINVAL;
        *ret = whole * 100 + frac;
        return *ret == 0 || *ret > 10000 ? -EINVAL : 0;
}

int dmem_value_parse(const char *s, DmemLimit *ret) {
        size_t n = strlen(s);

        /* The kernel takes the value as it is: white space around it was
         * stripped with the line, and one inside is an error. */
        if (n == 0 || is_space(s[0]) || is_space(s[n - 1]))
                return -EINVAL;
        if (s[n - 1] == '%') {
                ret->kind = DMEM_VALUE_PERCENT;
                return parse_share(s, &ret->permyriad);
        }
        if (strcmp(s, "max") == 0) {
                ret->kind = DMEM_VALUE_MAX;
                ret->bytes = UINT64_MAX;
                return 0;
        }
        /* parse_size() also reads "infinity": the kernel does not. */
        if (s[0] < '0' || s[0] > '9' || parse_size(s, &ret->bytes) < 0)
                return -EINVAL;
        ret->kind = DMEM_VALUE_BYTES;
        return 0;
}

int dmem_limit_parse(const char *text, DmemLimit *ret, size_t max, unsigned *ret_line) {
        const char *p = text;
        unsigned line = 0;
        size_t n = 0;

        while (*p) {
                const char *nl = strchr(p, '\n'), *eol = nl ? nl : p + strlen(p), *b = p, *e = eol, *sep;
                char value[64];
                DmemLimit l = {};

                line++;
                p = nl ? nl + 1 : eol;
                while (b < e && is_space(*b))
                        b++;
                while (e > b && is_space(e[-1]))
                        e--;
                if (b == e)
                        continue; /* an empty line: skipped, as strstrip() leaves it */
                for (sep = b; sep < e && *sep != ' ' && *sep != '\t'; sep++)
                        ;
                if (ret_line)
                        *ret_line = line;
                if (sep == e)
                        return -EINVAL; /* a name and nothing else */
                if ((size_t) (sep - b) > DMEM_LIMIT_REGION_MAX)
                        return -ENAMETOOLONG;
                if ((size_t) (e - sep - 1) >= sizeof(value))
                        return -EINVAL;
                memcpy(l.region, b, (size_t) (sep - b));
                memcpy(value, sep + 1, (size_t) (e - sep - 1));
                value[e - sep - 1] = 0;
                if (dmem_value_parse(value, &l) < 0)
                        return -EINVAL;
                if (n == max)
                        return -E2BIG;
                ret[n++] = l;
        }
        return (int) n;
}

int dmem_limit_bytes(const DmemLimit *l, uint64_t capacity, uint64_t *ret) {
        switch (l->kind) {
        case DMEM_VALUE_MAX:
                *ret = UINT64_MAX;
                return 0;
        case DMEM_VALUE_PERCENT:
                if (capacity == UINT64_MAX)
                        return -EINVAL;
                *ret = (uint64_t) ((unsigned __int128) capacity * l->permyriad / 10000);
                return 0;
        default:
                *ret = l->bytes;
                return 0;
        }
}
