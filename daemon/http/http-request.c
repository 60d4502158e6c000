/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * HTTP/1.x request parsing for the metrics listener
 *
 * The listener answers one small GET; the parser accepts what a scraper
 * sends and refuses anything ambiguous instead of guessing, since a guess
 * is where request smuggling and desynchronised keep-alive streams come
 * from: no Transfer-Encoding, one Content-Length, no folded lines, no
 * control bytes. It reads only the bytes it is given and never more than
 * @max_head of them before it has seen the end of the head, so a caller
 * that keeps at most @max_head + @max_body bytes buffered can always
 * decide: complete, need more, or refuse.
 */

#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <strings.h>

#include "http/http-request.h"

/* RFC 9110 tchar: the bytes of a method or header name. */
static bool is_tchar(unsigned char c) {
        return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
               (c && strchr("!#$%&'*+-.^_`|~", c));
}

/* A byte a header value or a target may hold: visible ASCII, space, tab, obs-text. */
static bool is_field_byte(unsigned char c) {
        return c == '\t' || (c >= 0x20 && c != 0x7f);
}

/* The end of the line at @p (its LF, or NULL when it is not in @end yet). */
static const char *line_end(const char *p, const char *end) {
        return memchr(p, '\n', (size_t) (end - p));
}

/* Does the comma-separated @v (@n bytes) hold the token @tok, case-insensitively? */
static bool list_has_token(const char *v, size_t n, const char *tok) {
        size_t tl = strlen(tok);

        while (n > 0) {
                const char *comma = memchr(v, ',', n);
                size_t len = comma ? (size_t) (comma - v) : n;
                const char *a = v, *b = v + len;

                while (a < b && (*a == ' ' || *a == '\t'))
                        a++;
                while (b > a && (b[-1] == ' ' || b[-1] == '\t'))
                        b--;
                if ((size_t) (b - a) == tl && strncasecmp(a, tok, tl) == 0)
                        return true;
                if (!comma)
                        break;
                n -= len + 1;
                v = comma + 1;
        }
        return false;
}

/*
 * Does the Accept-Encoding value @v (@n bytes) take gzip? A coding is
 * "gzip", "x-gzip" or "*", with parameters after ';' of which only q
 * matters: q=0 (0, 0.0, 0.00, 0.000) refuses it (RFC 9110 12.5.3).
 */
static bool accepts_gzip(const char *v, size_t n) {
        while (n > 0) {
                const char *comma = memchr(v, ',', n);
                size_t len = comma ? (size_t) (comma - v) : n;
                const char *a = v, *b = v + len, *semi = memchr(v, ';', len), *e;

                e = semi ? semi : b;
                while (a < e && (*a == ' ' || *a == '\t'))
                        a++;
                while (e > a && (e[-1] == ' ' || e[-1] == '\t'))
                        e--;
                if (((size_t) (e - a) == 4 && strncasecmp(a, "gzip", 4) == 0) ||
                    ((size_t) (e - a) == 6 && strncasecmp(a, "x-gzip", 6) == 0) || (e - a == 1 && *a == '*')) {
                        bool zero = false;

                        for (const char *q = semi; q && q + 2 < b; q++)
                                if ((q[0] == 'q' || q[0] == 'Q') && q[1] == '=') {
                                        const char *d = q + 2;

                                        zero = *d == '0';
                                        for (d++; zero && d < b && *d != ' ' && *d != ';'; d++)
                                                zero = *d == '.' || *d == '0';
                                        break;
                                }
                        if (!zero)
                                return true;
                }
                if (!comma)
                        break;
                n -= len + 1;
                v = comma + 1;
        }
        return false;
}

/* "METHOD SP /target SP HTTP/1.x", @n bytes without the line end. */
static int parse_request_line(const char *p, size_t n, HttpRequest *req) {
        const char *end = p + n, *sp1, *sp2, *q;

        sp1 = memchr(p, ' ', n);
        if (!sp1 || sp1 == p)
                return -EBADMSG;
        for (q = p; q < sp1; q++)
                if (!is_tchar((unsigned char) *q))
                        return -EBADMSG;
        if (sp1 - p == 3 && memcmp(p, "GET", 3) == 0)
                req->method = HTTP_METHOD_GET;
        else if (sp1 - p == 4 && memcmp(p, "HEAD", 4) == 0)
                req->method = HTTP_METHOD_HEAD;
        else
                req->method = HTTP_METHOD_OTHER;

        sp2 = memchr(sp1 + 1, ' ', (size_t) (end - sp1 - 1));
        if (!sp2 || sp2 == sp1 + 1 || sp1[1] != '/')
                return -EBADMSG;
        req->path = sp1 + 1;
        req->path_len = 0;
        req->query = NULL;
        for (q = sp1 + 1; q < sp2; q++) {
                if (!is_field_byte((unsigned char) *q) || *q == '\t')
                        return -EBADMSG;
                if ((*q == '?' || *q == '#') && req->path_len == 0) {
                        req->path_len = (size_t) (q - req->path);
                        if (*q == '?')
                                req->query = q + 1;
                }
        }
        if (req->path_len == 0)
                req->path_len = (size_t) (sp2 - req->path);
        if (req->query) {
                const char *hash = memchr(req->query, '#', (size_t) (sp2 - req->query));

                req->query_len = (size_t) ((hash ? hash : sp2) - req->query);
        }

        q = sp2 + 1;
        if (end - q != 8 || memcmp(q, "HTTP/", 5) != 0 || q[6] != '.' || q[5] < '0' || q[5] > '9' ||
            q[7] < '0' || q[7] > '9')
                return -EBADMSG;
        if (q[5] != '1' || q[7] > '1')
                return -EPROTONOSUPPORT;
        req->minor = (unsigned) (q[7] - '0');
        req->keep_alive = req->minor == 1;
        return 0;
}

/* "Name: value", @n bytes without the line end. */
static int parse_header(const char *p, size_t n, HttpRequest *req, bool *seen_length) {
        const char *colon = memchr(p, ':', n), *v, *end = p + n;

        if (!colon || colon == p)
                return -EBADMSG;
        for (const char *q = p; q < colon; q++)
                if (!is_tchar((unsigned char) *q))
                        return -EBADMSG;
        for (v = colon + 1; v < end; v++)
                if (!is_field_byte((unsigned char) *v))
                        return -EBADMSG;
        v = colon + 1;
        while (v < end && (*v == ' ' || *v == '\t'))
                v++;
        while (end > v && (end[-1] == ' ' || end[-1] == '\t'))
                end--;

#define NAME_IS(s) ((size_t) (colon - p) == strlen(s) && strncasecmp(p, s, strlen(s)) == 0)
        if (NAME_IS("Transfer-Encoding"))
                return -EOPNOTSUPP;
        if (NAME_IS("Content-Length")) {
                uint64_t len = 0;

                /* A second one, even equal, is refused: proxies disagree on them. */
                if (*seen_length || v == end)
                        return -EBADMSG;
                *seen_length = true;
                for (const char *q = v; q < end; q++) {
                        if (*q < '0' || *q > '9')
                                return -EBADMSG;
                        if (len > (UINT64_MAX - 9) / 10)
                                return -EFBIG;
                        len = len * 10 + (uint64_t) (*q - '0');
                }
                if (len > SIZE_MAX / 2)
                        return -EFBIG;
                req->body_bytes = (size_t) len;
        } else if (NAME_IS("Accept-Encoding")) {
                /* Repeated: the lists join (RFC 9110 5.3). */
                req->accept_gzip = req->accept_gzip || accepts_gzip(v, (size_t) (end - v));
        } else if (NAME_IS("Connection")) {
                if (list_has_token(v, (size_t) (end - v), "close"))
                        req->keep_alive = false;
                else if (list_has_token(v, (size_t) (end - v), "keep-alive"))
                        req->keep_alive = true;
        }
#undef NAME_IS
        return 0;
}

int http_request_parse(const char *p, size_t n, size_t max_head, size_t max_body, HttpRequest *ret) {
        const char *end = p + (n < max_head ? n : max_head), *line = p;
        HttpRequest req = { .method = _HTTP_METHOD_INVALID };
        bool first = true, seen_length = false;
        int r;

        for (;;) {
                const char *lf = line_end(line, end);
                size_t len;

                if (!lf)
                        /* The head is cut off by what we have, or by the bound. */
                        return n >= max_head ? -EMSGSIZE : 0;
                len = (size_t) (lf - line);
                if (len > 0 && line[len - 1] == '\r')
                        len--;
                if (memchr(line, '\r', len))
                        return -EBADMSG; /* a bare CR inside a line */
                if (first) {
                        /* Leading empty lines before a request are allowed (RFC 9112 2.2). */
                        if (len == 0 && line - p < 8) {
                                line = lf + 1;
                                continue;
                        }
                        r = parse_request_line(line, len, &req);
                        first = false;
                } else if (len == 0)
                        break;
                else if (*line == ' ' || *line == '\t')
                        return -EBADMSG; /* obsolete line folding */
                else
                        r = parse_header(line, len, &req, &seen_length);
                if (r < 0)
                        return r;
                line = lf + 1;
        }
        req.head_bytes = (size_t) (line_end(line, end) + 1 - p);
        if (req.body_bytes > max_body)
                return -EFBIG;
        if (n - req.head_bytes < req.body_bytes)
                return 0;
        if (ret)
                *ret = req;
        return (int) (req.head_bytes + req.body_bytes);
}
