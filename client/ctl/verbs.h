/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * memacctctl's commands (verbs): each checks its arguments, connects, makes
 * its calls and prints the result. Their names and arguments are a user
 * interface, documented in memacctctl(1).
 */

#include <memacct.h>

typedef struct Verb Verb;

/** verb_find() - the command called @name. Return: it, or NULL. */
const Verb *verb_find(const char *name);

/** verb_name() - the name of @v. */
const char *verb_name(const Verb *v);

/**
 * verb_run() - run @v on @argv (@argv[0] is its name), connecting through
 * @mp (closed by the caller) only once the arguments are known good, so a
 * usage error is exit status 2 whether or not the daemon runs.
 * Return: the exit status: 0, 1 (a refused or failed operation, said on
 * stderr), 2 (a usage error).
 */
int verb_run(const Verb *v, memacct **mp, int argc, char **argv);
