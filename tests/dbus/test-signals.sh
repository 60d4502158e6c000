#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# Changes made over the socket are signalled on the bus as changes made
# over the bus are: test-bus-signals (sd-bus and libmemacct) watches every
# signal of org.memacct1 on a private system bus (tests/bus-conf.sh
# system, with units/org.memacct1.conf) while the same changes are made
# through the socket and through the bus, and compares the two lists;
# then, with the daemon reloaded with [access] read = owner, checks that
# nothing with group data is broadcast.

# shellcheck source-path=SCRIPTDIR source=../lib.sh
source "$(dirname "$0")/../lib.sh"

: "${MEMACCT_BUS_SIGNALS:?MEMACCT_BUS_SIGNALS must name test-bus-signals}"
need dbus-daemon
need_root "the policy lets only root own org.memacct1"

start_bus || exit 1
: >"$TMP/memacctd.conf"
check_start_daemon --bus "$BUS_ADDR" --config "$TMP/memacctd.conf" || exit 1
check_run "the signals of every change" 0 env MEMACCT_BUS_ADDRESS="$BUS_ADDR" MEMACCT_SOCKET="$SOCK" \
        MEMACCT_DAEMON_PID="$DAEMON_PID" MEMACCT_DAEMON_CONF="$TMP/memacctd.conf" \
        MEMACCT_DAEMON_LOG="$DAEMON_LOG" "$MEMACCT_BUS_SIGNALS"
# cmocka's report and the signals seen, for the log.
printf '%s\n%s\n' "$OUT" "$ERR"
check_nomatch "no event was dropped" "$(<"$DAEMON_LOG")" "Dropped"
check_stop_daemon
