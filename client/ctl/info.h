/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * memacctctl info and sessions: the daemon at a glance, and who holds
 * what in it (memacctctl(1), INFO and SESSIONS).
 */

#include <memacct.h>

/**
 * info_main() - `memacctctl info`: the daemon's version, uptime,
 * requests served, sessions, groups and the state file's state, as
 * "key: value" lines or one JSON object (--json).
 * Return: the exit status: 0, 1 (refused or failed).
 */
int info_main(memacct **mp, int argc, char **argv);

/**
 * info_sessions_main() - `memacctctl sessions [PATH]`: the sessions the
 * caller may see, attached at or below PATH (default: all), one line
 * each of key=value fields as redis-cli CLIENT LIST prints them, or one
 * JSON array (--json).
 * Return: the exit status: 0, 1 (refused or failed), 2 (usage).
 */
int info_sessions_main(memacct **mp, int argc, char **argv);
