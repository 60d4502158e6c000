/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * What the two halves of the state file share: persist.c (the text:
 * format, parse, check) and state-dir.c (the directory: restore, save,
 * the room for the next save).
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

typedef struct StateGroup {
        char *path;
        uid_t owner;
        MemLimits limits; /* all four */
        unsigned user_limits; /* MemLimitMask: those a user set on a mirror (group_user_limits()) */
        uint64_t kept[_MEM_STAT_MAX];
        uint64_t kept_delegator[_MEM_STAT_MAX]; /* of kept, the delegator's */
        bool transient; /* "transient=1": removed once empty after its creator is gone */
} StateGroup;

typedef struct State {
        StateGroup *groups;
        size_t n;
        char *text; /* the paths point into a copy of the file */
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

/** state_group_of() - what the state keeps of @g (its path points into @g). Under core_read_lock(). */
void state_group_of(MemCore *core, MemGroup *g, StateGroup *ret);

/** text_group_line() - @sg's line as the state file has it, after @prefix ("group "). */
void text_group_line(TextBuf *b, const char *prefix, const StateGroup *sg);

/** state_format() - @st as a complete state file (the header, its groups in its order, the trailer). */
int state_format(const State *st, char **ret, size_t *ret_size);

/** check_fail() - set @ctx's error ("line N: ...", or without a line for 0). Return: @r, or -ENOMEM. */
int check_fail(CheckContext *ctx, int r, unsigned line, const char *format, ...) __attribute__((format(printf, 4, 5)));

/** parse_group_fields() - the "key=value" fields of a group line (@rest, cut in place) into @g. */
int parse_group_fields(CheckContext *ctx, unsigned line, char *rest, StateGroup *g);

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
