/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * memacctctl: the command line of memacctd, built only on libmemacct.
 *
 * Its commands (verbs.c), options (options.c) and output, text and --json
 * (output.c), are a user interface, documented in memacctctl(1): keep them
 * stable. Exit status: 0 success, 1 a refused or failed operation (with
 * the cause on stderr), 2 a usage error.
 */

#include <signal.h>
#include <string.h>

#include <memacct.h>

#include "batch.h"
#include "macro.h"
#include "options.h"
#include "output.h"
#include "verbs.h"

DEFINE_TRIVIAL_CLEANUP_FUNC(memacct *, memacct_close);

int main(int argc, char **argv) {
        _cleanup_(memacct_closep) memacct *m = NULL;
        const Verb *v;
        int r, first = 0;

        r = options_parse(argc, argv, &first);
        if (r >= 0)
                return r;
        if (arg.file && first < argc)
                return usage_error("-f runs the commands of its file: no command after it");
        if (arg.file) {
                signal(SIGPIPE, SIG_DFL);
                return batch_main(&m, arg.file);
        }
        if (first >= argc)
                return usage_error("missing command");
        if (strcmp(argv[first], "help") == 0) {
                if (first + 1 < argc)
                        return command_help(argv[first + 1]);
                options_help();
                return 0;
        }
        /* getopt takes an optional argument only as --bus=ADDRESS; --bus
         * system, as a user types it, is that too (no command has such a name). */
        if (arg.bus && !arg.bus_address &&
            (strcmp(argv[first], "system") == 0 || strcmp(argv[first], "user") == 0 ||
             strchr(argv[first], ':'))) {
                arg.bus_address = argv[first++];
                if (first >= argc)
                        return usage_error("missing command");
        }
        v = verb_find(argv[first]);
        if (!v)
                return usage_error("unknown command '%s'", argv[first]);
        if (!options_allowed(verb_name(v)))
                return EXIT_USAGE;
        /* A broken pipe on stdout (watch | head) must end us quietly. */
        signal(SIGPIPE, SIG_DFL);
        return verb_run(v, &m, argc - first, argv + first);
}
