/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * What the parts of the state file share: state-text.c (the text:
 * format, parse, check), state-regions.c (the device regions in it),
 * state-dir.c (the directory: restore, save, the room for the next save)
 * and journal.c (the changes since the state).
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "core/core.h"
#include "core/group.h"
#include "core/model.h"
#include "state/persist.h"

#define JOURNAL_HEADER "memacctd-journal 1\n"
#define JOURNAL_TMP "journal.tmp"
#define STATE_TMP "state.tmp"
#define STATE_OLD_TMP "state.old.tmp"

/* A device region as a state names it: "region NAME capacity=BYTES|max". */
typedef struct StateRegion {
        const char *name;  /* into the text it was parsed from, or a StateRegionSnapshot */
        uint64_t capacity; /* UINT64_MAX: max */
} StateRegion;

/* The device regions of a state, in file order ("memory" is none of them). */
typedef struct StateRegions {
        StateRegion v[MEM_REGION_MAX - 1];
        unsigned n;
} StateRegions;

/*
 * A group's part in one device region: the dmem:NAME.* fields of its
 * line. In a parsed State, @region is the StateRegion's own pointer, so
 * that a use finds its region by comparing pointers.
 */
typedef struct StateRegionUse {
        const char *region;
        MemLimits limits;              /* @set: the limits given; the others are at their defaults */
        uint64_t kept, kept_delegator; /* kept_delegator <= kept */
} StateRegionUse;

/* Where the StateRegionUse arrays of many groups live, freed together (state_uses_done()). */
typedef struct StateUseBlock StateUseBlock;
typedef struct StateUses {
        StateUseBlock *blocks;
} StateUses;

typedef struct StateGroup {
        char *path;
        uid_t owner;
        MemLimits limits; /* all four */
        unsigned user_limits; /* MemLimitMask: those a user set on a mirror (group_user_limits()) */
        uint64_t kept[_MEM_STAT_MAX];
        uint64_t kept_delegator[_MEM_STAT_MAX]; /* of kept, the delegator's */
        bool transient; /* "transient=1": removed once empty after its creator is gone */
        StateRegionUse *regions; /* its device regions with a field on its line; NULL when none */
        unsigned nr_regions;
} StateGroup;

typedef struct State {
        StateGroup *groups;
        size_t n;
        char *text; /* the paths and region names point into a copy of the file */
        StateRegions regions;
        StateUses uses; /* the groups' region arrays */
} State;


typedef struct CheckContext {
        char *error;
        bool oom;
} CheckContext;

uint64_t fnv1a64(const char *p, size_t n);

/* Text that grows; @oom once an allocation failed (then nothing more is added). */
typedef struct TextBuf {
        char *p;
        size_t len, cap;
        bool oom;
} TextBuf;

void text_printf(TextBuf *b, const char *format, ...) __attribute__((format(printf, 2, 3)));

/*
 * The device regions a save writes, read from the core before its groups
 * (state_region_snapshot()): each with its key, for the reads of each
 * group's part.
 */
typedef struct StateRegionSnapshot {
        StateRegions set; /* names point into @names */
        int keys[MEM_REGION_MAX - 1];
        char names[MEM_REGION_MAX - 1][MEM_REGION_NAME_MAX + 1];
} StateRegionSnapshot;

/**
 * state_region_snapshot() - the regions registered in @core now, as the
 * root's counters list them (a region being removed included). A region
 * in the middle of a removal has no key to read its delegator's part by:
 * waits until the removal is over, or SNAPSHOT_WAIT_MSEC. Not in
 * core_read_lock().
 */
void state_region_snapshot(MemCore *core, StateRegionSnapshot *ret);

/** state_region_snapshot_same() - do @a and @b name the same regions with the same capacities? */
bool state_region_snapshot_same(const StateRegionSnapshot *a, const StateRegionSnapshot *b);

/**
 * state_group_of() - what the state keeps of @g (its path points into
 * @g): of its device regions, those of @snap only, into @uses (room for
 * MEM_REGION_MAX - 1). Under core_read_lock().
 */
void state_group_of(MemCore *core, MemGroup *g, const StateRegionSnapshot *snap, StateRegionUse *uses,
                    StateGroup *ret);

/** text_group_line() - @sg's line as the state file has it, after @prefix ("group "). */
void text_group_line(TextBuf *b, const char *prefix, const StateGroup *sg);

/** text_region_lines() - a line for each of @regions, each after @prefix ("region "). */
void text_region_lines(TextBuf *b, const char *prefix, const StateRegions *regions);

/** text_region_fields() - the dmem:NAME.* fields of @sg, each with a space before it. */
void text_region_fields(TextBuf *b, const StateGroup *sg);

/** state_uses_alloc() - room for @n uses in @u. Return: NULL when out of memory. */
StateRegionUse *state_uses_alloc(StateUses *u, unsigned n);

/** state_uses_done() - free every array @u gave out. */
void state_uses_done(StateUses *u);

/** state_regions_find() - the index of @name in @regions, by content; -1 when not there. */
int state_regions_find(const StateRegions *regions, const char *name);

/** state_format() - @st as a complete state file (the header, its groups in its order, the trailer). */
int state_format(const State *st, char **ret, size_t *ret_size);

/** check_fail() - set @ctx's error ("line N: ...", or without a line for 0). Return: @r, or -ENOMEM. */
int check_fail(CheckContext *ctx, int r, unsigned line, const char *format, ...) __attribute__((format(printf, 4, 5)));

/*
 * The dmem:NAME.* fields of one group line as they are read, before
 * parse_group_fields() has seen them all. Not zeroed: @n says what is
 * used (a restore reads millions of lines, most with no region).
 */
typedef struct RegionFields {
        StateRegionUse v[MEM_REGION_MAX - 1];
        uint8_t seen[MEM_REGION_MAX - 1]; /* the fields given, by bit (region_field_names) */
        unsigned n;
} RegionFields;

/**
 * parse_group_fields() - the "key=value" fields of a group line (@rest,
 * cut in place) into @g; its dmem:NAME.* fields must name a region of
 * @known, and their arrays come from @uses.
 */
int parse_group_fields(CheckContext *ctx, unsigned line, char *rest, const StateRegions *known, StateUses *uses,
                       StateGroup *g);

/**
 * parse_region_field() - one field "dmem:NAME.ATTR" (@key, NUL-terminated
 * at its '=') = @value into @acc, NAME being one of @known. The key is
 * split at its last '.': a name may hold dots, an attribute does not.
 * Return: 0; -EBADMSG with @ctx's error.
 */
int parse_region_field(CheckContext *ctx, unsigned line, const char *key, size_t klen, const char *value,
                       const StateRegions *known, RegionFields *acc);

/**
 * region_fields_finish() - check what @acc gathered across fields
 * (kept-delegator at most kept) and give @g its copy from @uses.
 * Return: 0; -EBADMSG; -ENOMEM.
 */
int region_fields_finish(CheckContext *ctx, unsigned line, const RegionFields *acc, StateUses *uses,
                         StateGroup *g);

/**
 * parse_region_line() - "NAME capacity=BYTES|max" (@rest, what follows
 * "region ", cut in place) appended to @regions: a valid name, not
 * "memory", not already there, room for it. Return: 0; -EBADMSG.
 */
int parse_region_line(CheckContext *ctx, unsigned line, char *rest, StateRegions *regions);

/**
 * state_check_group_regions() - the checks of @g's region fields that
 * need its place in the tree: no max on the root (@root: its max in a
 * region is the capacity), a delegator's part on a @delegation_root only,
 * and the kept charges of each region of @regions (@g's uses point to
 * their names) adding up, in @kept_totals, to what a counter can hold.
 * Return: 0; -EBADMSG with @ctx's error.
 */
int state_check_group_regions(const StateRegions *regions, const StateGroup *g, bool root, bool delegation_root,
                              unsigned line, uint64_t *kept_totals, CheckContext *ctx);

/** parse_decimal() - decimal digits up to @max into @ret. Return: 0, -EINVAL. */
int parse_decimal(const char *s, uint64_t max, uint64_t *ret);

/** state_done() - free what state_parse() made. */
void state_done(State *s);

/**
 * state_parse() - check @text (@size bytes, NUL-terminated, modified in
 * place) completely and parse its groups into @ret, whose paths point
 * into @text. Return: 0; -EBADMSG, -EMLINK, -ENOSPC with @ctx's error;
 * -ENOMEM.
 */
int state_parse(char *text, size_t size, unsigned max_depth, unsigned max_groups, State *ret,
                CheckContext *ctx);

typedef struct JournalInfo {
        unsigned batches; /* applied */
        bool torn;        /* it ends in a batch without its commit line: a save cut short */
        bool damaged;     /* a batch did not match its commit line: the rest is ignored */
} JournalInfo;

/**
 * journal_replay() - apply the journal @text (@size bytes, NUL-terminated,
 * cut in place; the caller keeps it) to @st, which is replaced by the
 * result, checked as a state file is (state_parse()). Return: 0 with
 * @info (a torn or damaged journal still replays what came before, and
 * @ctx says where it stopped); -EBADMSG (not a journal, or the result is
 * not a valid state), -EMLINK, -ENOSPC, -ENOMEM, with @ctx; @st is then
 * unchanged.
 */
int journal_replay(State *st, char *text, size_t size, unsigned max_depth, unsigned max_groups,
                   JournalInfo *info, CheckContext *ctx);
