/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * memacctctl -f FILE (or - for standard input): the commands of FILE, one
 * a line, words split at blanks, run in order over one connection, as
 * redis-cli reads a pipe. A command run alone costs a process and a
 * connection; 10,000 creates took a minute that way, and take seconds
 * here. Empty lines and lines starting with '#' are skipped.
 *
 * Only commands that do one thing and return are taken (create, remove,
 * set, charge, uncharge, reset-peak, move, rule, show, tree, client,
 * info, sessions); one that waits (hold, watch, top) or runs something
 * (run, oci-hook) is a usage error on its line, which stops the batch
 * there (the lines before it ran).
 * Every line runs even after one fails, and the exit status says whether
 * any did. The global options (--socket, --json, --stat ...) apply to
 * every line.
 */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "batch.h"
#include "macro.h"
#include "output.h"
#include "verbs.h"

/* The words of a line: at most this many. */
#define BATCH_WORDS_MAX 16
/* A line longer than this is refused (a group path is at most 4096 bytes). */
#define BATCH_LINE_MAX 8192

static bool batchable(const char *name) {
        static const char *const ok[] = { "create", "remove", "set", "charge", "uncharge", "reset-peak", "move",
                                          "rule", "show", "tree", "client", "info", "sessions" };

        for (size_t i = 0; i < ELEMENTSOF(ok); i++)
                if (strcmp(name, ok[i]) == 0)
                        return true;
        return false;
}

/* Split @line in place at blanks into @argv. Return: the count, or -E2BIG. */
static int split(char *line, char **argv) {
        int n = 0;

        for (char *save = NULL, *w = strtok_r(line, " \t\r\n", &save); w; w = strtok_r(NULL, " \t\r\n", &save)) {
                if (n == BATCH_WORDS_MAX)
                        return -E2BIG;
                argv[n++] = w;
        }
        argv[n] = NULL;
        return n;
}

int batch_main(memacct **mp, const char *file) {
        FILE *f = strcmp(file, "-") == 0 ? stdin : fopen(file, "re");
        char *line = NULL, *argv[BATCH_WORDS_MAX + 1];
        unsigned lineno = 0, ran = 0, failed = 0;
        size_t cap = 0;
        ssize_t len;
        int r = 0;

        if (!f) {
                fprintf(stderr, "memacctctl: -f %s: %s\n", file, strerror(errno));
                return EXIT_FAILURE;
        }
        while ((len = getline(&line, &cap, f)) >= 0) {
                const Verb *v;
                int argc, k;

                lineno++;
                if (len > BATCH_LINE_MAX) {
                        r = usage_error("-f %s:%u: a line longer than %d bytes", file, lineno, BATCH_LINE_MAX);
                        break;
                }
                argc = split(line, argv);
                if (argc == 0 || argv[0][0] == '#')
                        continue;
                if (argc < 0) {
                        r = usage_error("-f %s:%u: more than %d words", file, lineno, BATCH_WORDS_MAX);
                        break;
                }
                v = verb_find(argv[0]);
                if (!v || !batchable(argv[0])) {
                        r = usage_error("-f %s:%u: '%s' is no command to run in a batch", file, lineno, argv[0]);
                        break;
                }
                k = verb_run(v, mp, argc, argv);
                ran++;
                if (k == EXIT_USAGE) {
                        r = k;
                        break;
                }
                if (k != 0) {
                        fprintf(stderr, "memacctctl: -f %s:%u: the command above failed\n", file, lineno);
                        failed++;
                }
        }
        free(line);
        if (f != stdin)
                fclose(f);
        if (r != 0)
                return r;
        if (failed > 0)
                fprintf(stderr, "memacctctl: %u of %u commands failed\n", failed, ran);
        return failed > 0 ? EXIT_FAILURE : 0;
}
