#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# libmemacct over D-Bus: test-dbus-client (cmocka) against the real daemon
# on a private bus, with a socket beside it to compare with.

# shellcheck source=tests/dbus-client/lib.sh
source "$(dirname "$0")/lib.sh"

: "${TEST_DBUS_CLIENT:?TEST_DBUS_CLIENT must name the test-dbus-client binary}"

check_start || exit 1

check_run "test-dbus-client" 0 env MEMACCT_TEST_BUS="$BUS" MEMACCT_TEST_SOCKET="$SOCK" \
        "$TEST_DBUS_CLIENT"
# cmocka's report, for the log.
printf '%s\n%s\n' "$OUT" "$ERR"
