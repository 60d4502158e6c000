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
 * - a tag longer than two bytes (every tag here fits in two), and inside
 *   the op one longer than one byte (every field of Charge and Uncharge
 *   is below 16: a second byte is a non-minimal tag, which no encoder
 *   writes);
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
 * Every read is bounded by the body's length; nothing is allocated. A
 * short string (a stat item, a region) is read and checked a word at a
 * time, its last word loaded back from its end when the body has the
 * bytes before it (short_string_get()).
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

/*
 * A length prefix as scan_length_prefixed_data() reads it; the data it
 * announces is within @in. A length below 128, one byte, is nearly every
 * one (a string, the op): read without the varint loop.
 */
static _always_inline_ bool length_get(Input *in, size_t *ret) {
        uint64_t v;
        int k;

        if (in->off < in->n && in->p[in->off] < 0x80) {
                v = in->p[in->off];
                k = 1;
        } else {
                k = varint_decode(in->p + in->off, in->n - in->off, VARINT32_MAX, &v);
                if (k <= 0)
                        return false;
        }
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

/* Does @w hold a zero byte? Exact as a yes or no: the borrow that can
 * mark a non-zero byte only ever starts at a zero byte below it. */
static _always_inline_ bool word_has_zero(uint64_t w) {
        return ((w - UINT64_C(0x0101010101010101)) & ~w & UINT64_C(0x8080808080808080)) != 0;
}

static _always_inline_ uint64_t word_load(const uint8_t *p) {
        uint64_t w;

        memcpy(&w, p, sizeof(w));
        return w;
}

/*
 * A short string (a stat item, a region name) as string_get() takes it,
 * copied and checked for NUL eight bytes at a time, inline: for names of
 * a few bytes, the calls of memchr() and memcpy() cost three times the
 * work (a region's charge paid them on every request). @buf has
 * @max + 1 bytes, rounded up to a multiple of eight (SHORT_BUF_OK()):
 * whole words are stored, the terminator among them.
 */
#define SHORT_BUF_OK(buf, max) (sizeof(buf) >= ((max) + 1 + 7) / 8 * 8)
_Static_assert(SHORT_BUF_OK(((WireHotRequest *) NULL)->stat, WIRE_HOT_STAT_MAX), "stat");
_Static_assert(SHORT_BUF_OK(((WireHotRequest *) NULL)->region, MEM_REGION_NAME_MAX), "region");

static _always_inline_ bool short_string_get(Input *in, char *buf, size_t max) {
        const uint8_t *s;
        size_t len, i;
        uint64_t w;

        if (!length_get(in, &len) || len > max)
                return false;
        s = in->p + in->off;
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
        /* One to seven bytes (a name such as "gpu0"): the word that ends
         * with the string, inside the body (the bytes before it are the
         * message's own), shifted down to it: its top bytes come in zero,
         * the terminator included. */
        if (len - 1 < 7 && in->off + len >= 8) {
                w = word_load(s + len - 8) >> (8 * (8 - len));
                if (word_has_zero(w | (~UINT64_C(0) << (8 * len))))
                        return false;
                memcpy(buf, &w, 8);
                in->off += len;
                return true;
        }
#endif
        if (len >= 8) {
                for (i = 0; i + 8 <= len; i += 8) {
                        w = word_load(s + i);
                        if (word_has_zero(w))
                                return false;
                        memcpy(buf + i, &w, 8);
                }
                /* The last bytes as the word that ends with them, overlapping the one before. */
                w = word_load(s + len - 8);
                if (word_has_zero(w))
                        return false;
                memcpy(buf + len - 8, &w, 8);
                buf[len] = 0;
        } else {
                for (i = 0; i < len; i++) {
                        if (s[i] == 0)
                                return false;
                        buf[i] = (char) s[i];
                }
                buf[len] = 0;
        }
        in->off += len;
        return true;
}

/*
 * A tag of an op's field with its declared wire type: every field of
 * Charge and Uncharge is below 16, so each is one byte, and comparing
 * that byte stands for tag_get()'s, the field's and the wire type's
 * checks. A two-byte tag (a non-minimal one of a field below 16) is
 * declined: no encoder writes one.
 */
#define OP_TAG(field, wt) ((field) << 3 | (wt))

/* The rarer fields of an op (@charge: a Charge's), past its tag; @seen: those met, by field. */
static bool op_decode_other(Input *in, uint8_t tag, bool charge, uint32_t *seen, WireHotRequest *r) {
        uint64_t v;
        bool any;

        if (tag >= 0x80 || *seen & UINT32_C(1) << (tag >> 3))
                return false;
        *seen |= UINT32_C(1) << (tag >> 3);
        switch (tag) {
        case OP_TAG(OP_PATH, WT_LEN):
                if (!string_get(in, r->path, MEM_PATH_MAX))
                        return false;
                r->has_path = true;
                return true;
        case OP_TAG(OP_STAT, WT_LEN):
                if (!short_string_get(in, r->stat, WIRE_HOT_STAT_MAX))
                        return false;
                r->has_stat = true;
                return true;
        case OP_TAG(OP_KEEP, WT_VARINT):
                if (!varint_get(in, &v, &any))
                        return false;
                r->keep = any;
                return true;
        case OP_TAG(OP_FORCE, WT_VARINT): /* Charge's; reserved in Uncharge */
                if (!charge || !varint_get(in, &v, &any))
                        return false;
                r->force = any;
                return true;
        case OP_TAG(OP_STOCK, WT_VARINT): /* Charge's; reserved in Uncharge */
                if (!charge || !varint_get(in, &v, &any))
                        return false;
                r->stock = any;
                return true;
        default:
                return false;
        }
}

/*
 * The fields of a Charge (@charge) or an Uncharge, the body of the op.
 * bytes and region, the fields of nearly every one, are tested first, a
 * comparison each (a switch's jump costs a region's charge the price of
 * its name's copy).
 */
static bool op_decode(Input *in, bool charge, WireHotRequest *r) {
        uint32_t seen = 0;

        while (in->off < in->n) {
                uint8_t tag = in->p[in->off++];

                if (tag == OP_TAG(OP_BYTES, WT_VARINT)) {
                        if (r->has_bytes || !varint_get(in, &r->bytes, NULL))
                                return false;
                        r->has_bytes = true;
                } else if (tag == OP_TAG(OP_REGION, WT_LEN)) {
                        if (r->has_region || !short_string_get(in, r->region, MEM_REGION_NAME_MAX))
                                return false;
                        r->has_region = true;
                } else if (!op_decode_other(in, tag, charge, &seen, r))
                        return false;
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
                /* The op's bytes end its Input; the ones before it stay
                 * readable (short_string_get() loads a word back from a
                 * string's end). */
                op = (Input) { .p = in.p, .n = in.off + sub, .off = in.off };
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
