# SPDX-License-Identifier: LGPL-2.1-or-later
# shellcheck shell=bash
#
# Sourced by the D-Bus client tests: a private dbus-daemon (a session-type
# bus on a socket in a temporary directory, with the project's policy file
# included when it exists) and one memacctd serving both its socket and
# that bus, so that every operation can be made both ways against the same
# state. The checks, the background processes and the cleanup are
# tests/lib.sh's.
#
# Environment (set by tests/dbus-client/meson.build):
#   MEMACCTD, MEMACCTCTL  the binaries under test
#   DBUS_DAEMON           dbus-daemon
#   MEMACCT_BUS_POLICY    units/org.memacct1.conf (included if present)
#
# Exit status 77 (skipped) while memacctd has no --bus.

: "${MEMACCTD:?MEMACCTD must name the memacctd binary}"
DBUS_DAEMON=${DBUS_DAEMON:-dbus-daemon}

# Before tests/lib.sh, whose cleanup would count a skip as a failure.
# (Not `--help | grep -q`: under pipefail, grep quitting early fails the pipe.)
if [[ $("$MEMACCTD" --help 2>&1 || true) != *--bus* ]]; then
        echo "memacctd has no --bus option: skipped"
        exit 77
fi
if ! command -v "$DBUS_DAEMON" >/dev/null 2>&1; then
        echo "no dbus-daemon: skipped"
        exit 77
fi

# shellcheck source-path=SCRIPTDIR source=../lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

# Others may traverse it: the tests that drop to uid 65534 reach the
# daemon's socket and the bus's through it.
chmod 0755 "$TMP"
SOCK=$TMP/memacctd.sock
BUS_SOCK=$TMP/bus.sock
BUS=unix:path=$BUS_SOCK

# ---- the two ways in ----

# As arrays too, for bg: a function would run in a subshell, which a
# signal then ends instead of memacctctl.
CTL_SOCK=("$MEMACCTCTL" --socket "$SOCK")
CTL_BUS=("$MEMACCTCTL" --bus="$BUS")

ctl_sock() {
        "${CTL_SOCK[@]}" "$@"
}

ctl_bus() {
        "${CTL_BUS[@]}" "$@"
}

# field PATH EXPR: EXPR on `show --json --exact PATH` over the socket.
field() {
        ctl_sock --json show "$1" --exact 2>&1 | jget "$2" 2>&1 || true
}

# ---- the bus and the daemon ----

# start_bus: a private dbus-daemon on $BUS (tests/bus-conf.sh open: any
# uid may connect, so a test may drop to another one), with the project's
# policy file included when it exists.
start_bus() {
        sh "$(dirname "${BASH_SOURCE[0]}")/../bus-conf.sh" open "$BUS_SOCK" "${MEMACCT_BUS_POLICY:-}" \
                >"$TMP/bus.conf" || return 1
        launch_bus "$TMP/bus.conf"
}

daemon_answers() {
        ctl_sock show / && ctl_bus show /
}

# start_daemon [OPTIONS...]: memacctd on $SOCK and $BUS, answering both
# when this returns 0. Its configuration file holds $DAEMON_CONF (empty
# by default: every default).
DAEMON_CONF=
start_daemon() {
        mkdir -p "$STATE"
        printf '%s' "$DAEMON_CONF" >"$TMP/memacctd.conf"
        echo "--- start_daemon $*" >>"$DAEMON_LOG"
        "$MEMACCTD" --socket "$SOCK" --bus "$BUS" --state-dir "$STATE" --config "$TMP/memacctd.conf" \
                --workers 2 "$@" >>"$DAEMON_LOG" 2>&1 &
        DAEMON_PID=$!
        await_daemon "$SOCK and $BUS" daemon_answers
}

check_start() {
        if start_bus && start_daemon "$@"; then
                pass
        else
                fail "the bus and the daemon start"
                return 1
        fi
}
