/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The socket's request path on arbitrary bytes: the input is a stream of
 * varint-framed bodies fed to request_serve() for one peer, as the
 * connection layer would (the first byte picks root or an unprivileged
 * uid). Whatever the bytes: no crash, no leak, every frame gets exactly
 * one framed response, and once the session ends the tree holds exactly
 * the kept charges: a bad client leaves no trace in the accounting.
 *
 * Persistent: the core and service are made once (LLVMFuzzerInitialize)
 * and reset after each input (fuzz-service.h: every group removed, the
 * root then holding nothing, its limits restored).
 */

#include <event2/buffer.h>
#include <stdlib.h>
#include <string.h>

#include "core/core.h"
#include "core/group.h"
#include "frame.h"
#include "fuzz-service.h"
#include "service/service.h"
#include "sock/request.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const ServiceSettings settings = { .max_frame = 4096, .read_access = READ_ACCESS_ALL };
static MemCore *core;
static Service *svc;
static MemLimits root_limits;

static int sum_kept(MemGroup *g, void *userdata) {
        uint64_t *sum = userdata;

        for (int i = 0; i < _MEM_STAT_MAX; i++)
                *sum += (uint64_t) atomic_load(&g->kept[i]);
        return 0;
}

static size_t count_frames(struct evbuffer *out) {
        size_t n = 0, len = evbuffer_get_length(out), off = 0;
        uint8_t *p = evbuffer_pullup(out, -1);

        while (off < len) {
                size_t body, prefix;

                if (frame_prefix_decode(p + off, len - off, UINT32_MAX, &body, &prefix) < 0 ||
                    body > len - off - prefix)
                        abort();
                off += prefix + body;
                n++;
        }
        return n;
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
        MemCoreConfig cfg = MEM_CORE_CONFIG_DEFAULT;

        (void) argc, (void) argv;
        cfg.max_groups = 256;
        cfg.max_depth = 8;
        if (core_new(&cfg, &core) < 0 || core_thread_register(core) < 0)
                abort();
        if (service_new(core, &settings, &svc) < 0)
                abort();
        root_limits = fuzz_root_limits(svc);
        return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        PeerCreds creds;
        struct evbuffer *out;
        Peer *peer;
        Refusal rf;
        MemGroupInfo root;
        uint64_t kept = 0;
        size_t frames = 0;

        if (size < 1 || size > 256 * 1024)
                return 0;
        creds = (PeerCreds) { .pid = 4242, .uid = data[0] & 1 ? 1000 : 0, .gid = 1000 };
        if (service_peer_new(svc, &creds, NULL, NULL, true, &peer, &rf) < 0)
                abort();
        out = evbuffer_new();

        for (size_t off = 1; off < size;) {
                size_t body, prefix;
                int r = frame_prefix_decode(data + off, size - off, settings.max_frame, &body,
                                            &prefix);

                if (r == -EAGAIN || (r == 0 && body > size - off - prefix))
                        break; /* a half frame: the connection would wait */
                frames++;
                if (r < 0) {
                        (void) request_status_append(-EPROTO, "bad frame", out);
                        break;
                }
                if (request_serve(svc, peer, data + off + prefix, body, -1, out, NULL) < 0)
                        break;
                off += prefix + body;
        }
        if (count_frames(out) != frames)
                abort();
        service_peer_free(peer);

        core_read_lock();
        group_walk(core->root, sum_kept, &kept);
        core_read_unlock();
        group_read(core, core->root, NULL, true, &root);
        if (root.current != kept)
                abort();

        evbuffer_free(out);
        fuzz_service_reset(svc, &root_limits);
        return 0;
}
