#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# libmemacct over D-Bus: test-dbus-client (cmocka) against the real daemon
# on a private bus, with a socket beside it to compare with; then once
# more against the daemon restarted with reads restricted to owners and
# two sessions per uid (MEMACCT_TEST_RESTRICTED=1: the tests of what that
# refuses).

# shellcheck source-path=SCRIPTDIR source=../lib.sh
source "$(dirname "$0")/../lib.sh"

: "${TEST_DBUS_CLIENT:?TEST_DBUS_CLIENT must name the test-dbus-client binary}"

check_start_both || exit 1

check_run "test-dbus-client" 0 env MEMACCT_TEST_BUS="$BUS" MEMACCT_TEST_SOCKET="$SOCK" \
        "$TEST_DBUS_CLIENT"
# cmocka's report, for the log.
printf '%s\n%s\n' "$OUT" "$ERR"

rc=0
stop_daemon || rc=$?
check_eq "the daemon exits 0" "$rc" 0
DAEMON_CONF=$'[access]\nread = owner\n\n[limits]\nsessions-per-uid = 2\n'
if start_daemon; then
        pass
else
        fail "the daemon starts with read = owner and sessions-per-uid = 2"
        exit 1
fi
check_run "test-dbus-client, read = owner, sessions-per-uid = 2" 0 env MEMACCT_TEST_RESTRICTED=1 \
        MEMACCT_TEST_BUS="$BUS" MEMACCT_TEST_SOCKET="$SOCK" "$TEST_DBUS_CLIENT"
printf '%s\n%s\n' "$OUT" "$ERR"
