/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * memacctctl's options: parsed once, before any command runs, then only
 * read. Options may come before or after the command; each command
 * accepts only its own.
 */

#include <stdbool.h>

typedef struct CtlOptions {
        const char *socket;
        bool bus;
        const char *bus_address; /* NULL: the default bus */
        bool json;
        bool human; /* -h: sizes as 1.5K, 20M in text output */
        bool force;
        bool exact;
        const char *stat;
        const char *reclaim_root;
        const char *prefix; /* oci-hook --prefix */
        const char *from;   /* import-cgroups --from */
        const char *under;  /* import-cgroups --under */
        bool reset_limits;  /* import-cgroups --reset-limits */
        const char *group;  /* run --group */
        const char *name;   /* run --name */
        bool keep_group;    /* run --keep-group */
        /* top: strings checked by top.c, which knows what they mean */
        const char *top_order, *top_depth, *top_interval, *top_iterations;
        bool batch, raw;
} CtlOptions;

/* This run's options: written by options_parse() alone, in main(). */
extern CtlOptions arg;

/**
 * options_parse() - parse @argv into arg, leaving the index of the command
 * in @ret_first. --help and --version are answered here.
 * Return: < 0 to go on, else the exit status (0 after --help or
 * --version, EXIT_USAGE after a usage error, which it printed).
 */
int options_parse(int argc, char **argv, int *ret_first);

/**
 * options_allowed() - whether every option given is one @verb takes; if
 * not, a usage error says which is not.
 */
bool options_allowed(const char *verb);
