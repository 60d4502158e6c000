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
 * the stream. The tree has device regions, limited and charged: a plain
 * 200 has each region's daemon-wide series, and the root's region series
 * whenever the root is exported, each region family once.
 */

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/core.h"
#include "http/http-request.h"
#include "http/metrics-internal.h"
#include "service/service.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static Service *svc;

#define VRAM "drm/0000:03:00.0/vram0"
#define GPU "gpu0"

/* A kept charge in @region; @refused: the charge must be refused (a failcnt and a max event). */
static void charge_region(const char *path, const char *region, uint64_t bytes, bool refused) {
        ServiceCharge c = { .path = path, .bytes = bytes, .has_bytes = true, .keep = true, .region = region };
        ServiceChargeResult res;
        Refusal rf;

        refusal_init(&rf);
        if ((service_charge(svc, service_daemon_peer(svc), &c, &res, &rf) == -EDQUOT) != refused)
                abort();
}

/*
 * One service for every run: a small tree, so that a scrape has samples
 * to render, with two device regions: /a limited in VRAM and /a/b
 * charged there (and refused once), the oddly named group charged in GPU.
 */
static void setup(void) {
        MemCoreConfig cfg = MEM_CORE_CONFIG_DEFAULT;
        ServiceSettings settings = { .max_frame = 4096, .read_access = READ_ACCESS_ALL };
        MemLimits l = { .set = MEM_LIMIT_MAX | MEM_LIMIT_LOW, .max = 1 << 20, .low = 1 << 16 };
        MemCore *core;
        Refusal rf;

        if (core_new(&cfg, &core) < 0 || core_thread_register(core) < 0 || service_new(core, &settings, &svc) < 0)
                abort();
        refusal_init(&rf);
        for (const char *const *p = (const char *const[]) { "/a", "/a/b", "/we.ird-na_me:x@y", NULL }; *p; p++)
                if (service_create_group(svc, service_daemon_peer(svc), *p, NULL, false, 0, &rf) < 0)
                        abort();
        if (service_add_region(svc, service_daemon_peer(svc), VRAM, (uint64_t) 1 << 30, &rf) < 0 ||
            service_add_region(svc, service_daemon_peer(svc), GPU, UINT64_MAX, &rf) < 0 ||
            service_set_region_limits(svc, service_daemon_peer(svc), "/a", VRAM, &l, false, &rf) < 0)
                abort();
        charge_region("/a/b", VRAM, 1 << 16, false);
        charge_region("/a/b", VRAM, 2 << 20, true);
        charge_region("/we.ird-na_me:x@y", GPU, 4096, false);
}

/* The region part of a plain 200 body of @n bytes: see the file's comment. */
static void check_regions(const char *body, size_t n) {
        static const char *const families[] = {
                "memacct_group_region_usage_bytes", "memacct_group_region_max_bytes",
                "memacct_group_region_events_local_total", "memacct_region_capacity_bytes",
        };
        static const char root_usage[] = "\nmemacct_group_usage_bytes{group=\"/\"} ";
        static const char root_vram[] = "\nmemacct_group_region_usage_bytes{group=\"/\",region=\"" VRAM "\"} ";
        static const char gpu_capacity[] = "\nmemacct_region_capacity_bytes{region=\"" GPU "\"} +Inf\n";

        if (!memmem(body, n, gpu_capacity, strlen(gpu_capacity)))
                abort();
        if (!memmem(body, n, root_usage, strlen(root_usage)) != !memmem(body, n, root_vram, strlen(root_vram)))
                abort();
        for (size_t i = 0; i < sizeof(families) / sizeof(families[0]); i++) {
                char type[128];
                const char *p;

                snprintf(type, sizeof(type), "# TYPE %s ", families[i]);
                p = memmem(body, n, type, strlen(type));
                if (p && memmem(p + 1, n - (size_t) (p + 1 - body), type, strlen(type)))
                        abort();
        }
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
                if (status == 200 && req.method == HTTP_METHOD_GET && !req.accept_gzip)
                        check_regions(resp.body.p, resp.body.len);
                metrics_response_done(&resp);
                if (r < 0 || resp.close)
                        break;
                off += (size_t) r;
        }
        return 0;
}
