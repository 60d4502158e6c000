/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The hand codec of Charge and Uncharge (wire-hot.h)
 *
 * Decoding follows protobuf_c_message_unpack() of protobuf-c 1.4 for the
 * fields it accepts, and declines everything else, so that what it
 * yields is what protobuf-c would: the id and the op's fields, absent
 * ones 0, false or NULL. It reads a tag as parse_tag_and_wiretype()
 * does (tag 0 is an error there, so a decline here), a varint as
 * parse_uint64() does (at most ten bytes, each one's low seven bits
 * shifted into place, bits past 64 dropped: a non-minimal varint has the
 * same value in both), a bool as parse_boolean() does (true when any
 * byte has a low bit set, which is not "value != 0" for a ten-byte
 * varint), and a length as scan_length_prefixed_data() does (at most
 * five bytes, at most INT_MAX, within the data). It declines:
 *
 * - a field it does not know (protobuf-c keeps it as an unknown field,
 *   which request.c never looks at, but proving that for every caller is
 *   not this file's business), other ops, and an empty Request;
 * - a field seen twice: protobuf-c's last-one-wins, and for the op
 *   oneof the replacement of one submessage by the next, are rules to
 *   copy, not to re-derive;
 * - a wire type other than the declared one (protobuf-c fails the
 *   unpack, or for a bool reads any wire type: either way not ours);
 * - a tag longer than two bytes (every tag here fits in two);
 * - a string over MEM_PATH_MAX (path), WIRE_HOT_STAT_MAX (stat) or
 *   MEM_REGION_NAME_MAX (region) bytes, or holding a NUL byte: the
 *   service or request.c refuses those, with words the protobuf-c path
 *   already writes.
 *
 * A device region's charge (field 7, region) is as hot as memory's, a
 * GPU allocator's every buffer: it is decoded here, not declined. Field
 * 7 is region in both Charge and Uncharge (Uncharge reserves 5 and 6,
 * Charge's force and stock), so one number serves both.
 *
 * Every read is bounded by the body's length; nothing is allocated.
 *
 * Encoding writes fields in protobuf-c's order (by number: id, status,
 * message, refused_path, then the one oneof member set), with its
 * encodings: uint64 as a minimal varint, the enum as int32 (a negative
 * value sign-extended to ten bytes), a bool as one byte 0 or 1, strings
 * with their strlen() as a varint length.
 */

#include <limits.h>
#include <string.h>

#include "macro.h"
#include "sock/wire-hot.h"
#include "varint.h"

/* Field numbers (proto/memacct/v1/memacct.proto). */
enum {
        REQUEST_ID = 1,
        REQUEST_CHARGE = 16,
        REQUEST_UNCHARGE = 17,

        OP_PATH = 1,
        OP_BYTES = 2,
        OP_STAT = 3,
        OP_KEEP = 4,
        OP_FORCE = 5, /* Charge only */
        OP_STOCK = 6, /* Charge only */
        OP_REGION = 7,

        RESPONSE_ID = 1,
        RESPONSE_STATUS = 2,
        RESPONSE_MESSAGE = 3,
        RESPONSE_REFUSED_PATH = 4,
        RESPONSE_CHARGE = 16,

        CHARGE_REPLY_OVER_HIGH = 1,
        CHARGE_REPLY_THROTTLE_USEC = 2,
        CHARGE_REPLY_OVER_MAX = 3,
        CHARGE_REPLY_MARGIN = 4,
        CHARGE_REPLY_STOCK_INDEX = 5,
};

enum {
        WT_VARINT = 0,
        WT_LEN = 2,
};

/* Bounded input: the bytes p[off..n). */
typedef struct Input {
        const uint8_t *p;
        size_t n, off;
} Input;

/*
 * The two readers of every field are inlined by force: left to itself,
 * GCC's budget for this file keeps one of them out of line, and a call
 * per field costs a Charge about a tenth of its decoding time.
 */

/* A tag of one or two bytes, as parse_tag_and_wiretype() reads it. */
static _always_inline_ bool tag_get(Input *in, uint32_t *ret_field, unsigned *ret_wt) {
        uint8_t b0, b1;

        if (in->off >= in->n)
                return false;
        b0 = in->p[in->off];
        /* Field 0 fails protobuf-c's unpack: not ours. */
        if ((b0 & 0xf8) == 0)
                return false;
        *ret_wt = b0 & 7;
        if (!(b0 & 0x80)) {
                *ret_field = b0 >> 3;
                in->off += 1;
                return true;
        }
        if (in->n - in->off < 2)
                return false;
        b1 = in->p[in->off + 1];
        if (b1 & 0x80)
                return false;
        *ret_field = (uint32_t) ((b0 & 0x7f) >> 3) | (uint32_t) b1 << 4;
        in->off += 2;
        return true;
}

/*
 * A varint as protobuf-c scans (at most ten bytes) and reads it with
 * parse_uint64(); @ret_any: read as a bool, parse_boolean().
 */
static _always_inline_ bool varint_get(Input *in, uint64_t *ret, bool *ret_any) {
        int k = varint_decode(in->p + in->off, in->n - in->off, VARINT64_MAX, ret);

        if (k <= 0)
                return false;
        if (ret_any)
                *ret_any = varint_is_true(in->p + in->off, (size_t) k);
        in->off += (size_t) k;
        return true;
}

/* A length prefix as scan_length_prefixed_data() reads it; the data it announces is within @in. */
static bool length_get(Input *in, size_t *ret) {
        uint64_t v;
        int k = varint_decode(in->p + in->off, in->n - in->off, VARINT32_MAX, &v);

        if (k <= 0)
                return false;
        in->off += (size_t) k;
        if (v > INT_MAX || v > in->n - in->off)
                return false;
        *ret = (size_t) v;
        return true;
}

/* A string of at most @max bytes without NUL, copied NUL-terminated to @buf. */
static bool string_get(Input *in, char *buf, size_t max) {
        size_t len;

        if (!length_get(in, &len) || len > max || memchr(in->p + in->off, 0, len))
                return false;
        memcpy(buf, in->p + in->off, len);
        buf[len] = 0;
        in->off += len;
        return true;
}

/* The fields of a Charge (@charge) or an Uncharge, the body of the op. */
static bool op_decode(Input *in, bool charge, WireHotRequest *r) {
        /* The fields each one has (Uncharge's 5 and 6 are reserved), as bits. */
        uint32_t known = 1u << OP_PATH | 1u << OP_BYTES | 1u << OP_STAT | 1u << OP_KEEP | 1u << OP_REGION |
                         (charge ? 1u << OP_FORCE | 1u << OP_STOCK : 0), seen = 0;

        while (in->off < in->n) {
                uint32_t field;
                unsigned wt;
                uint64_t v;
                bool any;

                if (!tag_get(in, &field, &wt) || field > OP_REGION || !(known & (UINT32_C(1) << field)) ||
                    seen & (UINT32_C(1) << field))
                        return false;
                seen |= UINT32_C(1) << field;
                if (wt != (field == OP_PATH || field == OP_STAT || field == OP_REGION ? WT_LEN : WT_VARINT))
                        return false;
                switch (field) {
                case OP_PATH:
                        if (!string_get(in, r->path, MEM_PATH_MAX))
                                return false;
                        r->has_path = true;
                        break;
                case OP_STAT:
                        if (!string_get(in, r->stat, WIRE_HOT_STAT_MAX))
                                return false;
                        r->has_stat = true;
                        break;
                case OP_REGION:
                        if (!string_get(in, r->region, MEM_REGION_NAME_MAX))
                                return false;
                        r->has_region = true;
                        break;
                case OP_BYTES:
                        if (!varint_get(in, &r->bytes, NULL))
                                return false;
                        r->has_bytes = true;
                        break;
                default: /* the bools */
                        if (!varint_get(in, &v, &any))
                                return false;
                        if (field == OP_KEEP)
                                r->keep = any;
                        else if (field == OP_FORCE)
                                r->force = any;
                        else
                                r->stock = any;
                        break;
                }
        }
        return true;
}

int wire_hot_decode(const uint8_t *body, size_t len, WireHotRequest *ret) {
        Input in = { .p = body, .n = len };
        bool has_id = false;

        ret->id = 0;
        ret->op = _WIRE_HOT_OP_INVALID;
        ret->has_path = ret->has_stat = ret->has_bytes = ret->has_region = false;
        ret->keep = ret->force = ret->stock = false;
        ret->bytes = 0;
        ret->path[0] = ret->stat[0] = ret->region[0] = 0;

        while (in.off < in.n) {
                uint32_t field;
                unsigned wt;
                size_t sub;
                Input op;

                if (!tag_get(&in, &field, &wt))
                        return 0;
                if (field == REQUEST_ID) {
                        if (has_id || wt != WT_VARINT || !varint_get(&in, &ret->id, NULL))
                                return 0;
                        has_id = true;
                        continue;
                }
                if ((field != REQUEST_CHARGE && field != REQUEST_UNCHARGE) || wt != WT_LEN ||
                    ret->op != _WIRE_HOT_OP_INVALID || !length_get(&in, &sub))
                        return 0;
                ret->op = field == REQUEST_CHARGE ? WIRE_HOT_CHARGE : WIRE_HOT_UNCHARGE;
                op = (Input) { .p = in.p + in.off, .n = sub };
                if (!op_decode(&op, ret->op == WIRE_HOT_CHARGE, ret))
                        return 0;
                in.off += sub;
        }
        return ret->op != _WIRE_HOT_OP_INVALID;
}

static size_t varint_size(uint64_t v) {
        size_t n = 1;

        while (v >= 0x80) {
                v >>= 7;
                n++;
        }
        return n;
}

static uint8_t *varint_put(uint8_t *p, uint64_t v) {
        while (v >= 0x80) {
                *p++ = (uint8_t) (v | 0x80);
                v >>= 7;
        }
        *p++ = (uint8_t) v;
        return p;
}

/* Every tag written here takes one byte but RESPONSE_CHARGE's two. */
static uint8_t *tag_put(uint8_t *p, unsigned field, unsigned wt) {
        return varint_put(p, (uint64_t) field << 3 | wt);
}

/* protobuf-c's int32 on the wire: a negative value is sign-extended to 64 bits. */
static uint64_t int32_wire(int32_t v) {
        return (uint64_t) (int64_t) v;
}

static size_t charge_reply_size(const WireHotReply *r) {
        return 1 + varint_size(r->over_high) + 1 + varint_size(r->throttle_usec) + 2 + 1 + varint_size(r->margin) +
               (r->stock_index ? 1 + varint_size(r->stock_index) : 0);
}

static size_t string_field_size(const char *s) {
        size_t n = strlen(s);

        return 1 + varint_size(n) + n;
}

static uint8_t *string_field_put(uint8_t *p, unsigned field, const char *s) {
        size_t n = strlen(s);

        p = tag_put(p, field, WT_LEN);
        p = varint_put(p, n);
        memcpy(p, s, n);
        return p + n;
}

size_t wire_hot_reply_frame(const WireHotReply *r, uint8_t *out, size_t size) {
        size_t body = 1 + varint_size(r->id) + 1 + varint_size(int32_wire(r->status)), cr = 0, prefix;
        uint8_t *p;

        if (r->message)
                body += string_field_size(r->message);
        if (r->refused_path)
                body += string_field_size(r->refused_path);
        if (r->charge) {
                cr = charge_reply_size(r);
                body += 2 + varint_size(cr) + cr;
        }
        if (body > UINT32_MAX)
                return 0;
        prefix = varint_size(body);
        if (prefix + body > size)
                return 0;

        p = varint_put(out, body);
        p = tag_put(p, RESPONSE_ID, WT_VARINT);
        p = varint_put(p, r->id);
        p = tag_put(p, RESPONSE_STATUS, WT_VARINT);
        p = varint_put(p, int32_wire(r->status));
        if (r->message)
                p = string_field_put(p, RESPONSE_MESSAGE, r->message);
        if (r->refused_path)
                p = string_field_put(p, RESPONSE_REFUSED_PATH, r->refused_path);
        if (r->charge) {
                p = tag_put(p, RESPONSE_CHARGE, WT_LEN);
                p = varint_put(p, cr);
                p = tag_put(p, CHARGE_REPLY_OVER_HIGH, WT_VARINT);
                p = varint_put(p, r->over_high);
                p = tag_put(p, CHARGE_REPLY_THROTTLE_USEC, WT_VARINT);
                p = varint_put(p, r->throttle_usec);
                p = tag_put(p, CHARGE_REPLY_OVER_MAX, WT_VARINT);
                *p++ = r->over_max ? 1 : 0;
                p = tag_put(p, CHARGE_REPLY_MARGIN, WT_VARINT);
                p = varint_put(p, r->margin);
                if (r->stock_index) {
                        p = tag_put(p, CHARGE_REPLY_STOCK_INDEX, WT_VARINT);
                        p = varint_put(p, r->stock_index);
                }
        }
        return (size_t) (p - out);
}
