/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The metrics listener's request path on arbitrary bytes, without a
 * socket: the input after its first byte is the stream a client sends,
 * cut into requests by http_request_parse() and answered by
 * metrics_respond() or metrics_respond_error() as metrics.c does (the
 * first byte picks the head and body bounds). Whatever the bytes: no
 * crash, no leak, a parse never claims more bytes than it was given or
 * than the bounds allow, every answer is one well-formed HTTP/1.1 status
 * line and head whose Content-Length is the body's (or, for HEAD, what GET
 * would send), 200 only for GET or HEAD /metrics, a gzip body when
 * Accept-Encoding asked for it, a query inside the head, and an error ends
 * the stream.
 */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/core.h"
#include "http/http-request.h"
#include "http/metrics-internal.h"
#include "service/service.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static Service *svc;

/* One service for every run: a small tree, so that a scrape has samples to render. */
static void setup(void) {
        MemCoreConfig cfg = MEM_CORE_CONFIG_DEFAULT;
        ServiceSettings settings = { .max_frame = 4096, .read_access = READ_ACCESS_ALL };
        MemCore *core;
        Refusal rf;

        if (core_new(&cfg, &core) < 0 || core_thread_register(core) < 0 || service_new(core, &settings, &svc) < 0)
                abort();
        refusal_init(&rf);
        for (const char *const *p = (const char *const[]) { "/a", "/a/b", "/we.ird-na_me:x@y", NULL }; *p; p++)
                if (service_create_group(svc, service_daemon_peer(svc), *p, NULL, false, 0, &rf) < 0)
                        abort();
}

/* The head is "HTTP/1.1 NNN ...\r\n...\r\n\r\n"; returns its status and Content-Length. */
static unsigned check_head(const MetricsText *head, size_t *ret_length) {
        char *copy, *cl;
        unsigned status;

        if (head->len < 17 || memcmp(head->p, "HTTP/1.1 ", 9) != 0 ||
            memcmp(head->p + head->len - 4, "\r\n\r\n", 4) != 0)
                abort();
        copy = strndup(head->p, head->len);
        if (!copy || memmem(copy, head->len, "\r\n\r\n", 4) != copy + head->len - 4)
                abort();
        if (sscanf(copy + 9, "%3u", &status) != 1 || status < 200 || status > 599)
                abort();
        cl = strstr(copy, "\r\nContent-Length: ");
        if (!cl || sscanf(cl + 18, "%zu", ret_length) != 1)
                abort();
        free(copy);
        return status;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        size_t max_head, max_body, off = 1;
        unsigned max_groups;

        if (size < 1 || size > 64 * 1024)
                return 0;
        if (!svc)
                setup();
        /* Small bounds too, so that the fuzzer reaches them with short inputs. */
        max_head = data[0] & 1 ? 8192 : 64 + (data[0] >> 1);
        max_body = data[0] & 2 ? 1024 : (size_t) (data[0] >> 4);
        /* A cap below the tree's five groups, at times: the cut walk and its count. */
        max_groups = 1 + ((data[0] >> 2) & 7);

        while (off < size) {
                const char *p = (const char *) data + off;
                size_t n = size - off, length;
                MetricsResponse resp = {};
                HttpRequest req;
                unsigned status;
                int r;

                r = http_request_parse(p, n, max_head, max_body, &req);
                if (r == 0) {
                        /* Waiting is right only while the bounds leave room for more. */
                        if (n >= max_head + max_body)
                                abort();
                        break;
                }
                if (r > 0) {
                        if ((size_t) r > n || req.head_bytes > max_head || req.body_bytes > max_body ||
                            req.head_bytes + req.body_bytes != (size_t) r || req.path < p ||
                            req.path + req.path_len > p + req.head_bytes || req.path[0] != '/' ||
                            req.method < 0 || req.method >= _HTTP_METHOD_MAX ||
                            (req.query && (req.query != req.path + req.path_len + 1 ||
                                           req.query + req.query_len > p + req.head_bytes)))
                                abort();
                        if (metrics_respond(svc, &req, max_groups, size > 0 && data[0] & 1, &resp) < 0)
                                abort();
                } else if (metrics_respond_error(r, &resp) < 0 || !resp.close)
                        abort();

                status = check_head(&resp.head, &length);
                if (r > 0 && req.method == HTTP_METHOD_HEAD) {
                        if (resp.body.len != 0)
                                abort();
                } else if (length != resp.body.len)
                        abort();
                if (status == 200 &&
                    (r <= 0 || req.method == HTTP_METHOD_OTHER || req.path_len != 8 ||
                     memcmp(req.path, "/metrics", 8) != 0))
                        abort();
                /* Gzip: the member's magic bytes (the integration test decodes it). */
                if (status == 200 && req.method == HTTP_METHOD_GET && req.accept_gzip &&
                    (resp.body.len < 18 || memcmp(resp.body.p, "\x1f\x8b", 2) != 0))
                        abort();
                if (status == 200 && req.method == HTTP_METHOD_GET && !req.accept_gzip &&
                    (!memmem(resp.body.p, resp.body.len, "\nmemacct_build_info{", 20) ||
                     resp.body.p[resp.body.len - 1] != '\n'))
                        abort();
                metrics_response_done(&resp);
                if (r < 0 || resp.close)
                        break;
                off += (size_t) r;
        }
        return 0;
}
