/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The D-Bus transport's argument handling on arbitrary bytes: the input is
 * a series of method calls, each sent to the daemon's real objects (the
 * manager's vtable, the groups' fallback vtable and enumerator, the
 * ObjectManager) and dispatched by sd-bus as on the bus, so every handler
 * decodes its arguments from a real sd_bus_message and calls the service.
 *
 * No bus daemon: the objects are registered on one end of a socketpair (a
 * peer-to-peer server connection, as --bus-introspect does) and a client
 * connection on the other end sends the calls, each naming a sender
 * itself (sd_bus_message_set_sender(); on a bus only the bus daemon may).
 * Two senders are known peers (root and uid 1000), inserted into the
 * manager's peer tree as the bus daemon's word would have made them; a
 * third is unknown (asking for its credentials fails on a direct
 * connection: the refusal path), and a call may name none.
 *
 * Input: byte 0 picks the read access (all, owner, root); then each call
 * is one byte (bits 0-4: the method, 5-6: the sender, 7: arguments of a
 * signature made from the input instead of the method's), the object's
 * group path for a group's methods, and the arguments, each consumed
 * from the input by its type (see take_*() below).
 *
 * Whatever the bytes: no crash, no leak; every call gets exactly one
 * reply, and a successful reply to arguments of the method's signature
 * has the signature the vtable promises; when the peers are gone their
 * sessions are gone, and once every group is removed the root holds
 * nothing. The core, service and connections are made once
 * (LLVMFuzzerInitialize) and reset after each input: the peers are freed
 * (their sessions end), the groups removed, the root's limits restored.
 */

#include <errno.h>
#include <search.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <systemd/sd-bus.h>
#include <systemd/sd-id128.h>

#include "bus/manager.h"
#include "bus/names.h"
#include "bus/peer.h"
#include "bus/signals.h"
#include "core/core.h"
#include "fuzz-rcu.h"
#include "fuzz-service.h"
#include "macro.h"
#include "base/log.h"
#include "service/service.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_CALLS 64
#define MAX_ARRAY 8
#define MAX_NESTING 4

static const char *const senders[4] = { ":1.1", ":1.2", ":1.9", NULL };
/* The known peers: senders[0] and [1]. */
static const PeerCreds peer_creds[2] = {
        { .pid = 4242, .uid = 0, .gid = (gid_t) -1 },
        { .pid = 4243, .uid = 1000, .gid = (gid_t) -1 },
};

typedef struct Op {
        const char *object; /* NULL: a group's object, its path taken from the input */
        const char *interface;
        const char *member;
        const char *args;   /* the signature of its arguments */
        const char *result; /* the signature of its successful reply */
} Op;

#define MANAGER(member, args, result) { BUS_MANAGER_PATH, BUS_MANAGER_INTERFACE, member, args, result }
#define PROPERTIES "org.freedesktop.DBus.Properties"
#define INTROSPECTABLE "org.freedesktop.DBus.Introspectable"

/* What a call can be: proto/org.memacct1.xml, and the standard interfaces
 * sd-bus serves from the same vtables. A documented table. */
static const Op ops[] = {
        MANAGER("CreateGroup", "sa{st}u", "o"),
        MANAGER("RemoveGroup", "s", ""),
        MANAGER("SetLimits", "sa{st}b", ""),
        MANAGER("Charge", "stsb", "tt"),
        MANAGER("Uncharge", "stsb", ""),
        MANAGER("Attach", "s", "s"),
        MANAGER("GetGroup", "s", "o"),
        MANAGER("ListGroups", "sb", "a(so)"),
        MANAGER("MoveProcess", "us", "u"),
        MANAGER("GetClient", "ub", "a{st}"),
        MANAGER("ResetPeak", "s", ""),
        MANAGER("ImportCgroups", "ss", "uuu"),
        MANAGER("PruneMirrors", "", "asa(ss)"),
        MANAGER("ListPlacementRules", "", "a(ss)"),
        MANAGER("ListAllPlacementRules", "", "a(ssb)"),
        { NULL, PROPERTIES, "Get", "ss", "v" },
        { NULL, PROPERTIES, "GetAll", "s", "a{sv}" },
        { NULL, PROPERTIES, "Set", "ssv", "" },
        { NULL, INTROSPECTABLE, "Introspect", "", "s" },
        { BUS_MANAGER_PATH, "org.freedesktop.DBus.ObjectManager", "GetManagedObjects", "",
          "a{oa{sa{sv}}}" },
        { BUS_GROUP_PREFIX, INTROSPECTABLE, "Introspect", "", "s" },
        { BUS_MANAGER_PATH, INTROSPECTABLE, "Introspect", "", "s" },
        /* Appended: the corpus generator (make-bus-corpus.py) indexes this table. */
        MANAGER("ListGroupsPage", "sbsu", "a(so)sbb"),
        MANAGER("AddRegion", "st", ""),
        MANAGER("RemoveRegion", "s", ""),
        MANAGER("ListRegions", "", "a(stttu)"),
        MANAGER("ChargeRegion", "sstb", "tt"),
        MANAGER("UnchargeRegion", "sstb", ""),
        MANAGER("SetRegionLimits", "ssa{st}", ""),
        MANAGER("ResetRegionPeak", "ss", ""),
        MANAGER("Transfer", "ssst", ""),
        MANAGER("EvictValuable", "sssb", "s"),
        /* 32 in all: a call's bits 0-4 reach each; one more would be unreachable. */
};

/* The pieces a wrong signature is made of. */
static const char *const tokens[] = {
        "s", "o", "t", "u", "b", "i", "y", "a{st}", "a{ss}", "as", "(st)", "v", "a{sv}", "d",
};

/* Variant contents. */
static const char *const variants[] = { "s", "t", "u", "b", "as", "a{st}" };

typedef struct Fuzz {
        MemCore *core;
        Service *svc;
        BusSignals *signals;
        sd_bus *server, *client;
        BusManager manager;
        MemLimits root_limits;
        bool trace; /* $FUZZ_BUS_TRACE: print each call and its reply (writing a corpus) */
} Fuzz;

static Fuzz fz;

/* ---- the input ---- */

typedef struct Input {
        const uint8_t *p;
        size_t n;
} Input;

static uint8_t take_u8(Input *in) {
        if (in->n == 0)
                return 0;
        in->n--;
        return *in->p++;
}

/* A number: one byte, its low 3 bits the count of bytes that follow
 * (little-endian); with none, the byte's high 5 bits are the value;
 * 0xff is UINT64_MAX ("no limit"). Small and huge values stay cheap. */
static uint64_t take_u64(Input *in) {
        uint8_t b = take_u8(in);
        uint64_t v = 0;

        if (b == 0xff)
                return UINT64_MAX;
        if ((b & 7) == 0)
                return b >> 3;
        for (unsigned i = 0; i < (b & 7u); i++)
                v |= (uint64_t) take_u8(in) << (8 * i);
        return v;
}

/* A string: a length byte (255: two more bytes add to it, for paths past
 * the limits), then its bytes; NUL-terminated copy in @buf. */
static const char *take_str(Input *in, char *buf, size_t bufsize) {
        size_t len = take_u8(in);

        if (len == 255)
                len += take_u8(in) | (size_t) take_u8(in) << 8;
        len = MIN(len, MIN(in->n, bufsize - 1));
        memcpy(buf, in->p, len);
        buf[len] = 0;
        in->p += len;
        in->n -= len;
        return buf;
}

/* ---- building the calls ---- */

/* The length of the one complete type at the start of @sig, 0 if none. */
static size_t type_len(const char *sig) {
        size_t n;

        switch (sig[0]) {
        case 'a':
                n = type_len(sig + 1);
                return n ? n + 1 : 0;
        case '(':
        case '{': {
                char close = sig[0] == '(' ? ')' : '}';

                n = 1;
                while (sig[n] && sig[n] != close) {
                        size_t k = type_len(sig + n);

                        if (!k)
                                return 0;
                        n += k;
                }
                return sig[n] ? n + 1 : 0;
        }
        case 0:
        case ')':
        case '}':
                return 0;
        default:
                return 1;
        }
}

static int append_type(sd_bus_message *m, const char *sig, size_t len, Input *in, unsigned depth);

/* Append a value of each complete type in @sig[0, @len). */
static int append_types(sd_bus_message *m, const char *sig, size_t len, Input *in, unsigned depth) {
        for (size_t off = 0; off < len;) {
                size_t k = type_len(sig + off);
                int r;

                if (!k || off + k > len)
                        return -EINVAL;
                r = append_type(m, sig + off, k, in, depth);
                if (r < 0)
                        return r;
                off += k;
        }
        return 0;
}

/* A container of @type with contents @sig[0, @len). */
static int append_container(sd_bus_message *m, char type, const char *sig, size_t len, Input *in,
                            unsigned depth) {
        char contents[64];
        unsigned count = 1;
        int r;

        if (len >= sizeof(contents) || depth >= MAX_NESTING)
                return -EINVAL;
        memcpy(contents, sig, len);
        contents[len] = 0;
        if (type == 'a')
                count = take_u8(in) % (MAX_ARRAY + 1);
        r = sd_bus_message_open_container(m, type, contents);
        for (unsigned i = 0; r >= 0 && i < count; i++)
                r = type == 'a' ? append_type(m, contents, len, in, depth + 1)
                                : append_types(m, contents, len, in, depth + 1);
        if (r < 0)
                return r;
        return sd_bus_message_close_container(m);
}

/* Append one value of the complete type @sig[0, @len), from the input. */
static int append_type(sd_bus_message *m, const char *sig, size_t len, Input *in, unsigned depth) {
        char buf[2 * MEM_PATH_MAX]; /* past the limit: the refusal of a path too long */

        switch (sig[0]) {
        case 's':
        case 'o':
        case 'g':
                return sd_bus_message_append_basic(m, sig[0], take_str(in, buf, sizeof(buf)));
        case 't':
        case 'x':
        case 'd': {
                uint64_t v = take_u64(in);

                return sd_bus_message_append_basic(m, sig[0], &v);
        }
        case 'u':
        case 'i': {
                uint32_t v = (uint32_t) take_u64(in);

                return sd_bus_message_append_basic(m, sig[0], &v);
        }
        case 'b': {
                int v = take_u8(in) & 1;

                return sd_bus_message_append_basic(m, 'b', &v);
        }
        case 'y': {
                uint8_t v = take_u8(in);

                return sd_bus_message_append_basic(m, 'y', &v);
        }
        case 'a':
                return append_container(m, 'a', sig + 1, len - 1, in, depth);
        case '(':
                return append_container(m, 'r', sig + 1, len - 2, in, depth);
        case '{':
                return append_container(m, 'e', sig + 1, len - 2, in, depth);
        case 'v': {
                const char *v = variants[take_u8(in) % ELEMENTSOF(variants)];

                return append_container(m, 'v', v, strlen(v), in, depth);
        }
        default:
                return -EINVAL;
        }
}

/* A wrong signature: up to four tokens, chosen by the input. */
static void take_signature(Input *in, char *sig, size_t size) {
        unsigned n = take_u8(in) % 5;

        sig[0] = 0;
        for (unsigned i = 0; i < n; i++) {
                const char *t = tokens[take_u8(in) % ELEMENTSOF(tokens)];

                if (strlen(sig) + strlen(t) < size)
                        strcat(sig, t);
        }
}

/* ---- sending and the reply ---- */

typedef struct Reply {
        unsigned count;
        bool error;
        char signature[256];
        char text[256]; /* the error, for the trace */
} Reply;

static int on_reply(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        Reply *reply = userdata;

        (void) error;
        reply->count++;
        reply->error = sd_bus_message_is_method_error(msg, NULL);
        if (reply->error)
                snprintf(reply->text, sizeof(reply->text), "%s: %s", sd_bus_message_get_error(msg)->name,
                         sd_bus_message_get_error(msg)->message ? sd_bus_message_get_error(msg)->message : "");
        snprintf(reply->signature, sizeof(reply->signature), "%s", sd_bus_message_get_signature(msg, true));
        return 0;
}

/* Turn both ends until neither has anything to do: a socketpair's writes
 * are complete when they return, so idle means everything sent was read. */
static void pump(void) {
        for (;;) {
                int a = sd_bus_process(fz.server, NULL);
                int b = sd_bus_process(fz.client, NULL);

                if (a < 0 || b < 0) {
                        fprintf(stderr, "sd_bus_process: %s\n", strerror(-(a < 0 ? a : b)));
                        abort();
                }
                if (a == 0 && b == 0)
                        return;
        }
}

/* One call from the input; false when it is used up. */
static bool call(Input *in) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *m = NULL;
        _cleanup_free_ char *object = NULL;
        char sig[64], path[2 * MEM_PATH_MAX];
        uint8_t b;
        const Op *op;
        const char *sender;
        Reply reply = {};
        int r;

        if (in->n == 0)
                return false;
        b = take_u8(in);
        op = &ops[(b & 31) % ELEMENTSOF(ops)];
        sender = senders[(b >> 5) & 3];
        if (op->object) {
                object = strdup(op->object);
                if (!object)
                        abort();
        } else if (sd_bus_path_encode(BUS_GROUP_PREFIX, take_str(in, path, sizeof(path)), &object) < 0)
                abort();
        if (b & 0x80)
                take_signature(in, sig, sizeof(sig));
        else
                snprintf(sig, sizeof(sig), "%s", op->args);

        r = sd_bus_message_new_method_call(fz.client, &m, BUS_NAME, object, op->interface, op->member);
        if (r < 0)
                abort();
        if (sender && sd_bus_message_set_sender(m, sender) < 0)
                abort();
        /* Arguments sd-bus will not send (a string that is not UTF-8, an
         * object path that is not one) never reach the daemon: skip. */
        if (append_types(m, sig, strlen(sig), in, 0) < 0)
                return true;
        r = sd_bus_call_async(fz.client, NULL, m, on_reply, &reply, 0);
        if (r < 0)
                abort();
        pump();
        if (fz.trace)
                fprintf(stderr, "%s %s %s.%s(%s) -> %s\n", sender ? sender : "-", object, op->interface,
                        op->member, sig, reply.error ? reply.text : reply.signature);
        if (reply.count != 1) {
                fprintf(stderr, "%s.%s(%s): %u replies\n", op->interface, op->member, sig, reply.count);
                abort();
        }
        if (!reply.error && strcmp(sig, op->args) == 0 && strcmp(reply.signature, op->result) != 0) {
                fprintf(stderr, "%s.%s(%s) replied '%s', not '%s'\n", op->interface, op->member, sig,
                        reply.signature, op->result);
                abort();
        }
        /* What the bus thread does when the events' eventfd wakes it. */
        (void) bus_manager_flush(&fz.manager);
        pump();
        return true;
}

/* ---- the state kept across inputs ---- */

static int peer_compare(const void *a, const void *b) {
        return strcmp(((const BusPeer *) a)->name, ((const BusPeer *) b)->name);
}

/* The known senders, as bus_peer_get() would have made them from the
 * bus daemon's answer; the tree's order is peer.c's (strcmp of names). */
static void peers_add(void) {
        for (unsigned i = 0; i < ELEMENTSOF(peer_creds); i++) {
                BusPeer *p = calloc(1, sizeof(*p));
                Refusal rf;

                if (!p || !(p->name = strdup(senders[i])))
                        abort();
                refusal_init(&rf);
                if (service_peer_new(fz.svc, &peer_creds[i], NULL, NULL, false, &p->peer, &rf) < 0)
                        abort();
                if (!tsearch(p, &fz.manager.peers, peer_compare))
                        abort();
        }
}

/*
 * After fuzz_service_reset(): release the root's kept charges in each
 * device region (its groups' went with them), then remove every region,
 * so that each input starts with memory alone and the inputs never use
 * up the MEM_REGION_MAX slots between them. A region that cannot be
 * removed then still holds a charge nobody has: abort().
 */
static void regions_reset(void) {
        Peer *daemon = service_daemon_peer(fz.svc);
        MemGroupInfo root = fuzz_root_info(fz.svc);
        MemRegionDesc regions[MEM_REGION_MAX];
        Refusal rf;
        int n;

        refusal_init(&rf);
        for (unsigned i = 0; i < root.nr_regions; i++) {
                ServiceCharge c = { .path = "/", .bytes = root.regions[i].kept, .has_bytes = true,
                                    .keep = true, .region = root.regions[i].name };

                if (c.bytes > 0 && service_uncharge(fz.svc, daemon, &c, &rf) < 0) {
                        fprintf(stderr, "cannot release the root's kept %s: %s\n", c.region, rf.message);
                        abort();
                }
        }
        n = service_list_regions(fz.svc, daemon, regions, ELEMENTSOF(regions), &rf);
        if (n < 1)
                abort();
        /* regions[0] is memory, built in. */
        for (int i = 1; i < n; i++)
                if (service_remove_region(fz.svc, daemon, regions[i].name, &rf) < 0) {
                        fprintf(stderr, "cannot remove region %s: %s\n", regions[i].name, rf.message);
                        abort();
                }
        urcu_memb_barrier();
}

/* Undo what an input did: the peers leave (their sessions end), then
 * fuzz_service_reset() and regions_reset(); the signals of it all are
 * dropped. */
static void reset(void) {
        bus_peers_free(&fz.manager);
        fuzz_service_reset(fz.svc, &fz.root_limits);
        regions_reset();
        (void) bus_signals_flush(fz.signals, fz.server, false);
        pump();
        peers_add();
}

static void bus_pair(void) {
        sd_id128_t id;
        int fds[2];

        if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, fds) < 0)
                abort();
        if (sd_bus_new(&fz.server) < 0 || sd_bus_new(&fz.client) < 0 ||
            sd_bus_set_fd(fz.server, fds[0], fds[0]) < 0 || sd_bus_set_fd(fz.client, fds[1], fds[1]) < 0 ||
            sd_id128_randomize(&id) < 0 || sd_bus_set_server(fz.server, 1, id) < 0 ||
            sd_bus_start(fz.server) < 0 || sd_bus_start(fz.client) < 0)
                abort();
        /* The authentication: done when both are idle. */
        pump();
        if (sd_bus_is_ready(fz.client) <= 0 || sd_bus_is_ready(fz.server) <= 0)
                abort();
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
        MemCoreConfig cfg = MEM_CORE_CONFIG_DEFAULT;
        ServiceSettings settings = { .max_frame = 4096, .read_access = READ_ACCESS_ALL };
        (void) argc, (void) argv;
        fz.trace = getenv("FUZZ_BUS_TRACE");
        log_set_max_level(LOG_CRIT);
        cfg.max_groups = 256;
        cfg.max_depth = 8;
        if (core_new(&cfg, &fz.core) < 0 || service_new(fz.core, &settings, &fz.svc) < 0 ||
            service_thread_register(fz.svc) < 0 || bus_signals_new(&fz.signals) < 0)
                abort();
        events_set_sink(service_events(fz.svc), bus_signals_sink, fz.signals);
        bus_pair();
        fz.manager = (BusManager) { .bus = fz.server, .service = fz.svc, .signals = fz.signals };
        if (bus_manager_register(&fz.manager) < 0)
                abort();
        fz.root_limits = fuzz_root_limits(fz.svc);
        peers_add();
        return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        static const ReadAccess access[] = { READ_ACCESS_ALL, READ_ACCESS_OWNER, READ_ACCESS_ROOT };
        ServiceSettings settings;
        Input in = { data, size };

        if (size < 1 || size > 64 * 1024)
                return 0;
        settings = service_settings(fz.svc);
        settings.read_access = access[take_u8(&in) % ELEMENTSOF(access)];
        service_set_settings(fz.svc, &settings);

        for (unsigned i = 0; i < MAX_CALLS && call(&in); i++)
                ;
        reset();
        return 0;
}
