/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The hand codec (daemon/sock/wire-hot.c) against protobuf-c, on
 * arbitrary bytes, both ways:
 *
 * - decoding: the input is a Request body. When wire_hot_decode()
 *   takes it, protobuf-c's unpack must take it too, with no unknown
 *   field, the same op, id and fields (NULL strings where the hand
 *   decoder has none, the same bytes where it has one), and request.c's
 *   string check must find no NUL in it; when it declines, nothing is
 *   claimed (protobuf-c decides).
 * - encoding: the input, read as reply values (id, status, the four
 *   ChargeReply fields, which parts are present, and the rest as the
 *   message and refused_path strings), gives a Response that
 *   wire_hot_reply_frame() must encode to exactly the bytes of
 *   frame_prefix_encode() and memacct__v1__response__pack(), and that
 *   does not fit one byte short.
 *
 * Any difference abort()s.
 */

#include <stdlib.h>
#include <string.h>

#include "frame.h"
#include "memacct.pb-c.h"
#include "sock/wire-hot.h"
#include "sock/wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(bool ok) {
        if (!ok)
                abort();
}

/* A protobuf-c string and the hand decoder's (present: @has) are the same. */
static void check_string(const char *pb, bool has, const char *hot) {
        check((pb != NULL) == has);
        check(!pb || strcmp(pb, hot) == 0);
}

static void check_decode(const uint8_t *data, size_t size) {
        WireHotRequest hot;
        Memacct__V1__Request *req;
        char field[128];

        if (wire_hot_decode(data, size, &hot) <= 0)
                return;
        req = memacct__v1__request__unpack(NULL, size, data);
        check(req);
        check(req->base.n_unknown_fields == 0);
        check(req->id == hot.id);
        if (hot.op == WIRE_HOT_CHARGE) {
                const Memacct__V1__Charge *m = req->charge;

                check(req->op_case == MEMACCT__V1__REQUEST__OP_CHARGE && m);
                check(m->base.n_unknown_fields == 0);
                check_string(m->path, hot.has_path, hot.path);
                check_string(m->stat, hot.has_stat, hot.stat);
                check_string(m->region, hot.has_region, hot.region);
                check(m->has_bytes == hot.has_bytes && m->bytes == hot.bytes);
                check(!!m->keep == hot.keep && !!m->force == hot.force && !!m->stock == hot.stock);
        } else {
                const Memacct__V1__Uncharge *m = req->uncharge;

                check(hot.op == WIRE_HOT_UNCHARGE);
                check(req->op_case == MEMACCT__V1__REQUEST__OP_UNCHARGE && m);
                check(m->base.n_unknown_fields == 0);
                check_string(m->path, hot.has_path, hot.path);
                check_string(m->stat, hot.has_stat, hot.stat);
                check_string(m->region, hot.has_region, hot.region);
                check(m->has_bytes == hot.has_bytes && m->bytes == hot.bytes);
                check(!!m->keep == hot.keep && !hot.force && !hot.stock);
        }
        /* request_serve() would find no string to refuse. */
        check(wire_find_nul_string(&memacct__v1__request__descriptor, data, size, field, sizeof(field)) == 0);
        memacct__v1__request__free_unpacked(req, NULL);
}

static uint64_t take_u64(const uint8_t **p, size_t *n) {
        uint64_t v = 0;
        size_t k = *n < 8 ? *n : 8;

        memcpy(&v, *p, k);
        *p += k;
        *n -= k;
        return v;
}

static void check_encode(const uint8_t *data, size_t size) {
        Memacct__V1__Response resp = MEMACCT__V1__RESPONSE__INIT;
        Memacct__V1__ChargeReply cr = MEMACCT__V1__CHARGE_REPLY__INIT;
        WireHotReply hot = {};
        uint8_t flags, *want, *got;
        size_t body, len, n, split;
        char *strings;

        if (size < 1)
                return;
        flags = data[0];
        data++, size--;
        hot.id = take_u64(&data, &size);
        hot.status = (int32_t) (uint32_t) take_u64(&data, &size);
        hot.over_high = take_u64(&data, &size);
        hot.throttle_usec = take_u64(&data, &size);
        hot.margin = take_u64(&data, &size);
        hot.over_max = flags & 1;
        hot.charge = flags & 2;

        /* The rest: message, a NUL, refused_path (C strings end at a NUL anyway). */
        strings = malloc(size + 2);
        check(strings);
        memcpy(strings, data, size);
        strings[size] = strings[size + 1] = 0;
        split = strlen(strings);
        if (flags & 4)
                hot.message = strings;
        if (flags & 8)
                hot.refused_path = strings + split + (split < size ? 1 : 0);

        resp.has_id = resp.has_status = true;
        resp.id = hot.id;
        resp.status = (Memacct__V1__Status) hot.status;
        resp.message = (char *) hot.message;
        resp.refused_path = (char *) hot.refused_path;
        if (hot.charge) {
                cr.has_over_high = cr.has_throttle_usec = cr.has_over_max = cr.has_margin = true;
                cr.over_high = hot.over_high;
                cr.throttle_usec = hot.throttle_usec;
                cr.over_max = hot.over_max;
                cr.margin = hot.margin;
                resp.result_case = MEMACCT__V1__RESPONSE__RESULT_CHARGE;
                resp.charge = &cr;
        }
        body = memacct__v1__response__get_packed_size(&resp);
        want = malloc(FRAME_PREFIX_MAX + body);
        got = malloc(FRAME_PREFIX_MAX + body);
        check(want && got);
        n = frame_prefix_encode((uint32_t) body, want);
        check(memacct__v1__response__pack(&resp, want + n) == body);
        len = wire_hot_reply_frame(&hot, got, FRAME_PREFIX_MAX + body);
        check(len == n + body && memcmp(got, want, len) == 0);
        check(wire_hot_reply_frame(&hot, got, len - 1) == 0);
        free(want);
        free(got);
        free(strings);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        if (size > 64 * 1024)
                return 0;
        check_decode(data, size);
        check_encode(data, size);
        return 0;
}
