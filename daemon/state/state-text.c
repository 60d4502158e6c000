/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * State persistence: the text
 *
 * The format is line-oriented text, easy to read in an incident and to
 * check completely before anything is applied:
 *
 *         memacctd-state 2
 *         region gpu0 capacity=85899345920
 *         region drm/0000:03:00.0/vram0 capacity=max
 *         group / owner=0 max=max high=max low=0 min=0
 *         group /a owner=1000 max=1073741824 high=max low=0 min=0 kept.anon=8192 kept-delegator.anon=4096
 *         group /a/m owner=0 max=104857600 high=max low=0 min=0 user-limits=max
 *         group /g owner=0 max=max high=max low=0 min=0 dmem:gpu0.max=4294967296 dmem:gpu0.kept=65536
 *         end 4 fnv1a64=<16 hex digits>
 *
 * Groups come in pre-order, so every parent precedes its children and the
 * tree can be rebuilt top-down. Limits are bytes or "max"; kept charges
 * are listed per stat item, omitted when zero; on a delegation root (a
 * group delegated to its owner by no ancestor), kept-delegator.ITEM says how
 * many of them its delegator kept (at most kept.ITEM, omitted when zero;
 * nowhere else); a group created transient carries "transient=1" (a
 * state file from before the field loads with every group ordinary, as
 * it was then); user-limits names, by commas, the limits a user set on
 * a kernel cgroup mirror, which an import keeps (group_user_limits()),
 * absent meaning none, as in files written before it existed.
 *
 * Device memory regions (version 2): "region NAME capacity=BYTES|max"
 * lines between the header and the groups, each name once, at most
 * MEM_REGION_MAX - 1 of them; a group's limits in a region (where not at
 * their default), its kept charges there and their delegator's part are
 * dmem:NAME.ATTR fields on its line (state-regions.c). A state with no
 * region is written as version 1, which is all a daemon from before
 * regions reads; either version loads. The kept charges of all groups
 * together, in memory and in each region, fit in one counter.
 *
 * The trailer carries the group count (region lines are not groups) and
 * the 64-bit FNV-1a hash of every byte before it: a file cut anywhere, or
 * changed by a single byte, fails the check.
 *
 * How the file is written and restored is state-dir.c's.
 *
 * Session charges are not saved. Regions are registered first; kept
 * charges, memory's and the regions', are restored with MEM_CHARGE_FORCE
 * before any limit is set, so a limit lowered while they were held
 * neither refuses them nor counts high events for them.
 */

#include <errno.h>
#include <stdatomic.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/charge.h"
#include "base/log.h"
#include "macro.h"
#include "parse-size.h"
#include "state/persist-internal.h"

/* Version 2 adds region lines; a state without regions is written as version 1. */
#define STATE_HEADER_1 "memacctd-state 1\n"
#define STATE_HEADER_2 "memacctd-state 2\n"
#define STATE_HEADER_SIZE (sizeof(STATE_HEADER_1) - 1)
/* A save reads its regions again when they changed during it, this often at most. */
#define FORMAT_TRIES 3

#define FNV_OFFSET UINT64_C(0xcbf29ce484222325)
#define FNV_PRIME UINT64_C(0x100000001b3)

uint64_t fnv1a64(const char *p, size_t n) {
        uint64_t h = FNV_OFFSET;

        for (size_t i = 0; i < n; i++) {
                h ^= (uint8_t) p[i];
                h *= FNV_PRIME;
        }
        return h;
}

/* ---- writing ---- */

void text_printf(TextBuf *b, const char *format, ...) {
        va_list ap;
        int n;

        if (b->oom)
                return;
        for (;;) {
                size_t room = b->cap - b->len;

                va_start(ap, format);
                n = vsnprintf(b->p ? b->p + b->len : NULL, room, format, ap);
                va_end(ap);
                if (n < 0) {
                        b->oom = true;
                        return;
                }
                if ((size_t) n < room) {
                        b->len += (size_t) n;
                        return;
                }
                size_t cap = MAX(b->cap * 2, b->len + (size_t) n + 4096);
                char *p = realloc(b->p, cap);

                if (!p) {
                        b->oom = true;
                        return;
                }
                b->p = p;
                b->cap = cap;
        }
}

/* The names of user-limits=, by MemLimitMask bit. */
static const char *const limit_names[] = { "max", "high", "low", "min" };

static void text_limit(TextBuf *b, const char *key, uint64_t v) {
        if (v == UINT64_MAX)
                text_printf(b, " %s=max", key);
        else
                text_printf(b, " %s=%" PRIu64, key, v);
}

typedef struct FormatContext {
        MemCore *core;
        TextBuf *buf;
        size_t count;
        const StateRegionSnapshot *regions;
        StateRegionUse uses[MEM_REGION_MAX - 1]; /* the group's being written */
} FormatContext;

void text_group_line(TextBuf *b, const char *prefix, const StateGroup *sg) {
        text_printf(b, "%s%s owner=%u", prefix, sg->path, (unsigned) sg->owner);
        text_limit(b, "max", sg->limits.max);
        text_limit(b, "high", sg->limits.high);
        text_limit(b, "low", sg->limits.low);
        text_limit(b, "min", sg->limits.min);
        if (sg->user_limits) {
                const char *sep = " user-limits=";

                for (unsigned k = 0; k < ELEMENTSOF(limit_names); k++)
                        if (sg->user_limits & (1u << k)) {
                                text_printf(b, "%s%s", sep, limit_names[k]);
                                sep = ",";
                        }
        }
        for (MemStatItem i = 0; i < _MEM_STAT_MAX; i++)
                if (sg->kept[i] > 0)
                        text_printf(b, " kept.%s=%" PRIu64, mem_stat_item_to_string(i), sg->kept[i]);
        for (MemStatItem i = 0; i < _MEM_STAT_MAX; i++)
                if (sg->kept_delegator[i] > 0)
                        text_printf(b, " kept-delegator.%s=%" PRIu64, mem_stat_item_to_string(i),
                                    sg->kept_delegator[i]);
        /* Omitted when not set: files of ordinary groups read as before. */
        if (sg->transient)
                text_printf(b, " transient=1");
        text_region_fields(b, sg);
        text_printf(b, "\n");
}

static int format_group(MemGroup *g, void *userdata) {
        FormatContext *ctx = userdata;
        StateGroup sg;

        state_group_of(ctx->core, g, ctx->regions, ctx->uses, &sg);
        text_group_line(ctx->buf, "group ", &sg);
        ctx->count++;
        return ctx->buf->oom ? -ENOMEM : 0;
}

/* The header of a state with @regions: version 2 only when there are region lines. */
static const char *state_header(const StateRegions *regions) {
        return regions->n > 0 ? STATE_HEADER_2 : STATE_HEADER_1;
}

/* The trailer: the group count and the hash of everything before it. */
static void text_trailer(TextBuf *b, size_t groups) {
        if (!b->oom)
                text_printf(b, "end %zu fnv1a64=%016" PRIx64 "\n", groups, fnv1a64(b->p, b->len));
}

int persist_format(MemCore *core, char **ret, size_t *ret_size) {
        StateRegionSnapshot before, after;
        FormatContext ctx = { .core = core, .regions = &before };
        TextBuf b = {};
        int r;

        /*
         * The regions are read before the groups, and again after: a
         * region removed meanwhile took its fields off the groups read
         * after it, and a state with it and only some of them would undo
         * a part of the removal. It is written again then (a removal is
         * rare, and waited for by its own whole save).
         */
        for (unsigned tries = 1;; tries++) {
                state_region_snapshot(core, &before);
                b.len = 0;
                ctx.buf = &b;
                ctx.count = 0;
                text_printf(&b, "%s", state_header(&before.set));
                text_region_lines(&b, "region ", &before.set);
                /* The walk runs in one read-side section: every group it
                 * visits stays valid, and pre-order puts parents first. */
                core_read_lock();
                r = group_walk(core->root, format_group, &ctx);
                core_read_unlock();
                if (r < 0 || b.oom || tries == FORMAT_TRIES)
                        break;
                state_region_snapshot(core, &after);
                if (state_region_snapshot_same(&before, &after))
                        break;
        }
        if (r >= 0)
                text_trailer(&b, ctx.count);
        if (r < 0 || b.oom) {
                free(b.p);
                return -ENOMEM;
        }
        *ret = b.p;
        *ret_size = b.len;
        return 0;
}

int state_format(const State *st, char **ret, size_t *ret_size) {
        TextBuf b = {};

        text_printf(&b, "%s", state_header(&st->regions));
        text_region_lines(&b, "region ", &st->regions);
        for (size_t i = 0; i < st->n; i++)
                text_group_line(&b, "group ", &st->groups[i]);
        text_trailer(&b, st->n);
        if (b.oom) {
                free(b.p);
                return -ENOMEM;
        }
        *ret = b.p;
        *ret_size = b.len;
        return 0;
}

/* ---- reading and checking ---- */

void state_done(State *s) {
        state_uses_done(&s->uses);
        free(s->groups);
        free(s->text);
        *s = (State) {};
}


int check_fail(CheckContext *ctx, int r, unsigned line, const char *format, ...) {
        char *msg = NULL;
        va_list ap;
        int k;

        va_start(ap, format);
        k = vasprintf(&msg, format, ap);
        va_end(ap);
        if (k < 0) {
                ctx->oom = true;
                return -ENOMEM;
        }
        free(ctx->error);
        ctx->error = NULL;
        if (line > 0) {
                if (asprintf(&ctx->error, "line %u: %s", line, msg) < 0)
                        ctx->oom = true;
                free(msg);
        } else
                ctx->error = msg;
        return ctx->oom ? -ENOMEM : r;
}

int parse_decimal(const char *s, uint64_t max, uint64_t *ret) {
        uint64_t v = 0;

        if (!*s)
                return -EINVAL;
        for (; *s; s++) {
                if (*s < '0' || *s > '9' || v > (max - (uint64_t) (*s - '0')) / 10)
                        return -EINVAL;
                v = v * 10 + (uint64_t) (*s - '0');
        }
        *ret = v;
        return 0;
}

/* The value of user-limits=: limit names by commas, each once, at least one. */
static int parse_user_limits(const char *value, unsigned *ret) {
        unsigned mask = 0;

        for (const char *s = value;;) {
                size_t n = strcspn(s, ",");
                unsigned k;

                for (k = 0; k < ELEMENTSOF(limit_names); k++)
                        if (strlen(limit_names[k]) == n && strncmp(s, limit_names[k], n) == 0)
                                break;
                if (k == ELEMENTSOF(limit_names) || (mask & (1u << k)))
                        return -EINVAL;
                mask |= 1u << k;
                if (!s[n])
                        break;
                s += n + 1;
        }
        *ret = mask;
        return 0;
}

/* Is the key of @n bytes at @key the literal @lit? */
#define KEY_IS(key, n, lit) ((n) == sizeof(lit) - 1 && memcmp(key, lit, sizeof(lit) - 1) == 0)
/* Does it start with the literal @lit, and have more after it? */
#define KEY_HAS_PREFIX(key, n, lit) ((n) > sizeof(lit) - 1 && memcmp(key, lit, sizeof(lit) - 1) == 0)

/*
 * "key=value" tokens of one group line, separated by runs of spaces;
 * each key exactly once. One pass over each token finds its '=' and its
 * end, and keys are told apart by length and memcmp(): a restore parses
 * millions of them (strtok_r(), strchr() and strcmp() against every name
 * were half of the parse). A documented table: one branch per field of
 * the format (state-text.c's paragraph lists them).
 */
int parse_group_fields(CheckContext *ctx, unsigned line, char *rest, const StateRegions *known, StateUses *uses,
                       StateGroup *g) {
        enum { F_OWNER, F_MAX, F_HIGH, F_LOW, F_MIN, F_TRANSIENT, _F_MAX };
        static const char *const names[_F_MAX] = { "owner", "max", "high", "low", "min", "transient" };
        uint64_t *limits[] = { NULL, &g->limits.max, &g->limits.high, &g->limits.low, &g->limits.min, NULL };
        bool seen[_F_MAX] = {}, kept_seen[_MEM_STAT_MAX] = {}, delegator_seen[_MEM_STAT_MAX] = {};
        bool user_seen = false;
        RegionFields regions;
        char *p = rest;
        int r;

        regions.n = 0;
        for (;;) {
                char *tok, *eq = NULL;
                const char *key, *value;
                size_t klen;
                uint64_t v;
                int f;

                while (*p == ' ')
                        p++;
                if (!*p)
                        break;
                for (tok = p; *p && *p != ' '; p++)
                        if (!eq && *p == '=')
                                eq = p;
                if (*p)
                        *p++ = 0;
                if (!eq)
                        return check_fail(ctx, -EBADMSG, line, "'%.32s' is not key=value", tok);
                *eq = 0;
                key = tok;
                klen = (size_t) (eq - tok);
                value = eq + 1;
                if (KEY_HAS_PREFIX(key, klen, "kept.")) {
                        MemStatItem item = mem_stat_item_from_string(key + 5);

                        if (item < 0)
                                return check_fail(ctx, -EBADMSG, line, "unknown stat item '%.32s'", key + 5);
                        if (kept_seen[item])
                                return check_fail(ctx, -EBADMSG, line, "%s given twice", key);
                        if (parse_decimal(value, (uint64_t) MEM_COUNTER_MAX, &v) < 0)
                                return check_fail(ctx, -EBADMSG, line, "bad byte count for %s", key);
                        kept_seen[item] = true;
                        g->kept[item] = v;
                        continue;
                }
                if (KEY_HAS_PREFIX(key, klen, "dmem:")) {
                        r = parse_region_field(ctx, line, key, klen, value, known, &regions);
                        if (r < 0)
                                return r;
                        continue;
                }
                if (KEY_IS(key, klen, "user-limits")) {
                        /* Optional: files from before it have none. */
                        if (user_seen)
                                return check_fail(ctx, -EBADMSG, line, "%s given twice", key);
                        if (parse_user_limits(value, &g->user_limits) < 0)
                                return check_fail(ctx, -EBADMSG, line, "bad limit list for %s", key);
                        user_seen = true;
                        continue;
                }
                if (KEY_HAS_PREFIX(key, klen, "kept-delegator.")) {
                        MemStatItem item = mem_stat_item_from_string(key + 15);

                        if (item < 0)
                                return check_fail(ctx, -EBADMSG, line, "unknown stat item '%.32s'", key + 15);
                        if (delegator_seen[item])
                                return check_fail(ctx, -EBADMSG, line, "%s given twice", key);
                        if (parse_decimal(value, (uint64_t) MEM_COUNTER_MAX, &v) < 0)
                                return check_fail(ctx, -EBADMSG, line, "bad byte count for %s", key);
                        delegator_seen[item] = true;
                        g->kept_delegator[item] = v;
                        continue;
                }
                for (f = 0; f < _F_MAX; f++)
                        if (strlen(names[f]) == klen && memcmp(key, names[f], klen) == 0)
                                break;
                if (f == _F_MAX)
                        return check_fail(ctx, -EBADMSG, line, "unknown field '%.32s'", key);
                if (seen[f])
                        return check_fail(ctx, -EBADMSG, line, "%s given twice", key);
                seen[f] = true;
                if (f == F_OWNER) {
                        /* (uid_t) -1 is no uid. */
                        if (parse_decimal(value, UINT32_MAX - 1, &v) < 0)
                                return check_fail(ctx, -EBADMSG, line, "bad owner uid");
                        g->owner = (uid_t) v;
                } else if (f == F_TRANSIENT) {
                        /* Written as 1 only; 0 is what its absence says. */
                        if (strcmp(value, "1") != 0 && strcmp(value, "0") != 0)
                                return check_fail(ctx, -EBADMSG, line, "bad value for transient");
                        g->transient = value[0] == '1';
                } else if (value[0] == 'm' && value[1] == 'a' && value[2] == 'x' && !value[3])
                        /* "max" compared inline: four limits a line, and the
                         * strcmp() calls were 4% of a million-group check. */
                        *limits[f] = UINT64_MAX;
                else if (parse_decimal(value, UINT64_MAX, limits[f]) < 0)
                        return check_fail(ctx, -EBADMSG, line, "bad value for %s", key);
        }
        /* transient is optional: older files do not have it. */
        for (int f = 0; f < F_TRANSIENT; f++)
                if (!seen[f])
                        return check_fail(ctx, -EBADMSG, line, "%s missing", names[f]);
        for (MemStatItem i = 0; i < _MEM_STAT_MAX; i++)
                if (g->kept_delegator[i] > g->kept[i])
                        return check_fail(ctx, -EBADMSG, line, "kept-delegator.%s is more than kept.%s",
                                          mem_stat_item_to_string(i), mem_stat_item_to_string(i));
        g->limits.set = MEM_LIMIT_MAX | MEM_LIMIT_HIGH | MEM_LIMIT_LOW | MEM_LIMIT_MIN;
        return region_fields_finish(ctx, line, &regions, uses, g);
}

/* Is @parent the parent path of @path? */
static bool is_parent(const char *parent, const char *path) {
        const char *slash = strrchr(path, '/');
        size_t n = (size_t) (slash - path);

        if (n == 0)
                return strcmp(parent, "/") == 0;
        return strlen(parent) == n && memcmp(parent, path, n) == 0;
}

/*
 * The frame of the file: the header, no NUL, a complete last line, and
 * the trailer's group count and checksum matching what precedes it; the
 * region lines, which lead, are not groups.
 * Return: the group count, with the offset of the first group line in
 * *@ret_groups_at and of the trailer in *@ret_end; -EBADMSG with ctx's
 * message.
 */
static long state_check_frame(char *text, size_t size, size_t *ret_groups_at, size_t *ret_end,
                              CheckContext *ctx) {
        char trailer[128], want[128], *end_line;
        size_t end_at, groups_at, n, groups = 0;

        if (size < STATE_HEADER_SIZE ||
            (memcmp(text, STATE_HEADER_1, STATE_HEADER_SIZE) != 0 &&
             memcmp(text, STATE_HEADER_2, STATE_HEADER_SIZE) != 0))
                return check_fail(ctx, -EBADMSG, 0,
                                  "not a memacctd state file (header is not \"memacctd-state 1\" or 2)");
        if (memchr(text, 0, size))
                return check_fail(ctx, -EBADMSG, 0, "NUL byte in the file");
        if (text[size - 1] != '\n')
                return check_fail(ctx, -EBADMSG, 0, "truncated: the last line is incomplete");
        /* The trailer is the last line. */
        text[size - 1] = 0;
        end_line = strrchr(text, '\n');
        text[size - 1] = '\n';
        end_at = end_line ? (size_t) (end_line - text) + 1 : 0;
        if (end_at < STATE_HEADER_SIZE || strncmp(text + end_at, "end ", 4) != 0)
                return check_fail(ctx, -EBADMSG, 0, "truncated: no \"end\" trailer");

        /* The region lines, then the group lines: all the others before
         * the trailer, whatever they hold, for the expected trailer. */
        for (groups_at = STATE_HEADER_SIZE; groups_at < end_at && strncmp(text + groups_at, "region ", 7) == 0;)
                groups_at = (size_t) ((char *) memchr(text + groups_at, '\n', end_at - groups_at) - text) + 1;
        if (groups_at > STATE_HEADER_SIZE && memcmp(text, STATE_HEADER_1, STATE_HEADER_SIZE) == 0)
                return check_fail(ctx, -EBADMSG, 2, "a region line in a version 1 state");
        for (const char *p = text + groups_at, *e = text + end_at; (p = memchr(p, '\n', (size_t) (e - p))); p++)
                groups++;
        snprintf(want, sizeof(want), "end %zu fnv1a64=%016" PRIx64, groups, fnv1a64(text, end_at));
        n = size - end_at - 1;
        if (n >= sizeof(trailer))
                return check_fail(ctx, -EBADMSG, 0, "malformed trailer");
        memcpy(trailer, text + end_at, n);
        trailer[n] = 0;
        if (strcmp(trailer, want) != 0)
                return check_fail(ctx, -EBADMSG, 0,
                                  "checksum or group count mismatch (trailer \"%.64s\", content gives \"%s\")",
                                  trailer, want);
        *ret_groups_at = groups_at;
        *ret_end = end_at;
        return (long) MIN(groups, (size_t) LONG_MAX);
}

/*
 * The region lines from the header to @groups_at into @st's regions.
 * Return: the line number of the first group; -EBADMSG.
 */
static int state_parse_regions(char *text, size_t groups_at, State *st, CheckContext *ctx) {
        unsigned line = 2;
        char *nl;
        int r;

        for (size_t pos = STATE_HEADER_SIZE; pos < groups_at; pos = (size_t) (nl - text) + 1, line++) {
                nl = memchr(text + pos, '\n', groups_at - pos);
                *nl = 0;
                r = parse_region_line(ctx, line, text + pos + 7, &st->regions);
                if (r < 0)
                        return r;
        }
        return (int) line;
}

/* Is the group at @depth, below @owners[0..depth-1], delegated by none of them? */
static bool delegation_root(const uid_t *owners, unsigned depth) {
        if (depth == 0 || owners[depth] == 0)
                return false;
        for (unsigned i = 0; i < depth; i++)
                if (owners[i] == owners[depth])
                        return false;
        return true;
}

/*
 * Of all kept charges, @add more: the root's counter holds them all, and
 * a state whose sum it cannot hold would fail its restore. @total is at
 * most MEM_COUNTER_MAX, @add too (parse_group_fields()): no overflow.
 */
static bool kept_fits(uint64_t *total, uint64_t add) {
        *total += add;
        return *total <= (uint64_t) MEM_COUNTER_MAX;
}

/*
 * The group lines from @groups_at (line @line) to the trailer at
 * @end_at, into @st (room for @count): each "group PATH key=value...", in
 * pre-order. Return: 0 with the deepest depth in *@ret_deepest; -EBADMSG.
 */
static int state_parse_groups(char *text, size_t groups_at, unsigned line, size_t end_at, size_t count, State *st,
                              unsigned *ret_deepest, CheckContext *ctx) {
        const char *stack[256];
        uid_t owners[256]; /* of the groups in stack */
        uint64_t kept_total = 0, region_kept[MEM_REGION_MAX - 1] = {};
        unsigned top = 0, deepest = 0;
        char *nl;
        int r;

        for (size_t pos = groups_at; pos < end_at; pos = (size_t) (nl - text) + 1, line++) {
                char *p, *path, *rest;
                StateGroup *g;
                bool droot;
                int depth;

                nl = memchr(text + pos, '\n', end_at - pos);
                *nl = 0;
                p = text + pos;
                if (strncmp(p, "region ", 7) == 0)
                        return check_fail(ctx, -EBADMSG, line, "a region line after the groups");
                if (strncmp(p, "group ", 6) != 0)
                        return check_fail(ctx, -EBADMSG, line, "expected a \"group\" line");
                path = p + 6;
                rest = strchr(path, ' ');
                if (!rest)
                        return check_fail(ctx, -EBADMSG, line, "no fields after the path");
                *rest++ = 0;
                depth = mem_path_check(path, 255, NULL);
                if (depth < 0)
                        return check_fail(ctx, -EBADMSG, line, "invalid group path '%.64s'", path);
                if ((st->n == 0) != (depth == 0))
                        return check_fail(ctx, -EBADMSG, line,
                                          st->n == 0 ? "the first group is not /" : "/ given twice");
                /* Pre-order: a group's parent is the last group seen one
                 * level up, and nothing deeper than that is still open. */
                if (depth > 0 && ((unsigned) depth > top + 1 || !is_parent(stack[depth - 1], path)))
                        return check_fail(ctx, -EBADMSG, line, "'%.64s' does not follow its parent", path);
                stack[depth] = path;
                top = (unsigned) depth;
                deepest = MAX(deepest, (unsigned) depth);
                if (st->n >= count)
                        return check_fail(ctx, -EBADMSG, line, "more groups than the trailer says");
                g = &st->groups[st->n];
                g->path = path;
                r = parse_group_fields(ctx, line, rest, &st->regions, &st->uses, g);
                if (r < 0)
                        return r;
                owners[depth] = g->owner;
                /* Only a delegation root (delegated to its owner by no
                 * ancestor) has a delegator's part. */
                droot = delegation_root(owners, (unsigned) depth);
                for (MemStatItem i = 0; i < _MEM_STAT_MAX; i++) {
                        if (!droot && g->kept_delegator[i] > 0)
                                return check_fail(ctx, -EBADMSG, line,
                                                  "kept-delegator.%s on a group that is not a delegation root",
                                                  mem_stat_item_to_string(i));
                        if (!kept_fits(&kept_total, g->kept[i]))
                                return check_fail(ctx, -EBADMSG, line, "the kept charges add up to more than %" PRIu64
                                                  " bytes", (uint64_t) MEM_COUNTER_MAX);
                }
                r = state_check_group_regions(&st->regions, g, depth == 0, droot, line, region_kept, ctx);
                if (r < 0)
                        return r;
                st->n++;
        }
        if (st->n != count)
                return check_fail(ctx, -EBADMSG, 0, "group count mismatch");
        *ret_deepest = deepest;
        return 0;
}

/*
 * Siblings repeated far apart pass the pre-order check: an open-addressing
 * set of the paths (linear probing) finds them in one pass. An entry is a
 * path's index + 1 (0: empty; st->n <= max_groups <= 2^24) in its low
 * half and 32 bits of its hash in the high half, so that a probe compares
 * paths only when the hashes agree. Written here rather than taken from
 * a library: it lives for one call, and sorting a copy of a million
 * groups was a fifth of a restore.
 */
static int state_check_unique(const State *st, CheckContext *ctx) {
        /* Hashes are taken this many paths ahead and their entries
         * prefetched: the set is larger than the caches, and each probe
         * would otherwise wait for memory. */
        enum { AHEAD = 16 };
        const uint64_t high = UINT64_C(0xffffffff00000000);
        _cleanup_free_ uint64_t *set = NULL;
        uint64_t hashes[AHEAD];
        size_t cap = 64;

        while (cap < st->n * 2)
                cap <<= 1;
        set = calloc(cap, sizeof(*set));
        if (!set)
                return -ENOMEM;
        for (size_t i = 0; i < st->n + AHEAD; i++) {
                /* Path i - AHEAD goes in, with the hash of its ring slot,
                 * which path i then takes. */
                if (i >= AHEAD) {
                        const char *path = st->groups[i - AHEAD].path;
                        uint64_t h = hashes[i % AHEAD];
                        size_t at = (size_t) (h ^ (h >> 32)) & (cap - 1);

                        for (; set[at]; at = (at + 1) & (cap - 1))
                                if ((set[at] & high) == (h & high) &&
                                    strcmp(st->groups[(uint32_t) set[at] - 1].path, path) == 0)
                                        return check_fail(ctx, -EBADMSG, 0, "group '%.64s' given twice", path);
                        set[at] = (h & high) | ((uint64_t) (i - AHEAD) + 1);
                }
                if (i < st->n) {
                        uint64_t h = fnv1a64(st->groups[i].path, strlen(st->groups[i].path));

                        hashes[i % AHEAD] = h;
                        __builtin_prefetch(&set[(size_t) (h ^ (h >> 32)) & (cap - 1)]);
                }
        }
        return 0;
}

/*
 * Parse and check all of @text into @ret. The caller's copy of the text is
 * taken over (and cut into strings) on success and failure alike.
 */
int state_parse(char *text, size_t size, unsigned max_depth, unsigned max_groups, State *ret,
                       CheckContext *ctx) {
        State st = { .text = text };
        unsigned deepest = 0, line = 0;
        size_t end_at = 0, groups_at = 0;
        long count;
        int r;

        count = state_check_frame(text, size, &groups_at, &end_at, ctx);
        r = count < 0 ? (int) count : 0;
        if (r >= 0 && (size_t) count > max_groups)
                r = check_fail(ctx, -ENOSPC, 0, "holds %ld groups, more than the configured [limits] groups = %u",
                               count, max_groups);
        if (r >= 0 && count == 0)
                r = check_fail(ctx, -EBADMSG, 0, "no root group");
        if (r >= 0 && !(st.groups = calloc((size_t) count, sizeof(StateGroup))))
                r = -ENOMEM;
        if (r >= 0)
                r = state_parse_regions(text, groups_at, &st, ctx);
        if (r >= 0) {
                line = (unsigned) r;
                r = state_parse_groups(text, groups_at, line, end_at, (size_t) count, &st, &deepest, ctx);
        }
        if (r >= 0)
                r = state_check_unique(&st, ctx);
        if (r >= 0 && deepest > max_depth)
                r = check_fail(ctx, -EMLINK, 0, "holds groups %u deep, more than the configured [limits] depth = %u",
                               deepest, max_depth);
        if (r < 0) {
                state_done(&st);
                return ctx->oom ? -ENOMEM : r;
        }
        *ret = st;
        return 0;
}

int persist_check(const char *text, size_t size, unsigned max_depth, unsigned max_groups, char **ret_error) {
        CheckContext ctx = {};
        State st;
        char *copy;
        int r;

        if (ret_error)
                *ret_error = NULL;
        copy = malloc(size + 1);
        if (!copy)
                return -ENOMEM;
        if (size > 0)
                memcpy(copy, text, size);
        copy[size] = 0;
        r = state_parse(copy, size, max_depth, max_groups, &st, &ctx);
        if (r >= 0) {
                r = (int) MIN(st.n, (size_t) INT32_MAX);
                state_done(&st);
        }
        if (ret_error)
                *ret_error = ctx.error;
        else
                free(ctx.error);
        return r;
}
