/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The hand codec of Charge and Uncharge (daemon/sock/wire-hot.c) on fixed
 * cases: what it decodes, protobuf-c's unpack of the same bytes must say
 * (the expected values are protobuf-c's, not pasted); what it declines is
 * listed; every reply it encodes must be protobuf-c's pack, at the edge
 * values (0, UINT64_MAX, a negative enum, the longest varints).
 */

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "frame.h"
#include "memacct.pb-c.h"
#include "sock/wire-hot.h"

#define BYTES(...) ((const uint8_t[]) { __VA_ARGS__ }), sizeof((const uint8_t[]) { __VA_ARGS__ })

/* Decode @body both ways; the hand decoder must take it and agree with protobuf-c. */
static void expect_same(const uint8_t *body, size_t len, WireHotRequest *hot) {
        Memacct__V1__Request *req;
        const char *path, *stat, *region;
        uint64_t bytes;
        bool has_bytes, keep, force = false, stock = false;

        assert_int_equal(wire_hot_decode(body, len, hot), 1);
        req = memacct__v1__request__unpack(NULL, len, body);
        assert_non_null(req);
        assert_true(req->id == hot->id);
        if (req->op_case == MEMACCT__V1__REQUEST__OP_CHARGE) {
                assert_int_equal(hot->op, WIRE_HOT_CHARGE);
                path = req->charge->path, stat = req->charge->stat;
                bytes = req->charge->bytes, has_bytes = req->charge->has_bytes;
                keep = req->charge->keep, force = req->charge->force, stock = req->charge->stock;
                region = req->charge->region;
        } else {
                assert_int_equal(req->op_case, MEMACCT__V1__REQUEST__OP_UNCHARGE);
                assert_int_equal(hot->op, WIRE_HOT_UNCHARGE);
                path = req->uncharge->path, stat = req->uncharge->stat;
                bytes = req->uncharge->bytes, has_bytes = req->uncharge->has_bytes;
                keep = req->uncharge->keep;
                region = req->uncharge->region;
        }
        assert_int_equal(hot->has_path, path != NULL);
        if (path)
                assert_string_equal(hot->path, path);
        assert_int_equal(hot->has_stat, stat != NULL);
        if (stat)
                assert_string_equal(hot->stat, stat);
        assert_int_equal(hot->has_region, region != NULL);
        if (region)
                assert_string_equal(hot->region, region);
        assert_int_equal(hot->has_bytes, has_bytes);
        assert_true(hot->bytes == bytes);
        assert_int_equal(hot->keep, keep);
        assert_int_equal(hot->force, force);
        assert_int_equal(hot->stock, stock);
        memacct__v1__request__free_unpacked(req, NULL);
}

static void test_wire_hot_decodes_what_protobuf_c_decodes(void **state) {
        WireHotRequest h;

        (void) state;
        /* Request{id: 1, charge{bytes: 4096}}, as libmemacct sends it. */
        expect_same(BYTES(0x08, 0x01, 0x82, 0x01, 0x03, 0x10, 0x80, 0x20), &h);
        assert_true(h.id == 1 && h.has_bytes && h.bytes == 4096 && !h.has_path && !h.has_stat);
        /* No id, an empty Uncharge. */
        expect_same(BYTES(0x8a, 0x01, 0x00), &h);
        assert_true(h.id == 0 && !h.has_bytes);
        /* bytes: 0 present; path and stat present and empty; every bool. */
        expect_same(BYTES(0x82, 0x01, 0x0c, 0x0a, 0x00, 0x10, 0x00, 0x1a, 0x00, 0x20, 0x01, 0x28, 0x01, 0x30,
                          0x01),
                    &h);
        assert_true(h.has_bytes && h.bytes == 0 && h.has_path && h.path[0] == 0 && h.has_stat);
        assert_true(h.keep && h.force && h.stock);
        /* id and bytes UINT64_MAX: ten-byte varints. */
        expect_same(BYTES(0x08, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01, 0x82, 0x01, 0x0b,
                          0x10, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01),
                    &h);
        assert_true(h.id == UINT64_MAX && h.bytes == UINT64_MAX);
        /* A ten-byte varint whose last byte carries bits past 64: dropped, as protobuf-c does. */
        expect_same(BYTES(0x82, 0x01, 0x0b, 0x10, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f),
                    &h);
        /* A bool of ten bytes whose value bits fall past 64: still true for protobuf-c. */
        expect_same(BYTES(0x82, 0x01, 0x0b, 0x20, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x02),
                    &h);
        assert_true(h.keep);
        /* Non-minimal: id 1 in four bytes, a two-byte tag for id, a three-byte length. */
        expect_same(BYTES(0x88, 0x00, 0x81, 0x80, 0x80, 0x00, 0x82, 0x01, 0x83, 0x80, 0x00, 0x10, 0x80, 0x20), &h);
        assert_true(h.id == 1 && h.bytes == 4096);
        /* A path and a stat item. */
        expect_same(BYTES(0x08, 0x09, 0x8a, 0x01, 0x0b, 0x0a, 0x02, '/', 'a', 0x10, 0x01, 0x1a, 0x03, 'f', 'o',
                          'o'),
                    &h);
        assert_string_equal(h.path, "/a");
        assert_string_equal(h.stat, "foo");
        /* A device region's charge: region is field 7, after the bools. */
        expect_same(BYTES(0x08, 0x02, 0x82, 0x01, 0x0b, 0x10, 0x80, 0x20, 0x20, 0x01, 0x3a, 0x04, 'g', 'p', 'u',
                          '0'),
                    &h);
        assert_true(h.has_region && h.keep && h.bytes == 4096 && !h.has_stat);
        assert_string_equal(h.region, "gpu0");
        /* ... and an Uncharge's, field 7 too; an empty region is present. */
        expect_same(BYTES(0x8a, 0x01, 0x06, 0x3a, 0x02, 'g', '1', 0x10, 0x01), &h);
        assert_true(h.op == WIRE_HOT_UNCHARGE && h.has_region && h.bytes == 1);
        assert_string_equal(h.region, "g1");
        expect_same(BYTES(0x82, 0x01, 0x02, 0x3a, 0x00), &h);
        assert_true(h.has_region && h.region[0] == 0);
}

/* Request{charge{region: @n times 'r'}} at @p: 5 + @n bytes (@n < 128). */
static void region_frame(uint8_t *p, size_t n) {
        p[0] = 0x82, p[1] = 0x01;
        p[2] = (uint8_t) (2 + n);
        p[3] = 0x3a;
        p[4] = (uint8_t) n;
        memset(p + 5, 'r', n);
}

/* A two-byte varint (@v < 2^14) at @p. */
static void put2(uint8_t *p, size_t v) {
        p[0] = (uint8_t) ((v & 0x7f) | 0x80);
        p[1] = (uint8_t) (v >> 7);
}

/* Request{charge{path: @n times 'a'}} at @p: 7 + @n bytes. */
static void long_path_frame(uint8_t *p, size_t n) {
        p[0] = 0x82, p[1] = 0x01;
        put2(p + 2, 1 + 2 + n);
        p[4] = 0x0a;
        put2(p + 5, n);
        memset(p + 7, 'a', n);
}

static void test_wire_hot_declines_what_it_does_not_handle(void **state) {
        WireHotRequest h;
        uint8_t long_path[7 + MEM_PATH_MAX + 1], region[5 + MEM_REGION_NAME_MAX + 1];

        (void) state;
        assert_int_equal(wire_hot_decode(NULL, 0, &h), 0);                      /* no op */
        assert_int_equal(wire_hot_decode(BYTES(0x08, 0x01), &h), 0);             /* no op */
        assert_int_equal(wire_hot_decode(BYTES(0x52, 0x00), &h), 0);             /* Hello */
        assert_int_equal(wire_hot_decode(BYTES(0x08, 0x01, 0x08, 0x02, 0x82, 0x01, 0x00), &h), 0); /* two ids */
        assert_int_equal(wire_hot_decode(BYTES(0x82, 0x01, 0x00, 0x82, 0x01, 0x00), &h), 0);       /* two ops */
        assert_int_equal(wire_hot_decode(BYTES(0x82, 0x01, 0x00, 0x8a, 0x01, 0x00), &h), 0);       /* oneof swap */
        assert_int_equal(wire_hot_decode(BYTES(0x82, 0x01, 0x04, 0x10, 0x01, 0x10, 0x02), &h), 0); /* two bytes */
        assert_int_equal(wire_hot_decode(BYTES(0x82, 0x01, 0x02, 0x38, 0x01), &h), 0);   /* region as a varint */
        assert_int_equal(wire_hot_decode(BYTES(0x82, 0x01, 0x02, 0x40, 0x01), &h), 0);   /* unknown field 8 */
        assert_int_equal(wire_hot_decode(BYTES(0x8a, 0x01, 0x02, 0x30, 0x01), &h), 0);   /* reserved 6 in Uncharge */
        assert_int_equal(wire_hot_decode(BYTES(0x82, 0x01, 0x06, 0x3a, 0x00, 0x3a, 0x01, 'a'), &h), 0); /* two regions */
        assert_int_equal(wire_hot_decode(BYTES(0x82, 0x01, 0x04, 0x3a, 0x02, 'a', 0x00), &h), 0); /* NUL in region */
        assert_int_equal(wire_hot_decode(BYTES(0x8a, 0x01, 0x02, 0x28, 0x01), &h), 0);   /* force in Uncharge */
        assert_int_equal(wire_hot_decode(BYTES(0x10, 0x01, 0x82, 0x01, 0x00), &h), 0);   /* unknown top field */
        assert_int_equal(wire_hot_decode(BYTES(0x82, 0x01, 0x02, 0x15, 0x00), &h), 0);   /* bytes as fixed32 */
        assert_int_equal(wire_hot_decode(BYTES(0x82, 0x01, 0x05, 0x25, 0x01, 0, 0, 0), &h), 0); /* bool fixed32 */
        assert_int_equal(wire_hot_decode(BYTES(0x09, 1, 0, 0, 0, 0, 0, 0, 0, 0x82, 0x01, 0x00), &h), 0); /* id */
        assert_int_equal(wire_hot_decode(BYTES(0x82, 0x01, 0x04, 0x0a, 0x02, 'a', 0x00), &h), 0); /* NUL */
        assert_int_equal(wire_hot_decode(BYTES(0x82, 0x01, 0x05, 0x10, 0x80), &h), 0);  /* length past the end */
        assert_int_equal(wire_hot_decode(BYTES(0x82, 0x01, 0x01, 0x10), &h), 0);        /* cut varint */
        assert_int_equal(wire_hot_decode(BYTES(0x00, 0x82, 0x01, 0x00), &h), 0);        /* tag 0 */
        assert_int_equal(wire_hot_decode(BYTES(0x80, 0x81, 0x01, 0x00), &h), 0);        /* three-byte tag */
        /* Eleven varint bytes: protobuf-c stops at ten. */
        assert_int_equal(wire_hot_decode(BYTES(0x08, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80,
                                               0x00, 0x82, 0x01, 0x00),
                                         &h),
                         0);
        /* A path over MEM_PATH_MAX: the service's words, through protobuf-c. */
        long_path_frame(long_path, MEM_PATH_MAX + 1);
        assert_int_equal(wire_hot_decode(long_path, sizeof(long_path), &h), 0);
        /* The same path one byte shorter is taken. */
        long_path_frame(long_path, MEM_PATH_MAX);
        expect_same(long_path, sizeof(long_path) - 1, &h);
        assert_int_equal(strlen(h.path), MEM_PATH_MAX);
        /* A region name over MEM_REGION_NAME_MAX is no region: the service says so. */
        region_frame(region, MEM_REGION_NAME_MAX + 1);
        assert_int_equal(wire_hot_decode(region, sizeof(region), &h), 0);
        region_frame(region, MEM_REGION_NAME_MAX);
        expect_same(region, sizeof(region) - 1, &h);
        assert_int_equal(strlen(h.region), MEM_REGION_NAME_MAX);
}

/* @hot as protobuf-c packs it, framed; the hand encoder must write the same bytes. */
static void expect_same_reply(const WireHotReply *hot) {
        Memacct__V1__Response resp = MEMACCT__V1__RESPONSE__INIT;
        Memacct__V1__ChargeReply cr = MEMACCT__V1__CHARGE_REPLY__INIT;
        uint8_t want[1024], got[1024];
        size_t body, n, len;

        resp.has_id = resp.has_status = true;
        resp.id = hot->id;
        resp.status = (Memacct__V1__Status) hot->status;
        resp.message = (char *) hot->message;
        resp.refused_path = (char *) hot->refused_path;
        if (hot->charge) {
                cr.has_over_high = cr.has_throttle_usec = cr.has_over_max = cr.has_margin = true;
                cr.over_high = hot->over_high;
                cr.throttle_usec = hot->throttle_usec;
                cr.over_max = hot->over_max;
                cr.margin = hot->margin;
                resp.result_case = MEMACCT__V1__RESPONSE__RESULT_CHARGE;
                resp.charge = &cr;
        }
        body = memacct__v1__response__get_packed_size(&resp);
        assert_true(body + FRAME_PREFIX_MAX <= sizeof(want));
        n = frame_prefix_encode((uint32_t) body, want);
        memacct__v1__response__pack(&resp, want + n);
        len = wire_hot_reply_frame(hot, got, sizeof(got));
        assert_int_equal(len, n + body);
        assert_memory_equal(got, want, len);
        /* Exactly its size fits, one byte less does not. */
        assert_int_equal(wire_hot_reply_frame(hot, got, len), len);
        assert_int_equal(wire_hot_reply_frame(hot, got, len - 1), 0);
}

static void test_wire_hot_encodes_what_protobuf_c_packs(void **state) {
        (void) state;
        /* An Uncharge's OK, id 0 and 1. */
        expect_same_reply(&(WireHotReply) { .id = 0 });
        expect_same_reply(&(WireHotReply) { .id = 1 });
        /* A Charge's OK, all zero and all at the longest varints. */
        expect_same_reply(&(WireHotReply) { .id = 5, .charge = true });
        expect_same_reply(&(WireHotReply) { .id = UINT64_MAX,
                                            .charge = true,
                                            .over_high = UINT64_MAX,
                                            .throttle_usec = UINT64_MAX,
                                            .over_max = true,
                                            .margin = UINT64_MAX });
        /* A refusal, with and without the refusing group, an empty message. */
        expect_same_reply(&(WireHotReply) { .id = 9,
                                            .status = MEMACCT__V1__STATUS__STATUS_LIMIT_EXCEEDED,
                                            .message = "/a: limit exceeded (max of /a)",
                                            .refused_path = "/a" });
        expect_same_reply(&(WireHotReply) { .id = 9, .status = MEMACCT__V1__STATUS__STATUS_UNDERFLOW, .message = "" });
        /* Enum values protobuf-c packs as int32: a negative one takes ten bytes. */
        expect_same_reply(&(WireHotReply) { .id = 3, .status = -1 });
        expect_same_reply(&(WireHotReply) { .id = 3, .status = INT32_MIN });
        expect_same_reply(&(WireHotReply) { .id = 3, .status = INT32_MAX });
}

static void test_wire_hot_reply_length_is_its_fields(void **state) {
        WireHotReply r = { .id = UINT64_MAX, .charge = true, .over_high = UINT64_MAX, .throttle_usec = UINT64_MAX,
                           .margin = UINT64_MAX };
        uint8_t buf[128];
        /* The ChargeReply: three ten-byte varints and a bool, each with a one-byte tag. */
        size_t cr = 3 * (1 + 10) + 1 + 1;
        /* id (tag + ten bytes), status (tag + one), the charge (two-byte tag, one-byte length, body). */
        size_t body = 1 + 10 + 1 + 1 + 2 + 1 + cr;

        (void) state;
        assert_int_equal(wire_hot_reply_frame(&r, buf, sizeof(buf)), 1 + body);
        assert_int_equal(buf[0], body);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_wire_hot_decodes_what_protobuf_c_decodes),
                cmocka_unit_test(test_wire_hot_declines_what_it_does_not_handle),
                cmocka_unit_test(test_wire_hot_encodes_what_protobuf_c_packs),
                cmocka_unit_test(test_wire_hot_reply_length_is_its_fields),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
