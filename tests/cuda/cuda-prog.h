/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * What cuda-prog's files share: the driver API (cuda-abi.h and the
 * stand-in's standin-cuda-api.h, the driver's own declarations), the
 * subcommands of cuda-prog-kinds.c, and the helpers every subcommand
 * ends with.
 */

#include <stdbool.h>
#include <stddef.h>

#include "standin-cuda-api.h"

/** prog_refused() - print "refused <name of @r> step=@step". Return: 1, the exit status. */
int prog_refused(CUresult r, const char *step);

/** prog_usage() - say @why on stderr. Return: 2, the exit status. */
int prog_usage(const char *why);

/** prog_parse_size() - @s as a size with K/M/G suffixes. Return: 0, -EINVAL. */
int prog_parse_size(const char *s, size_t *ret);

/**
 * prog_begin() - cuInit(), and @device's primary context current;
 * prog_end() releases it. Return: 0, or 1 (printed) on a refusal.
 */
int prog_begin(int device);
int prog_end(int device);

/* The subcommands of cuda-prog-kinds.c: (argc, argv) from the subcommand's name on. */
int prog_cmd_pool(int argc, char **argv);
int prog_cmd_vmm(int argc, char **argv);
int prog_cmd_array(int argc, char **argv);

/* cuda-prog-serve.c: commands read from stdin, for the interposer's tests. */
int prog_cmd_serve(int argc, char **argv);
