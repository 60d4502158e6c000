/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The socket's request path on arbitrary bytes: the input is a stream of
 * varint-framed bodies fed to dispatch_frame() on one connection, as the
 * connection layer would (the first byte picks root or an unprivileged
 * uid). Whatever the bytes: no crash, no leak, every frame gets exactly
 * one framed response, and once the session ends the tree holds exactly
 * the kept charges: a bad client leaves no trace in the accounting.
 */

#include <event2/buffer.h>
#include <stdlib.h>
#include <string.h>

#include "core.h"
#include "request.h"
#include "frame.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

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

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        MemCoreConfig cfg = MEM_CORE_CONFIG_DEFAULT;
        DispatchLimits limits = { .max_frame = 4096, .read_access = READ_ACCESS_ALL };
        struct evbuffer *out;
        DispatchConn *conn;
        Dispatch *d;
        MemCore *core;
        MemGroupInfo root;
        uint64_t kept = 0;
        size_t frames = 0;

        if (size < 1 || size > 256 * 1024)
                return 0;
        cfg.max_groups = 256;
        cfg.max_depth = 8;
        if (core_new(&cfg, &core) < 0 || core_thread_register(core) < 0)
                abort();
        if (dispatch_new(core, &limits, NULL, NULL, &d) < 0)
                abort();
        if (dispatch_conn_new(d, 4242, data[0] & 1 ? 1000 : 0, 1000, NULL, NULL, &conn) < 0)
                abort();
        out = evbuffer_new();

        for (size_t off = 1; off < size;) {
                size_t body, prefix;
                int r = frame_prefix_decode(data + off, size - off, limits.max_frame, &body,
                                            &prefix);

                if (r == -EAGAIN || (r == 0 && body > size - off - prefix))
                        break; /* a half frame: the connection would wait */
                frames++;
                if (r < 0) {
                        dispatch_protocol_error(conn, "bad frame", out);
                        break;
                }
                if (dispatch_frame(conn, data + off + prefix, body, -1, out) < 0)
                        break;
                off += prefix + body;
        }
        if (count_frames(out) != frames)
                abort();
        dispatch_conn_free(conn);

        core_read_lock();
        group_walk(core->root, sum_kept, &kept);
        core_read_unlock();
        group_read(core, core->root, NULL, true, &root);
        if (root.current != kept)
                abort();

        evbuffer_free(out);
        dispatch_free(d);
        core_thread_unregister(core);
        core_free(core);
        return 0;
}
