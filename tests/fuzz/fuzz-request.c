/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The socket's request path on arbitrary bytes: the input is a stream of
 * varint-framed bodies fed to request_serve() for one peer, as the
 * connection layer would (the first byte picks root or an unprivileged
 * uid). Whatever the bytes: no crash, no leak, every frame gets exactly
 * one framed response, and once the session ends the tree holds exactly
 * the kept charges: a bad client leaves no trace in the accounting. The
 * input is served twice, through request_serve() alone and with the hand
 * codec first (request_hot_serve(), as conn.c does), and every frame the
 * hand codec served must have been answered byte for byte as
 * request_serve() answered it.
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
#include "base/selfstats.h"
#include "service/service.h"
#include "sock/request-hot.h"
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

/*
 * Serve the frames of @data (after its first byte) for a peer of the uid
 * it picks, into @out, as conn.c would: through the hand codec first when
 * @hot, else through request_serve() alone. @ends[i]: where frame i's
 * response ends in @out; @hot_served[i]: the hand codec served it. Then
 * the session ends and the tree must hold exactly the kept charges.
 * Return: the frames.
 */
static size_t serve_all(const uint8_t *data, size_t size, bool hot, struct evbuffer *out, size_t *ends,
                        bool *hot_served) {
        PeerCreds creds;
        Peer *peer;
        Refusal rf;
        MemGroupInfo root;
        uint64_t kept = 0;
        size_t frames = 0;
        uint64_t clock_nsec = 0; /* chained from frame to frame, as conn.c does */

        creds = (PeerCreds) { .pid = 4242, .uid = data[0] & 1 ? 1000 : 0, .gid = 1000 };
        if (service_peer_new(svc, &creds, NULL, NULL, true, &peer, &rf) < 0)
                abort();

        for (size_t off = 1; off < size;) {
                uint8_t reply[REQUEST_HOT_REPLY_MAX];
                size_t body, prefix, n;
                uint64_t id;
                int r = frame_prefix_decode(data + off, size - off, settings.max_frame, &body,
                                            &prefix);

                if (r == -EAGAIN || (r == 0 && body > size - off - prefix))
                        break; /* a half frame: the connection would wait */
                hot_served[frames] = false;
                frames++;
                if (r < 0) {
                        (void) request_status_append(-EPROTO, "bad frame", out);
                        ends[frames - 1] = evbuffer_get_length(out);
                        break;
                }
                r = hot ? request_hot_serve(svc, peer, data + off + prefix, body, -1, reply, &n, &id, &clock_nsec) : 0;
                if (r != 0) {
                        hot_served[frames - 1] = true;
                        if (evbuffer_add(out, reply, n) < 0)
                                abort();
                } else
                        r = request_serve(svc, peer, data + off + prefix, body, -1, out, NULL);
                ends[frames - 1] = evbuffer_get_length(out);
                if (r < 0)
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
        fuzz_service_reset(svc, &root_limits);
        return frames;
}

/* What the daemon has counted: requests of every op and status on the socket, the request histogram's observations. */
typedef struct Counted {
        uint64_t requests[_SERVICE_OP_MAX][SELF_STATUS_MAX];
        uint64_t observed;
} Counted;

static void counted(Counted *ret) {
        SelfHistogramRead h;

        for (ServiceOp op = 0; op < _SERVICE_OP_MAX; op++)
                for (unsigned st = 0; st < SELF_STATUS_MAX; st++)
                        ret->requests[op][st] = selfstats_requests(SERVICE_TRANSPORT_SOCKET, op, st);
        selfstats_histogram(SELF_HIST_REQUEST_SOCKET, &h);
        ret->observed = 0;
        for (size_t i = 0; i <= SELF_HIST_BOUNDS; i++)
                ret->observed += h.counts[i];
}

/* Did the run from @a0 to @a1 count what the run from @b0 to @b1 counted? */
static bool same_counts(const Counted *a0, const Counted *a1, const Counted *b0, const Counted *b1) {
        for (ServiceOp op = 0; op < _SERVICE_OP_MAX; op++)
                for (unsigned st = 0; st < SELF_STATUS_MAX; st++)
                        if (a1->requests[op][st] - a0->requests[op][st] != b1->requests[op][st] - b0->requests[op][st])
                                return false;
        return a1->observed - a0->observed == b1->observed - b0->observed;
}

/*
 * The input twice: through protobuf-c alone, then as the daemon serves
 * it. Each frame the hand codec served must have been answered with the
 * bytes protobuf-c's way answered it (the state before it is the same:
 * the frames before it were the same requests), and the daemon's
 * request counters must have moved alike.
 */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        struct evbuffer *plain, *hot;
        Counted c0, c1, c2;
        size_t *plain_ends, *hot_ends, n, m;
        bool *served, *unused;
        const uint8_t *p, *q;

        if (size < 1 || size > 256 * 1024)
                return 0;
        plain = evbuffer_new();
        hot = evbuffer_new();
        plain_ends = calloc(size, sizeof(size_t));
        hot_ends = calloc(size, sizeof(size_t));
        served = calloc(size, sizeof(bool));
        unused = calloc(size, sizeof(bool));
        if (!plain || !hot || !plain_ends || !hot_ends || !served || !unused)
                abort();

        counted(&c0);
        n = serve_all(data, size, false, plain, plain_ends, unused);
        counted(&c1);
        m = serve_all(data, size, true, hot, hot_ends, served);
        counted(&c2);
        if (n != m)
                abort();
        /* The hand codec's requests are counted as protobuf-c's are, once each. */
        if (!same_counts(&c0, &c1, &c1, &c2))
                abort();
        p = evbuffer_pullup(plain, -1);
        q = evbuffer_pullup(hot, -1);
        for (size_t i = 0; i < n; i++) {
                size_t a = i ? plain_ends[i - 1] : 0, b = i ? hot_ends[i - 1] : 0;

                if (served[i] && (plain_ends[i] - a != hot_ends[i] - b || memcmp(p + a, q + b, plain_ends[i] - a)))
                        abort();
        }

        evbuffer_free(plain);
        evbuffer_free(hot);
        free(plain_ends);
        free(hot_ends);
        free(served);
        free(unused);
        return 0;
}
