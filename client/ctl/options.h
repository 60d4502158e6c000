/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * memacctctl's options: parsed once, before any command runs, then only
 * read. Options may come before or after the command; each command
 * accepts only its own.
 */

#include <memacct.h>
#include <stdbool.h>

typedef struct CtlOptions {
        const char *socket;
        bool bus;
        const char *bus_address; /* NULL: the system bus */
        bool user;               /* --user: the user's own daemon, not the system's */
        bool json;
        bool human; /* -h: sizes as 1.5K, 20M in text output */
        bool help;  /* --help: the help, of the command given if any */
        bool force;
        bool exact;
        bool reclaimable;    /* hold: give back what the daemon asks for, as a cache would */
        bool no_wait;        /* charge, set: refuse or set without waiting for reclaim */
        const char *stat;
        const char *region;  /* --region: a device region; NULL: memory */
        bool ignore_low;     /* evict-valuable --ignore-low */
        const char *reclaim_root;
        const char *prefix; /* oci-hook --prefix */
        const char *output;     /* cdi generate --output */
        const char *interposer; /* cdi generate, run --interposer: libmemacct-cuda.so elsewhere than installed */
        const char *config;     /* cdi generate --config */
        const char *from;   /* import-cgroups --from */
        const char *under;  /* import-cgroups --under */
        bool reset_limits;  /* import-cgroups --reset-limits */
        bool confine;       /* rule add --confine */
        bool parents;       /* create -p: the missing parents too */
        bool recursive;     /* remove -r: the subtree, deepest first */
        const char *property; /* show -P KEY: that value alone */
        const char *file;     /* -f FILE: the commands of FILE, over one connection */
        const char *group;  /* run --group */
        const char *name;   /* run --name */
        bool keep_group;    /* run --keep-group */
        /* top: strings checked by top.c, which knows what they mean */
        const char *top_order, *top_depth, *top_interval, *top_iterations;
        bool batch, raw;
} CtlOptions;

/* This run's options: written by options_parse() alone, in main(). */
extern CtlOptions arg;

/** options_help() - --help: every command and option, on stdout. */
void options_help(void);

/** command_help() - `help NAME`, `NAME --help`: the lines of --help about NAME. Return: the exit status. */
int command_help(const char *name);

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

/**
 * options_connect() - reach memacctd the way the options say: --bus[=ADDRESS]
 * (the system bus, or the user bus with --user), --socket PATH, --user (the
 * user's daemon under $XDG_RUNTIME_DIR), else the system daemon
 * ($MEMACCT_SOCKET, else /run/memacctd/memacctd.sock).
 * @ret: the new handle
 *
 * Return: memacct_connect()'s or memacct_connect_bus()'s values; -ENXIO
 * for --user without $XDG_RUNTIME_DIR (memacct_last_error(NULL) says so).
 */
int options_connect(memacct **ret);

/**
 * options_socket() - the socket options_connect() uses when not on the
 * bus, for messages and for run's $MEMACCT_SOCKET.
 * @ret: a newly allocated string
 *
 * Return: 0; -ENXIO (--user without $XDG_RUNTIME_DIR); -ENOMEM.
 */
int options_socket(char **ret);
