/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * What the two halves of the state file share: persist.c (the text:
 * format, parse, check) and persist-file.c (the directory: restore, save,
 * the room for the next save).
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "core/model.h"
#include "service/persist.h"

#define STATE_TMP "state.tmp"
#define STATE_OLD_TMP "state.old.tmp"

typedef struct StateGroup {
        char *path;
        uid_t owner;
        MemLimits limits; /* all four */
        uint64_t kept[_MEM_STAT_MAX];
        uint64_t kept_delegator[_MEM_STAT_MAX]; /* of kept, the delegator's */
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
