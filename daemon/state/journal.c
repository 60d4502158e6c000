/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The journal: what changed since the state file, one batch per save
 *
 * A save that need not rewrite the whole state appends one batch to
 * <dir>/journal: a line for each group that changed (and each of its
 * ancestors), then a commit line with the batch's record count and the
 * FNV-1a hash of its bytes:
 *
 *         memacctd-journal 1
 *         set /a owner=1000 max=1073741824 high=max low=0 min=0 kept.anon=8192
 *         del /b
 *         commit 2 fnv1a64=<16 hex digits>
 *         region gpu0 capacity=85899345920
 *         set /g owner=0 max=max high=max low=0 min=0 dmem:gpu0.kept=4096
 *         commit 2 fnv1a64=<16 hex digits>
 *
 * A "set" line is the group's whole state as the state file has it (the
 * same fields), read when the batch is written; "del" says the group (and
 * so everything below it) is gone. Records are whole states, not
 * differences: replaying one twice, or over a state that already holds
 * it, changes nothing, so the journal may be replayed over any state at
 * least as old as its first batch.
 *
 * Why the ancestors too: a change's group is looked up when the batch is
 * written, not when the change was made, so a parent created by a request
 * whose commit came later than its child's could miss the child's batch;
 * writing every ancestor's state with the child keeps each batch whole.
 * Because groups are read one after another while others change, a batch
 * may still say a group exists under a parent it says is gone (the child
 * was removed between the two reads, and its "del" is in the next
 * batch). Replay drops such orphans: a parent can only go after its
 * children, so the child's removal had happened.
 *
 * Device regions. A batch opens with a "region NAME capacity=..." record
 * for every region registered when it was written (none: there were
 * none), read before its groups, and its "set" records name no other
 * (state-regions.c); replay takes the batch's regions as the set there is
 * from then on: a region it lacks was removed, and the groups' parts in
 * it go as the core drops them. A region's registration and removal are
 * saved whole (a new state, an empty journal), so a journal holds none of
 * them but those the saver had not yet saved whole when a batch was
 * written: a change in a region registered a moment before is covered by
 * the batch that saves it (the region is in the batch), and a region
 * removed a moment before is gone from it, as from the core. Either way
 * the batch is whole on its own, and the whole save that follows
 * supersedes it. A save that saw the regions change while it read its
 * groups reads them again (persist_format() does the same).
 *
 * Replay stops at the first batch without its commit line (the end of a
 * save cut short: none of its OKs was sent) or whose hash or count does
 * not match, or with a record that is not valid (damage: said so, and the
 * rest is ignored); a batch is applied whole or not at all. The result is
 * written out as a state file's text and checked by state_parse(), the
 * one validator of what is restored.
 */

#include <errno.h>
#include <inttypes.h>
#include <search.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"
#include "state/persist-internal.h"

/* A batch reads its regions again when they changed while it was written, this often at most. */
#define BATCH_TRIES 3

/* Paths in pre-order: component by component, '/' before every other byte. */
static int preorder_cmp(const char *a, const char *b) {
        for (;; a++, b++) {
                unsigned ca = *a == '/' ? 1 : (unsigned char) *a, cb = *b == '/' ? 1 : (unsigned char) *b;

                if (ca != cb || ca == 0)
                        return (int) ca - (int) cb;
        }
}

static int preorder_qsort(const void *a, const void *b) {
        return preorder_cmp(*(char *const *) a, *(char *const *) b);
}

/* ---- writing a batch ---- */

/* @paths and every ancestor of each but the root, sorted, once each; malloc'ed copies. */
static int batch_paths(const char *const *paths, size_t n, char ***ret, size_t *ret_n) {
        size_t cap = 0, m = 0;
        char **v = NULL;
        int r = 0;

        for (size_t i = 0; i < n && r >= 0; i++)
                for (const char *s = paths[i]; s && r >= 0; s = strchr(s + 1, '/')) {
                        size_t len = strchr(s + 1, '/') ? (size_t) (strchr(s + 1, '/') - paths[i])
                                                         : strlen(paths[i]);

                        if (m == cap) {
                                char **p = realloc(v, (cap = MAX(cap * 2, (size_t) 16)) * sizeof(char *));

                                if (!p) {
                                        r = -ENOMEM;
                                        break;
                                }
                                v = p;
                        }
                        v[m] = strndup(paths[i], len);
                        if (!v[m]) {
                                r = -ENOMEM;
                                break;
                        }
                        m++;
                        if (strcmp(paths[i], "/") == 0)
                                break;
                }
        if (r < 0) {
                for (size_t i = 0; i < m; i++)
                        free(v[i]);
                free(v);
                return r;
        }
        if (m > 0)
                qsort(v, m, sizeof(char *), preorder_qsort);
        /* Once each. */
        size_t k = 0;
        for (size_t i = 0; i < m; i++) {
                if (k > 0 && strcmp(v[k - 1], v[i]) == 0)
                        free(v[i]);
                else
                        v[k++] = v[i];
        }
        *ret = v;
        *ret_n = k;
        return 0;
}

int persist_journal_batch(MemCore *core, const char *const *paths, size_t n, char **ret, size_t *ret_size) {
        StateRegionSnapshot before, after;
        StateRegionUse uses[MEM_REGION_MAX - 1];
        TextBuf b = {};
        char **v = NULL;
        size_t m = 0;
        int r;

        r = batch_paths(paths, n, &v, &m);
        if (r < 0)
                return r;
        /* As persist_format(): the regions before and after the groups,
         * read again when a removal came between. */
        for (unsigned tries = 1;; tries++) {
                state_region_snapshot(core, &before);
                b.len = 0;
                text_region_lines(&b, "region ", &before.set);
                for (size_t i = 0; i < m; i++) {
                        MemGroup *g = NULL;

                        if (group_get(core, v[i], &g) >= 0) {
                                StateGroup sg;

                                state_group_of(core, g, &before, uses, &sg);
                                text_group_line(&b, "set ", &sg);
                                group_unref(g);
                        } else
                                text_printf(&b, "del %s\n", v[i]);
                }
                if (b.oom || tries == BATCH_TRIES)
                        break;
                state_region_snapshot(core, &after);
                if (state_region_snapshot_same(&before, &after))
                        break;
        }
        for (size_t i = 0; i < m; i++)
                free(v[i]);
        free(v);
        if (!b.oom)
                text_printf(&b, "commit %zu fnv1a64=%016" PRIx64 "\n", m + before.set.n, fnv1a64(b.p, b.len));
        if (b.oom) {
                free(b.p);
                return -ENOMEM;
        }
        *ret = b.p;
        *ret_size = b.len;
        return 0;
}

/* ---- replay ---- */

typedef struct Replay {
        StateGroup *v; /* the groups; path NULL: deleted */
        size_t n, cap;
        void *index;   /* tsearch() of the indices + 1 into v, by path */
        StateRegions regions; /* the regions as of the last batch */
        StateUses uses;       /* the region arrays of the groups its batches set */
} Replay;

static Replay *cmp_replay; /* tsearch() compares through it; one replay at a time */

static int index_cmp(const void *a, const void *b) {
        return strcmp(cmp_replay->v[(uintptr_t) a - 1].path, cmp_replay->v[(uintptr_t) b - 1].path);
}

static StateGroup *replay_find(Replay *rp, const char *path) {
        void **p;

        /* A key: the slot past the end holds the path looked for. */
        rp->v[rp->n].path = (char *) path;
        cmp_replay = rp;
        p = tfind((void *) (uintptr_t) (rp->n + 1), &rp->index, index_cmp);
        return p ? &rp->v[(uintptr_t) *p - 1] : NULL;
}

/* Room for one more, and for the look-up key past the end. */
static int replay_grow(Replay *rp) {
        StateGroup *p;
        size_t cap;

        if (rp->n + 2 <= rp->cap)
                return 0;
        cap = MAX(rp->cap * 2, (size_t) 64);
        p = realloc(rp->v, cap * sizeof(StateGroup));
        if (!p)
                return -ENOMEM;
        rp->v = p;
        rp->cap = cap;
        return 0;
}

static int replay_set(Replay *rp, const StateGroup *sg) {
        StateGroup *old;
        int r;

        r = replay_grow(rp);
        if (r < 0)
                return r;
        old = replay_find(rp, sg->path);
        if (old) {
                *old = *sg;
                return 0;
        }
        rp->v[rp->n] = *sg;
        cmp_replay = rp;
        if (!tsearch((void *) (uintptr_t) (rp->n + 1), &rp->index, index_cmp))
                return -ENOMEM;
        rp->n++;
        return 0;
}

/* @path and everything below it. The index keeps pointing at the slots;
 * a deleted slot is skipped when the state is written, and revived by a
 * later "set" of the same path through the index. */
static void replay_del(Replay *rp, const char *path) {
        size_t len = strlen(path);

        for (size_t i = 0; i < rp->n; i++) {
                const char *p = rp->v[i].path;

                if (p && strncmp(p, path, len) == 0 && (p[len] == 0 || p[len] == '/' || len == 1))
                        rp->v[i].owner = (uid_t) -1; /* gone */
        }
}

static void no_free(void *p) {
        (void) p;
}

static void replay_done(Replay *rp) {
        state_uses_done(&rp->uses);
        tdestroy(rp->index, no_free);
        free(rp->v);
        *rp = (Replay) {};
}

/*
 * A batch names every region there was when it was written (@incoming):
 * one of the replay's it does not name, or names with another capacity
 * (removed and registered again), was removed, and every group's part in
 * it with it, as core_region_remove() drops them. The groups' arrays are
 * shared with the state replayed over, which must stay as it was should
 * the replay fail: those that change are copied.
 */
static int replay_regions(Replay *rp, const StateRegions *incoming) {
        bool gone[MEM_REGION_MAX - 1] = {}, any = false;

        for (unsigned i = 0; i < rp->regions.n; i++) {
                int k = state_regions_find(incoming, rp->regions.v[i].name);

                gone[i] = k < 0 || incoming->v[k].capacity != rp->regions.v[i].capacity;
                any = any || gone[i];
        }
        for (size_t i = 0; any && i < rp->n; i++) {
                StateGroup *g = &rp->v[i];
                StateRegionUse *kept;
                unsigned n = 0;

                for (unsigned k = 0; k < g->nr_regions; k++) {
                        int at = state_regions_find(&rp->regions, g->regions[k].region);

                        n += at >= 0 && !gone[at];
                }
                if (n == g->nr_regions)
                        continue;
                kept = n > 0 ? state_uses_alloc(&rp->uses, n) : NULL;
                if (n > 0 && !kept)
                        return -ENOMEM;
                n = 0;
                for (unsigned k = 0; k < g->nr_regions; k++) {
                        int at = state_regions_find(&rp->regions, g->regions[k].region);

                        if (at >= 0 && !gone[at])
                                kept[n++] = g->regions[k];
                }
                g->regions = kept;
                g->nr_regions = n;
        }
        rp->regions = *incoming;
        return 0;
}

/* A record of a batch, parsed: a group's state, or its removal (@del; @sg's path only). */
typedef struct Record {
        bool del;
        StateGroup sg;
} Record;

/*
 * One batch: the records from @start to the commit line at @commit
 * (which ends at @commit_end, a NUL there), applied if its count and hash
 * match and every record is valid, and then only: a batch is applied
 * whole or not at all. The record lines are cut in place once hashed.
 * Return: 0; -EBADMSG (damaged) with @ctx; -ENOMEM.
 */
static int replay_batch(Replay *rp, char *text, size_t start, size_t commit, unsigned first_line,
                        CheckContext *ctx) {
        _cleanup_free_ Record *recs = NULL;
        StateRegions incoming = {};
        char want[64], *end;
        size_t lines = 0, n = 0;
        unsigned long long count;
        unsigned line = first_line;
        int r;

        snprintf(want, sizeof(want), "fnv1a64=%016" PRIx64, fnv1a64(text + start, commit - start));
        count = strtoull(text + commit + 7, &end, 10);
        if (*end != ' ' || strcmp(end + 1, want) != 0)
                return check_fail(ctx, -EBADMSG, first_line, "a batch whose commit line does not match it");
        for (const char *p = text + start; (p = memchr(p, '\n', (size_t) (text + commit - p))); p++)
                lines++;
        if (lines != count)
                return check_fail(ctx, -EBADMSG, first_line, "a batch of %zu records whose commit says %llu",
                                  lines, count);
        recs = malloc(MAX(lines, (size_t) 1) * sizeof(Record));
        if (!recs)
                return -ENOMEM;
        for (size_t pos = start; pos < commit; line++) {
                char *p = text + pos, *nl = memchr(p, '\n', commit - pos), *rest;

                *nl = 0;
                pos = (size_t) (nl - text) + 1;
                /* The regions first, the groups after them. */
                if (strncmp(p, "region ", 7) == 0) {
                        if (n > 0)
                                return check_fail(ctx, -EBADMSG, line, "a region record after a group's");
                        r = parse_region_line(ctx, line, p + 7, &incoming);
                        if (r < 0)
                                return r;
                        continue;
                }
                if (strncmp(p, "del ", 4) == 0) {
                        if (mem_path_check(p + 4, 255, NULL) < 0)
                                return check_fail(ctx, -EBADMSG, line, "invalid group path");
                        recs[n++] = (Record) { .del = true, .sg.path = p + 4 };
                        continue;
                }
                if (strncmp(p, "set ", 4) != 0 || !(rest = strchr(p + 4, ' ')))
                        return check_fail(ctx, -EBADMSG, line, "expected a \"set\", \"del\" or \"region\" record");
                *rest++ = 0;
                if (mem_path_check(p + 4, 255, NULL) < 0)
                        return check_fail(ctx, -EBADMSG, line, "invalid group path");
                recs[n] = (Record) { .sg.path = p + 4 };
                r = parse_group_fields(ctx, line, rest, &incoming, &rp->uses, &recs[n].sg);
                if (r < 0)
                        return r;
                n++;
        }
        r = replay_regions(rp, &incoming);
        for (size_t i = 0; i < n && r >= 0; i++)
                if (recs[i].del)
                        replay_del(rp, recs[i].sg.path);
                else
                        r = replay_set(rp, &recs[i].sg);
        return r;
}

static int live_qsort(const void *a, const void *b) {
        return preorder_cmp(((const StateGroup *) a)->path, ((const StateGroup *) b)->path);
}

static unsigned path_depth(const char *p) {
        unsigned d = 0;

        if (p[1] == 0)
                return 0;
        for (; *p; p++)
                d += *p == '/';
        return d;
}

/* Is @parent the parent path of @path? */
static bool parent_of(const char *parent, const char *path) {
        const char *slash = strrchr(path, '/');
        size_t n = (size_t) (slash - path);

        if (n == 0)
                return strcmp(parent, "/") == 0;
        return strlen(parent) == n && memcmp(parent, path, n) == 0;
}

/* The live groups of @rp, in pre-order, without orphans, as a state's text. */
static int replay_format(Replay *rp, char **ret, size_t *ret_size) {
        _cleanup_free_ StateGroup *live = malloc(MAX(rp->n, (size_t) 1) * sizeof(StateGroup));
        const char *stack[256];
        State st = {};
        size_t n = 0;
        int top = -1;

        if (!live)
                return -ENOMEM;
        for (size_t i = 0; i < rp->n; i++)
                if (rp->v[i].owner != (uid_t) -1)
                        live[n++] = rp->v[i];
        qsort(live, n, sizeof(StateGroup), live_qsort);
        /* In pre-order a group's parent, if it is kept, is the last kept
         * group one level up (as state_parse() checks): anything else is
         * an orphan, dropped, and so are its descendants. */
        for (size_t i = 0; i < n; i++) {
                unsigned d = path_depth(live[i].path);

                if (d >= ELEMENTSOF(stack))
                        continue;
                if (d > 0 && (top < (int) d - 1 || !parent_of(stack[d - 1], live[i].path)))
                        continue;
                stack[d] = live[i].path;
                top = (int) d;
                live[st.n++] = live[i];
        }
        st.groups = live;
        st.regions = rp->regions;
        return state_format(&st, ret, ret_size);
}

int journal_replay(State *st, char *text, size_t size, unsigned max_depth, unsigned max_groups,
                   JournalInfo *info, CheckContext *ctx) {
        Replay rp = {};
        size_t pos, start;
        unsigned line = 2, first = 2;
        char *out = NULL;
        size_t out_size = 0;
        State replayed;
        bool loaded = false;
        int r = 0;

        *info = (JournalInfo) {};
        if (size < strlen(JOURNAL_HEADER) || memcmp(text, JOURNAL_HEADER, strlen(JOURNAL_HEADER)) != 0)
                return check_fail(ctx, -EBADMSG, 1, "not a memacctd journal");
        if (memchr(text, 0, size))
                return check_fail(ctx, -EBADMSG, 0, "NUL byte in the journal");
        start = pos = strlen(JOURNAL_HEADER);
        while (r >= 0 && pos < size) {
                char *nl = memchr(text + pos, '\n', size - pos);

                if (!nl)
                        break; /* an incomplete line: a save cut short */
                if (strncmp(text + pos, "commit ", 7) == 0) {
                        *nl = 0;
                        /* The state's groups, at the first batch only: a
                         * journal with none (the one a save leaves) costs
                         * nothing at a million groups. */
                        for (size_t i = 0; !loaded && i < st->n && r >= 0; i++)
                                r = replay_set(&rp, &st->groups[i]);
                        if (!loaded)
                                rp.regions = st->regions;
                        loaded = true;
                        if (r >= 0)
                                r = replay_batch(&rp, text, start, pos, first, ctx);
                        if (r < 0)
                                break;
                        info->batches++;
                        start = (size_t) (nl - text) + 1;
                        first = line + 1;
                }
                pos = (size_t) (nl - text) + 1;
                line++;
        }
        if (r == -EBADMSG) {
                info->damaged = true;
                r = 0; /* what came before stands */
        } else if (r >= 0 && start < size)
                info->torn = true;
        /* No batch in it: the result is @st as it came, which
         * state_parse() checked with the same limits (or the root alone);
         * formatting and checking it again would change nothing. */
        if (r >= 0 && !loaded) {
                replay_done(&rp);
                return 0;
        }
        if (r >= 0)
                r = replay_format(&rp, &out, &out_size);
        replay_done(&rp);
        if (r < 0)
                return r;
        r = state_parse(out, out_size, max_depth, max_groups, &replayed, ctx);
        if (r < 0)
                return r; /* state_parse() took @out */
        state_done(st);
        *st = replayed;
        return 0;
}

int persist_journal_check(const char *state, size_t state_size, const char *journal, size_t journal_size,
                          unsigned max_depth, unsigned max_groups, char **ret_error) {
        CheckContext ctx = {};
        JournalInfo info;
        char *s = NULL, *j = NULL;
        State st = {};
        int r;

        if (ret_error)
                *ret_error = NULL;
        s = malloc(state_size + 1);
        j = malloc(journal_size + 1);
        if (!s || !j) {
                free(s);
                free(j);
                return -ENOMEM;
        }
        memcpy(s, state, state_size);
        s[state_size] = 0;
        memcpy(j, journal, journal_size);
        j[journal_size] = 0;
        r = state_parse(s, state_size, max_depth, max_groups, &st, &ctx); /* takes @s */
        if (r >= 0)
                r = journal_replay(&st, j, journal_size, max_depth, max_groups, &info, &ctx);
        if (r >= 0)
                r = (int) MIN(st.n, (size_t) INT32_MAX);
        state_done(&st);
        free(j);
        if (ret_error)
                *ret_error = ctx.error;
        else
                free(ctx.error);
        return r;
}
