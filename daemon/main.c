/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * memacctd: hierarchical memory accounting in userspace, served over a
 * protobuf Unix socket and, optionally, D-Bus (org.memacct1).
 *
 * This file is the process: it parses the command line (options.c),
 * does what concerns the process alone (the log level, the descriptor
 * limit, --bus-introspect, which needs no daemon), and hands the rest to
 * the Daemon (daemon.c: the configuration, the start and stop orders,
 * reload, the bus), whose result it turns into the exit status.
 *
 * Threads: main (acceptor, signals; registered with the core because it
 * restores the state), N workers, one housekeeping thread (statistics,
 * saves, STATUS= and WATCHDOG=1), one saver thread, one bus thread when
 * there is a bus, one metrics thread when systemd passed a "metrics"
 * listener or [metrics] listen or --metrics names an address (it starts
 * once the socket listens, and stops first at shutdown).
 */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>

#include "base/log.h"
#include "bus/introspect.h"
#include "daemon.h"
#include "options.h"

/*
 * At start: the soft RLIMIT_NOFILE up to the hard one. systemd's soft
 * 1024 would make accept() fail with EMFILE at about a thousand clients,
 * well below [limits] connections; the hard limit is what the unit
 * (LimitNOFILE=) or the administrator granted.
 */
static void raise_nofile(void) {
        struct rlimit rl;

        if (getrlimit(RLIMIT_NOFILE, &rl) < 0 || rl.rlim_cur >= rl.rlim_max)
                return;
        rl.rlim_cur = rl.rlim_max;
        if (setrlimit(RLIMIT_NOFILE, &rl) < 0)
                log_warning_errno(errno, "Cannot raise the descriptor limit to %llu, ignoring: %m",
                                  (unsigned long long) rl.rlim_max);
}

/* Start, serve until told to stop, stop; the exit status. */
static int run_daemon(const Args *args) {
        _cleanup_(daemon_freep) Daemon *d = NULL;
        int r, k;

        if (daemon_new(args, &d) < 0)
                return EXIT_FAILURE;
        r = daemon_start(d);
        if (r < 0) {
                (void) daemon_stop(d);
                return EXIT_FAILURE;
        }
        (void) daemon_run(d);
        k = daemon_stop(d);
        d = daemon_free(d);
        if (k < 0) {
                log_error("The final state save failed; the state on disk may be behind");
                return EXIT_FAILURE;
        }
        log_info("Stopped");
        return EXIT_SUCCESS;
}

int main(int argc, char *argv[]) {
        Args args = {};
        int r;

        log_open();
        r = options_parse(argc, argv, &args);
        if (r <= 0)
                return r < 0 ? OPTIONS_EXIT_USAGE : EXIT_SUCCESS;
        log_set_max_level(LOG_NOTICE + args.verbose);
        raise_nofile();
        if (args.check_config)
                return daemon_check_config(&args) < 0 ? EXIT_FAILURE : EXIT_SUCCESS;
        if (args.bus_introspect)
                return bus_introspect(args.bus_introspect, stdout) < 0 ? EXIT_FAILURE : EXIT_SUCCESS;
        return run_daemon(&args);
}
