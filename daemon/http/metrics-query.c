/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The query of a scrape: depth=N, prefix=/path and series=basic|full
 *
 * Strict on purpose: an unknown name, a repeated one, an empty or
 * malformed value is a 400 with the reason, never ignored, since a typo
 * that silently exports the whole tree is the answer a dashboard author
 * cannot see. The query is part of the request line, so it is already
 * bounded by [metrics] header-size (http_request_parse() refuses a longer
 * head with 431); the decoded prefix is bounded by MEM_PATH_MAX on top.
 */

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "base/config.h"
#include "http/metrics-internal.h"

static int hex_digit(char c) {
        if (c >= '0' && c <= '9')
                return c - '0';
        if (c >= 'a' && c <= 'f')
                return c - 'a' + 10;
        if (c >= 'A' && c <= 'F')
                return c - 'A' + 10;
        return -1;
}

/* Percent-decode @s (@n bytes) into @buf (@size bytes, NUL-terminated); '+' is a space (form encoding). */
static int decode(const char *s, size_t n, char *buf, size_t size) {
        size_t o = 0;

        for (size_t i = 0; i < n; i++) {
                char c = s[i];

                if (c == '%') {
                        int hi, lo;

                        if (n - i < 3)
                                return -EINVAL;
                        hi = hex_digit(s[i + 1]);
                        lo = hex_digit(s[i + 2]);
                        if (hi < 0 || lo < 0)
                                return -EINVAL;
                        c = (char) (hi << 4 | lo);
                        i += 2;
                } else if (c == '+')
                        c = ' ';
                /* A NUL would cut the value short: refused, as any control byte in a path. */
                if (c == 0)
                        return -EINVAL;
                if (o + 1 >= size)
                        return -ENAMETOOLONG;
                buf[o++] = c;
        }
        buf[o] = 0;
        return 0;
}

static bool is_name(const char *s, size_t n, const char *name) {
        return n == strlen(name) && memcmp(s, name, n) == 0;
}

static int fail(char *reason, size_t size, const char *text) {
        snprintf(reason, size, "%s", text);
        return -EINVAL;
}

int metrics_query_parse(const char *q, size_t n, MetricsQuery *ret, char *reason, size_t reason_size) {
        MetricsQuery mq = { .depth = UINT_MAX, .basic = -1 };
        bool seen_depth = false, seen_prefix = false;

        strcpy(mq.prefix, "/");
        while (q && n > 0) {
                const char *amp = memchr(q, '&', n);
                size_t len = amp ? (size_t) (amp - q) : n;
                const char *eq = memchr(q, '=', len);
                size_t name_len = eq ? (size_t) (eq - q) : len;
                const char *v = eq ? eq + 1 : NULL;
                size_t vlen = eq ? len - name_len - 1 : 0;

                /* "a&&b" and a trailing '&': empty pieces are nothing. */
                if (len == 0)
                        ;
                else if (is_name(q, name_len, "depth")) {
                        unsigned long long d = 0;

                        if (seen_depth)
                                return fail(reason, reason_size, "depth is given more than once");
                        seen_depth = true;
                        if (!v || vlen == 0 || vlen > 10)
                                return fail(reason, reason_size, "depth must be a number from 0 to 4294967294");
                        for (size_t i = 0; i < vlen; i++) {
                                if (v[i] < '0' || v[i] > '9')
                                        return fail(reason, reason_size,
                                                    "depth must be a number from 0 to 4294967294");
                                d = d * 10 + (unsigned) (v[i] - '0');
                        }
                        /* UINT_MAX itself means "no depth limit" inside. */
                        if (d >= UINT_MAX)
                                return fail(reason, reason_size, "depth must be a number from 0 to 4294967294");
                        mq.depth = (unsigned) d;
                } else if (is_name(q, name_len, "prefix")) {
                        int r;

                        if (seen_prefix)
                                return fail(reason, reason_size, "prefix is given more than once");
                        seen_prefix = true;
                        if (!v || vlen == 0)
                                return fail(reason, reason_size, "prefix must be a group path such as /a/b");
                        r = decode(v, vlen, mq.prefix, sizeof(mq.prefix));
                        if (r == -ENAMETOOLONG)
                                return fail(reason, reason_size, "prefix is longer than a group path may be");
                        if (r < 0)
                                return fail(reason, reason_size, "prefix has a bad %-escape or a NUL byte");
                        if (mq.prefix[0] != '/')
                                return fail(reason, reason_size, "prefix must be a group path such as /a/b");
                } else if (is_name(q, name_len, "series")) {
                        if (mq.basic >= 0)
                                return fail(reason, reason_size, "series is given more than once");
                        mq.basic = v ? config_series_from_string(v, vlen) : -EINVAL;
                        if (mq.basic < 0)
                                return fail(reason, reason_size, "series must be basic or full");
                } else
                        return fail(reason, reason_size,
                                    "unknown query parameter; only depth, prefix and series are known");
                if (!amp)
                        break;
                n -= len + 1;
                q = amp + 1;
        }
        *ret = mq;
        return 0;
}
