/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * bench-sock's client side of memacctd's protocol and of redis's RESP
 * (bench-sock-proto.c): the requests of a connection's pipeline encoded
 * once, the scan of an answer, and the blocking calls of the setup and
 * the final check. Any function may be called from any thread, but a
 * connection (fd) from one at a time. Each failure the run cannot go on
 * from ends the process through die().
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "memacct.pb-c.h"

/* The bytes of one charge and of one uncharge. */
#define CHARGE_BYTES 4096
/* The max of /bench and /bench/a, and the limit of the Lua charge. */
#define LIMIT_BYTES (UINT64_C(1) << 30)
/* A connection's input buffer. */
#define IN_BUF_SIZE (256 * 1024)
/* The largest memacctd frame accepted. */
#define MAX_FRAME (64 * 1024)

typedef enum System {
        SYS_MEMACCT,
        SYS_REDIS,
        SYS_EVAL,
        SYS_IDLE,
} System;

/* What the load loop reads of a Response; @message points into the frame. */
typedef struct RespFields {
        uint64_t id;
        uint64_t status;
        const uint8_t *message;
        size_t message_len;
} RespFields;

/** die() - print "bench-sock: " and the message to stderr and exit(1). */
void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

/** xmalloc() - malloc() that dies when out of memory. Return: the memory. */
void *xmalloc(size_t n);

/** connect_unix() - a stream connection to the Unix socket @path, whose reads time out after
 * 10 s (EAGAIN), so that a server that stops answering ends the run. Return: the fd. */
int connect_unix(const char *path);

/** write_all() - send all @len bytes of @buf to @fd (no SIGPIPE), or die. */
void write_all(int fd, const void *buf, size_t len);

/** encode_request() - @req as one frame (length prefix and body) into @out, which has room for
 * it. Return: the frame's length. */
size_t encode_request(const Memacct__V1__Request *req, uint8_t *out);

/** response_scan() - fields 1 (id), 2 (status) and 3 (message) of the Response body @p, @len
 * bytes, into @ret; the rest skipped, nothing allocated. Return: false if malformed. */
bool response_scan(const uint8_t *p, size_t len, RespFields *ret);

/** memacct_read_response() - read one whole Response from @fd (blocking) into @buf (IN_BUF_SIZE
 * bytes, *@len of them already read, the rest kept there) and unpack it. Return: the Response,
 * for memacct__v1__response__free_unpacked(). */
Memacct__V1__Response *memacct_read_response(int fd, uint8_t *buf, size_t *len);

/** memacct_hello() - Hello on @fd, or die. */
void memacct_hello(int fd);

/** memacct_create() - CreateGroup @path with max @max (0: none) on @fd, or die. */
void memacct_create(int fd, const char *path, uint64_t max);

/** memacct_attach() - attach @fd's session to @path, or die. */
void memacct_attach(int fd, const char *path);

/** memacct_usage() - the exact usage of @path, read on @fd. Return: bytes, or -1. */
int64_t memacct_usage(int fd, const char *path);

/**
 * memacct_sequence() - the 2 * @depth request frames of a memacctd connection, alternating
 * Charge and Uncharge of CHARGE_BYTES (the same for all connections).
 * @kept: kept charges of /bench/a instead of the session's attached group.
 * @ret_seq: the frames, one after another; @ret_bounds: where frame j starts (the last one the
 * end), both to free().
 */
void memacct_sequence(unsigned depth, bool kept, uint8_t **ret_seq, size_t **ret_bounds);

/** redis_sequence() - the 2 * @depth command frames of redis connection @i for @sys (SYS_REDIS
 * or SYS_EVAL), as memacct_sequence(). */
void redis_sequence(System sys, unsigned depth, unsigned i, uint8_t **ret_seq, size_t **ret_bounds);

/** redis_check() - the sum of |value| over the keys of connections 0 .. @nconns - 1, on @fd.
 * Return: the sum (0 when all are back to 0), or -1 if the check was refused. */
int64_t redis_check(int fd, System sys, unsigned nconns);

/** redis_reset() - SET to 0 the keys of connections 0 .. @nconns - 1, on @fd, or die. */
void redis_reset(int fd, System sys, unsigned nconns);
