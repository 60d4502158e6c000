/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * bench-sock's client side of the two protocols (bench-sock-proto.h):
 * memacctd's frames, encoded once with protobuf-c and answered through a
 * scanner of the three Response fields the load loop needs, and the
 * blocking setup calls (Hello, CreateGroup, Attach, GetGroup); redis's
 * RESP commands, the Lua scripts of the checked charge and uncharge, and
 * the setup and final check of the keys. Nothing here measures: that is
 * bench-sock.c. A failure the benchmark cannot go on from ends the
 * process (die()); a refused request in the load is the caller's to count.
 */

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include "bench-sock-proto.h"
#include "frame.h"
#include "memacct.pb-c.h"

void die(const char *fmt, ...) {
        va_list ap;

        fputs("bench-sock: ", stderr);
        va_start(ap, fmt);
        vfprintf(stderr, fmt, ap);
        va_end(ap);
        fputc('\n', stderr);
        exit(1);
}

void *xmalloc(size_t n) {
        void *p = malloc(n);

        if (!p)
                die("out of memory");
        return p;
}

int connect_unix(const char *path) {
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        int fd;

        if (strlen(path) >= sizeof(sa.sun_path))
                die("socket path too long: %s", path);
        strcpy(sa.sun_path, path);
        fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0)
                die("socket(): %m");
        if (connect(fd, (struct sockaddr *) &sa, sizeof(sa)) < 0)
                die("connect(%s): %m", path);
        /* A server that stops answering ends the run instead of hanging it. */
        if (setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &(struct timeval) { .tv_sec = 10 },
                       sizeof(struct timeval)) < 0)
                die("SO_RCVTIMEO: %m");
        return fd;
}

void write_all(int fd, const void *buf, size_t len) {
        const uint8_t *p = buf;

        while (len > 0) {
                ssize_t n = send(fd, p, len, MSG_NOSIGNAL);

                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        die("write: %m");
                }
                p += n;
                len -= (size_t) n;
        }
}

/* ---- memacctd: encoding and a minimal Response scanner ---- */

size_t encode_request(const Memacct__V1__Request *req, uint8_t *out) {
        size_t len = memacct__v1__request__get_packed_size(req);
        size_t n = frame_prefix_encode((uint32_t) len, out);

        memacct__v1__request__pack(req, out + n);
        return n + len;
}

static bool varint_read(const uint8_t **p, const uint8_t *end, uint64_t *ret) {
        uint64_t v = 0;

        for (unsigned shift = 0; shift < 64 && *p < end; shift += 7) {
                uint8_t b = *(*p)++;

                v |= (uint64_t) (b & 0x7f) << shift;
                if (!(b & 0x80)) {
                        *ret = v;
                        return true;
                }
        }
        return false;
}

/* Fields 1 (id), 2 (status) and 3 (message) of a Response; the rest skipped. */
bool response_scan(const uint8_t *p, size_t len, RespFields *ret) {
        const uint8_t *end = p + len;

        *ret = (RespFields) {};
        while (p < end) {
                uint64_t key, v;

                if (!varint_read(&p, end, &key))
                        return false;
                switch (key & 7) {
                case 0:
                        if (!varint_read(&p, end, &v))
                                return false;
                        if (key >> 3 == 1)
                                ret->id = v;
                        else if (key >> 3 == 2)
                                ret->status = v;
                        break;
                case 1:
                        if (end - p < 8)
                                return false;
                        p += 8;
                        break;
                case 2:
                        if (!varint_read(&p, end, &v) || v > (uint64_t) (end - p))
                                return false;
                        if (key >> 3 == 3) {
                                ret->message = p;
                                ret->message_len = (size_t) v;
                        }
                        p += v;
                        break;
                case 5:
                        if (end - p < 4)
                                return false;
                        p += 4;
                        break;
                default:
                        return false;
                }
        }
        return true;
}

/* Read one whole Response (blocking) and unpack it; for the setup steps. */
Memacct__V1__Response *memacct_read_response(int fd, uint8_t *buf, size_t *len) {
        for (;;) {
                size_t body, prefix;
                int r = *len > 0 ? frame_prefix_decode(buf, *len, MAX_FRAME, &body, &prefix) : -EAGAIN;

                if (r == 0 && *len - prefix >= body) {
                        Memacct__V1__Response *resp =
                                memacct__v1__response__unpack(NULL, body, buf + prefix);

                        if (!resp)
                                die("malformed response");
                        memmove(buf, buf + prefix + body, *len - prefix - body);
                        *len -= prefix + body;
                        return resp;
                }
                if (r < 0 && r != -EAGAIN)
                        die("bad frame from the server");
                ssize_t n = read(fd, buf + *len, IN_BUF_SIZE - *len);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n <= 0)
                        die("server closed the connection during setup");
                *len += (size_t) n;
        }
}

/* Send @req and wait for its answer; Return: its status. */
static int memacct_call(int fd, Memacct__V1__Request *req, Memacct__V1__Response **ret) {
        static uint64_t next_id = 1000;
        uint8_t out[4096];
        static uint8_t buf[IN_BUF_SIZE];
        static size_t len;
        Memacct__V1__Response *resp;
        int status;

        req->has_id = true;
        req->id = next_id++;
        write_all(fd, out, encode_request(req, out));
        do {
                resp = memacct_read_response(fd, buf, &len);
                if (resp->id == req->id)
                        break;
                memacct__v1__response__free_unpacked(resp, NULL);
        } while (true);
        /* One request at a time during setup: nothing else is pending. */
        len = 0;
        status = resp->has_status ? (int) resp->status : 0;
        if (status != 0 && status != MEMACCT__V1__STATUS__STATUS_EXISTS)
                fprintf(stderr, "bench-sock: request failed: status %d: %s\n", status,
                        resp->message ? resp->message : "");
        if (ret)
                *ret = resp;
        else
                memacct__v1__response__free_unpacked(resp, NULL);
        return status;
}

void memacct_hello(int fd) {
        Memacct__V1__Request req = MEMACCT__V1__REQUEST__INIT;
        Memacct__V1__Hello h = MEMACCT__V1__HELLO__INIT;

        h.has_version = true;
        h.version = 1;
        h.agent = (char *) "bench-sock";
        req.op_case = MEMACCT__V1__REQUEST__OP_HELLO;
        req.hello = &h;
        if (memacct_call(fd, &req, NULL) != 0)
                die("Hello refused");
}

void memacct_create(int fd, const char *path, uint64_t max) {
        Memacct__V1__Request req = MEMACCT__V1__REQUEST__INIT;
        Memacct__V1__CreateGroup cg = MEMACCT__V1__CREATE_GROUP__INIT;
        Memacct__V1__Limits l = MEMACCT__V1__LIMITS__INIT;
        int status;

        cg.path = (char *) path;
        if (max) {
                l.has_max = true;
                l.max = max;
                cg.limits = &l;
        }
        req.op_case = MEMACCT__V1__REQUEST__OP_CREATE_GROUP;
        req.create_group = &cg;
        status = memacct_call(fd, &req, NULL);
        if (status != 0 && status != MEMACCT__V1__STATUS__STATUS_EXISTS)
                die("CreateGroup %s: status %d", path, status);
}

void memacct_attach(int fd, const char *path) {
        Memacct__V1__Request req = MEMACCT__V1__REQUEST__INIT;
        Memacct__V1__Attach a = MEMACCT__V1__ATTACH__INIT;

        a.path = (char *) path;
        req.op_case = MEMACCT__V1__REQUEST__OP_ATTACH;
        req.attach = &a;
        if (memacct_call(fd, &req, NULL) != 0)
                die("Attach %s refused", path);
}

/* The usage of @path (exact), or -1. */
int64_t memacct_usage(int fd, const char *path) {
        Memacct__V1__Request req = MEMACCT__V1__REQUEST__INIT;
        Memacct__V1__GetGroup gg = MEMACCT__V1__GET_GROUP__INIT;
        Memacct__V1__Response *resp;
        int64_t v = -1;

        gg.path = (char *) path;
        gg.has_exact = true;
        gg.exact = true;
        req.op_case = MEMACCT__V1__REQUEST__OP_GET_GROUP;
        req.get_group = &gg;
        if (memacct_call(fd, &req, &resp) == 0 && resp->result_case == MEMACCT__V1__RESPONSE__RESULT_GROUP)
                v = (int64_t) resp->group->current;
        memacct__v1__response__free_unpacked(resp, NULL);
        return v;
}

/* The 2 * depth request frames of a memacctd connection (the same for all). */
void memacct_sequence(unsigned depth, bool kept, uint8_t **ret_seq, size_t **ret_bounds) {
        unsigned n = 2 * depth;
        uint8_t *seq = xmalloc((size_t) n * 48);
        size_t *bounds = xmalloc((n + 1) * sizeof(size_t));
        size_t off = 0;

        for (unsigned j = 0; j < n; j++) {
                Memacct__V1__Request req = MEMACCT__V1__REQUEST__INIT;
                Memacct__V1__Charge c = MEMACCT__V1__CHARGE__INIT;
                Memacct__V1__Uncharge u = MEMACCT__V1__UNCHARGE__INIT;

                req.has_id = true;
                req.id = j + 1;
                if (j % 2 == 0) {
                        c.has_bytes = true;
                        c.bytes = CHARGE_BYTES;
                        if (kept) {
                                c.path = (char *) "/bench/a";
                                c.has_keep = c.keep = true;
                        }
                        req.op_case = MEMACCT__V1__REQUEST__OP_CHARGE;
                        req.charge = &c;
                } else {
                        u.has_bytes = true;
                        u.bytes = CHARGE_BYTES;
                        if (kept) {
                                u.path = (char *) "/bench/a";
                                u.has_keep = u.keep = true;
                        }
                        req.op_case = MEMACCT__V1__REQUEST__OP_UNCHARGE;
                        req.uncharge = &u;
                }
                bounds[j] = off;
                off += encode_request(&req, seq + off);
        }
        bounds[n] = off;
        *ret_seq = seq;
        *ret_bounds = bounds;
}

/* ---- redis: RESP ---- */

static size_t resp_command(uint8_t *out, unsigned argc, const char *const *argv) {
        size_t n = (size_t) sprintf((char *) out, "*%u\r\n", argc);

        for (unsigned i = 0; i < argc; i++)
                n += (size_t) sprintf((char *) out + n, "$%zu\r\n%s\r\n", strlen(argv[i]), argv[i]);
        return n;
}

static const char lua_charge[] =
        "local n = tonumber(ARGV[1]) "
        "for i = 1, #KEYS do "
        "if redis.call('INCRBY', KEYS[i], n) > tonumber(ARGV[2]) then "
        "for j = 1, i do redis.call('DECRBY', KEYS[j], n) end "
        "return redis.error_reply('LIMIT_EXCEEDED ' .. KEYS[i]) "
        "end "
        "end "
        "return 0";

static const char lua_uncharge[] =
        "local n = tonumber(ARGV[1]) "
        "if tonumber(redis.call('GET', KEYS[1]) or '0') < n then "
        "return redis.error_reply('UNDERFLOW ' .. KEYS[1]) "
        "end "
        "for i = 1, #KEYS do redis.call('DECRBY', KEYS[i], n) end "
        "return 0";

/* The sum of the absolute values of the keys: 0 when all are back to 0. */
static const char lua_check[] =
        "local s = 0 "
        "for i = 1, #KEYS do s = s + math.abs(tonumber(redis.call('GET', KEYS[i]) or '0')) end "
        "return s";

static void redis_keys(System sys, unsigned i, char keys[3][48]) {
        if (sys == SYS_REDIS) {
                snprintf(keys[0], 48, "bench:k:%u", i);
                keys[1][0] = keys[2][0] = 0;
        } else {
                snprintf(keys[0], 48, "bench:a:c%u", i); /* the leaf first: the uncharge checks it */
                snprintf(keys[1], 48, "bench:a");
                snprintf(keys[2], 48, "bench");
        }
}

void redis_sequence(System sys, unsigned depth, unsigned i, uint8_t **ret_seq, size_t **ret_bounds) {
        unsigned n = 2 * depth;
        char keys[3][48], bytes[24], limit[24];
        size_t one = 512 + sizeof(lua_charge) + sizeof(lua_uncharge);
        uint8_t *seq = xmalloc((size_t) n * one);
        size_t *bounds = xmalloc((n + 1) * sizeof(size_t));
        size_t off = 0;

        redis_keys(sys, i, keys);
        snprintf(bytes, sizeof(bytes), "%u", CHARGE_BYTES);
        snprintf(limit, sizeof(limit), "%" PRIu64, LIMIT_BYTES);
        for (unsigned j = 0; j < n; j++) {
                bounds[j] = off;
                if (sys == SYS_REDIS) {
                        const char *argv[] = { j % 2 == 0 ? "INCRBY" : "DECRBY", keys[0], bytes };

                        off += resp_command(seq + off, 3, argv);
                } else {
                        const char *argv[] = { "EVAL", j % 2 == 0 ? lua_charge : lua_uncharge, "3",
                                               keys[0], keys[1], keys[2], bytes, limit };

                        off += resp_command(seq + off, 8, argv);
                }
        }
        bounds[n] = off;
        *ret_seq = seq;
        *ret_bounds = bounds;
}

/* Send one command, read one single-line reply (blocking) into @line. */
static void redis_call(int fd, unsigned argc, const char *const *argv, char *line, size_t size) {
        size_t cap = 64 * 1024, len = 0;
        uint8_t *out = xmalloc(cap);
        size_t n = 0;

        for (unsigned i = 0; i < argc; i++)
                n += strlen(argv[i]) + 32;
        if (n + 32 > cap)
                die("redis command too long");
        write_all(fd, out, resp_command(out, argc, argv));
        free(out);
        while (len + 1 < size) {
                ssize_t k = read(fd, line + len, 1);

                if (k < 0 && errno == EINTR)
                        continue;
                if (k <= 0)
                        die("redis closed the connection");
                len++;
                if (len >= 2 && line[len - 2] == '\r' && line[len - 1] == '\n') {
                        line[len - 2] = 0;
                        return;
                }
        }
        die("redis reply too long");
}

/* The sum of |value| over the keys of connections 0 .. nconns-1. */
int64_t redis_check(int fd, System sys, unsigned nconns) {
        unsigned nkeys = 0;
        const char **argv = xmalloc((3 + (size_t) nconns * 3 + 2) * sizeof(char *));
        char (*keys)[3][48] = xmalloc((size_t) nconns * sizeof(*keys));
        char nk[16], line[256];

        argv[0] = "EVAL";
        argv[1] = lua_check;
        for (unsigned i = 0; i < nconns; i++) {
                redis_keys(sys, i, keys[i]);
                for (unsigned k = 0; k < 3; k++) {
                        /* bench and bench:a once. */
                        if (!keys[i][k][0] || (i > 0 && k > 0))
                                continue;
                        argv[3 + nkeys++] = keys[i][k];
                }
        }
        snprintf(nk, sizeof(nk), "%u", nkeys);
        argv[2] = nk;
        redis_call(fd, 3 + nkeys, argv, line, sizeof(line));
        free(argv);
        free(keys);
        if (line[0] != ':') {
                fprintf(stderr, "bench-sock: redis check failed: %s\n", line);
                return -1;
        }
        return strtoll(line + 1, NULL, 10);
}

void redis_reset(int fd, System sys, unsigned nconns) {
        char keys[3][48], line[256];

        for (unsigned i = 0; i < nconns; i++) {
                redis_keys(sys, i, keys);
                for (unsigned k = 0; k < 3; k++) {
                        const char *argv[] = { "SET", keys[k], "0" };

                        if (!keys[k][0] || (i > 0 && k > 0))
                                continue;
                        redis_call(fd, 3, argv, line, sizeof(line));
                        if (strcmp(line, "+OK") != 0)
                                die("redis SET: %s", line);
                }
        }
}
