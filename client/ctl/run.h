/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * memacctctl run: a command in a transient group of its own, as
 * `systemd-run --scope -p MemoryMax=` and cgexec(1) run one in a cgroup.
 */

#include <memacct.h>

/* Where `run` puts a transient group that --group does not place. */
#define RUN_SLICE "/run.slice"

/* How long `run` waits, after its command exited, for the group's last
 * session to end before it leaves the group in place. */
#define RUN_REMOVE_WAIT_MSEC 3000

/* How often `run` checks, while its command runs, that its connection to
 * the daemon holds; and how long after losing it it tries to reconnect
 * and claim its transient group back: the daemon's grace period for
 * groups restored transient (SERVICE_TRANSIENT_GRACE_USEC). */
#define RUN_WATCH_MSEC 500
#define RUN_RECLAIM_MSEC 10000

/**
 * run_main() - `memacctctl run [LIMIT...] -- CMD [ARG...]`: create the
 * group (--group, --name, or /run.slice/run-<pid>-<random>), start CMD
 * with MEMACCT_GROUP and MEMACCT_SOCKET (MEMACCT_BUS with --bus) naming it
 * and the daemon, forward SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1 and
 * SIGUSR2 to it, wait, then remove the group unless --keep-group or a
 * session outlives the wait.
 * @mp: the handle, connected here once the arguments are known good
 * @argc, @argv: "run" and its arguments, as main() passed them on:
 *               @argv[-1] must be readable (getopt_long() leaves the "--"
 *               that ends the options there)
 *
 * Return: the exit status: CMD's (128+N when a signal N killed it), 126
 * (CMD not executable), 127 (CMD not found), 1 (the group could not be
 * made), 2 (a usage error).
 */
int run_main(memacct **mp, int argc, char **argv);
