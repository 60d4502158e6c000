/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * An HTTP/1.x request as the metrics listener reads it: the request line,
 * the few headers that change the answer (Content-Length, Transfer-Encoding,
 * Connection, Accept-Encoding) and a body that is skipped. Pure parsing over bytes, no I/O.
 */

#include <stdbool.h>
#include <stddef.h>

typedef enum HttpMethod {
        HTTP_METHOD_GET,
        HTTP_METHOD_HEAD,
        HTTP_METHOD_OTHER, /* any other token: answered 405 */
        _HTTP_METHOD_MAX,
        _HTTP_METHOD_INVALID = -22,
} HttpMethod;

typedef struct HttpRequest {
        HttpMethod method;
        const char *path; /* into the parsed bytes, not NUL-terminated: the target up to '?' or '#' */
        size_t path_len;
        const char *query;   /* into the parsed bytes: after '?' up to '#' or the end; NULL: none */
        size_t query_len;
        bool accept_gzip;    /* Accept-Encoding names gzip (or *) with a q above 0 */
        unsigned minor;      /* HTTP/1.<minor>: 0 or 1 */
        bool keep_alive;     /* HTTP/1.1 unless "Connection: close"; 1.0 only with "keep-alive" */
        size_t head_bytes;   /* the request line and headers with the empty line */
        size_t body_bytes;   /* Content-Length */
} HttpRequest;

/**
 * http_request_parse() - parse the request at the start of @p (@n bytes,
 * anything, not NUL-terminated). Lines end in CRLF or LF. Origin-form
 * targets only ("/..."); obsolete line folding, a Transfer-Encoding, a
 * bad or repeated Content-Length and control bytes are refused. Pure; any
 * thread.
 * @max_head: bytes the request line and headers may take
 * @max_body: bytes a Content-Length may announce
 *
 * Return: the bytes the whole request takes (head and body), when all of
 * them are in @p; 0 when more are needed (and may come: @n is below
 * @max_head + @max_body); -EMSGSIZE for a head over @max_head (431),
 * -EFBIG for a body over @max_body (413), -EPROTONOSUPPORT for a version
 * other than HTTP/1.0 and 1.1 (505), -EOPNOTSUPP for a Transfer-Encoding
 * (501), -EBADMSG for anything else malformed (400).
 */
int http_request_parse(const char *p, size_t n, size_t max_head, size_t max_body, HttpRequest *ret);
