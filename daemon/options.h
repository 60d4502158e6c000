/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>

/*
 * memacctd's command line (getopt_long): what it says, not yet merged
 * with memacctd.conf (daemon.c does that; the command line wins).
 */

#define OPTIONS_WORKERS_MAX 1024
#define OPTIONS_EXIT_USAGE 2

typedef struct Args {
        const char *socket_path;
        const char *config_path;
        const char *state_dir;
        unsigned workers; /* 0: not given */
        int verbose;
        const char *bus;            /* "system", "user", "none", an address; NULL: not given */
        const char *bus_introspect; /* an object path, or "list" */
        const char *metrics;        /* a listen address, "" for none; NULL: not given */
        bool check_config;          /* --check-config: read the configuration, say what is wrong, exit */
        const char *check_file;     /* --check-config FILE; NULL: --config, else the default */
} Args;

/**
 * options_parse() - parse @argv into @args (which points into @argv).
 * --help and --version print and say to exit.
 * Return: 1 to run, 0 to exit successfully, < 0 on a usage error (logged).
 */
int options_parse(int argc, char *argv[], Args *args);
