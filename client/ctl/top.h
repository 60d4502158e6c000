/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * memacctctl top: a live view of a subtree's usage, limits and events,
 * redrawn every interval, as systemd-cgtop does for the kernel's cgroups;
 * or, in batch mode, snapshots printed one after another.
 */

#include <memacct.h>

/**
 * top_main() - `memacctctl top [PATH]`: check the options (arg.top_*),
 * then connect with @connect and show the subtree at PATH (default "/")
 * until q, SIGINT/SIGTERM or the -n'th snapshot. Runs on the main thread
 * only; it installs signal handlers and owns the terminal while it runs.
 * @argc, @argv: "top" and at most one PATH
 * @connect: memacctctl's connect (socket or bus, as the options say);
 *           returns 0 or an exit status, having said why
 *
 * Return: the exit status: 0, 1 (a failed query, said on stderr after the
 * terminal was restored), 2 (a usage error).
 */
int top_main(memacct **mp, int argc, char **argv, int (*connect)(memacct **ret));
