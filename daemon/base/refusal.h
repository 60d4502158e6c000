/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * The one error carrier of the service layer: every operation that fails
 * returns a negative errno and fills a Refusal with the same errno, the
 * words a person reads, and, for a charge or move a max refused, the
 * group whose max it was. Transports map the errno to their status
 * (proto/status.c: a wire status, a D-Bus error name) and send the words
 * as they are, so the same failure reads the same on every transport.
 * The words are formatted here and in the service operations only.
 */

#include <stdarg.h>
#include <stddef.h>

#include "core/model.h"

#define REFUSAL_MESSAGE_MAX 512

typedef struct Refusal {
        int error;                             /* negative errno; 0 while nothing refused */
        char message[REFUSAL_MESSAGE_MAX];     /* "" while nothing refused */
        char refused_by[MEM_PATH_MAX + 1];     /* -EDQUOT: the group whose max refused, else "" */
} Refusal;

/** refusal_init() - an empty refusal, cheap enough for every request. */
static inline void refusal_init(Refusal *rf) {
        rf->error = 0;
        rf->message[0] = 0;
        rf->refused_by[0] = 0;
}

/** refusal_set() - refuse with @r and a printf-formatted message. Return: @r. */
int refusal_set(Refusal *rf, int r, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/** refusal_errno_text() - the words for a core error: "no such group" etc. */
const char *refusal_errno_text(int r);

/**
 * refusal_path() - "PATH: why" for error @r about @path (NULL allowed):
 * the precise violation for a malformed path, else refusal_errno_text().
 * Return: @r.
 */
int refusal_path(Refusal *rf, int r, const char *path);

/** refusal_denied() - "PATH: permission denied". Return: -EPERM. */
int refusal_denied(Refusal *rf, const char *path);

/**
 * refusal_limit() - a charge or move into @path that the max of @by
 * refused: "PATH: limit exceeded (max of BY)", with @by kept apart for
 * the transports that report it. Return: -EDQUOT.
 */
int refusal_limit(Refusal *rf, const char *path, const char *by);

/**
 * refusal_region_limit() - refusal_limit() in the device region @region;
 * @capacity: the root refused, so the region is full: "PATH: region R is
 * at its capacity". Return: -EDQUOT.
 */
int refusal_region_limit(Refusal *rf, const char *path, const char *by, const char *region, bool capacity);
