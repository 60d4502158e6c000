# SPDX-License-Identifier: LGPL-2.1-or-later
# shellcheck shell=bash
#
# Sourced by the D-Bus client tests: a private dbus-daemon (a session-type
# bus on a socket in a temporary directory, with the project's policy file
# included when it exists) and one memacctd serving both its socket and
# that bus, so that every operation can be made both ways against the same
# state. Cleanup never leaves a process behind.
#
# Environment (set by tests/dbus-client/meson.build):
#   MEMACCTD, MEMACCTCTL  the binaries under test
#   DBUS_DAEMON           dbus-daemon
#   MEMACCT_BUS_POLICY    units/org.memacct1.conf (included if present)
#
# Exit status 77 (skipped) while memacctd has no --bus. Every check prints
# "FAIL: what" on failure and the script goes on; the last line is
# "N passed, M failed".

set -eEuo pipefail
trap 'echo "$0: line $LINENO: \"$BASH_COMMAND\" failed" >&2' ERR

: "${MEMACCTD:?MEMACCTD must name the memacctd binary}"
: "${MEMACCTCTL:?MEMACCTCTL must name the memacctctl binary}"
DBUS_DAEMON=${DBUS_DAEMON:-dbus-daemon}
PY=/usr/bin/python3

# (Not `--help | grep -q`: under pipefail, grep quitting early fails the pipe.)
if [[ $("$MEMACCTD" --help 2>&1 || true) != *--bus* ]]; then
        echo "memacctd has no --bus option: skipped"
        exit 77
fi
if ! command -v "$DBUS_DAEMON" >/dev/null 2>&1; then
        echo "no dbus-daemon: skipped"
        exit 77
fi

PASSED=0
FAILED=0
TEST_NAME=$(basename "$0" .sh)
TMP=$(mktemp -d "${TMPDIR:-/tmp}/memacct-$TEST_NAME.XXXXXX")
SOCK=$TMP/memacctd.sock
STATE=$TMP/state
BUS_SOCK=$TMP/bus.sock
BUS=unix:path=$BUS_SOCK
DAEMON_LOG=$TMP/daemon.log
BUS_LOG=$TMP/bus.log
DAEMON_PID=
BUS_PID=
BG_PIDS=()
: >"$DAEMON_LOG"

# ---- reporting ----

pass() {
        PASSED=$((PASSED + 1))
}

fail() {
        FAILED=$((FAILED + 1))
        printf 'FAIL: %s\n' "$*" >&2
}

check_eq() {
        if [[ $2 == "$3" ]]; then
                pass
        else
                fail "$1: got '$2', want '$3'"
        fi
}

check_match() {
        if grep -Eq -- "$3" <<<"$2"; then
                pass
        else
                fail "$1: '$2' does not match /$3/"
        fi
}

# run CMD...: sets RC, OUT and ERR, never fails.
run() {
        RC=0
        "$@" >"$TMP/run.out" 2>"$TMP/run.err" || RC=$?
        OUT=$(<"$TMP/run.out")
        ERR=$(<"$TMP/run.err")
}

check_run() {
        local what=$1 want=$2

        shift 2
        run "$@"
        if [[ $RC == "$want" ]]; then
                pass
        else
                fail "$what: exit status $RC, want $want (stdout: '$OUT', stderr: '$ERR')"
        fi
}

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

# jget EXPR: EXPR on the JSON document on stdin (bound to d).
jget() {
        "$PY" -I -S -c '
import json, sys
d = json.load(sys.stdin)
v = eval(sys.argv[1])
print(json.dumps(v, sort_keys=True) if isinstance(v, (dict, list)) else v)' "$1"
}

# field PATH EXPR: EXPR on `show --json --exact PATH` over the socket.
field() {
        ctl_sock --json show "$1" --exact 2>&1 | jget "$2" 2>&1 || true
}

current() {
        field "$1" 'd["current"]'
}

wait_for() {
        local deadline=$((SECONDS + $1))

        shift
        while ! "$@" >/dev/null 2>&1; do
                ((SECONDS < deadline)) || return 1
                sleep 0.05
        done
}

current_is() {
        [[ $(current "$1") == "$2" ]]
}

check_current_soon() {
        if wait_for "${4:-10}" current_is "$2" "$3"; then
                pass
        else
                fail "$1: current of $2 is '$(current "$2")', want $3"
        fi
}

# ---- background processes ----

bg() {
        local out=$1

        shift
        "$@" >"$out" 2>&1 &
        BG_PID=$!
        BG_PIDS+=("$BG_PID")
}

# stop_bg PID SIGNAL [SECONDS]: signal, reap, return the exit status (124:
# still running after SECONDS, then killed). A watchdog rather than a
# polling loop: bash reports a job killed by a signal unless a wait reaps it.
stop_bg() {
        local pid=$1 sig=$2 ticks=$((${3:-10} * 20)) rc=0 watchdog flag=$TMP/stop.$1

        rm -f "$flag.done" "$flag.late"
        (
                for ((i = 0; i < ticks; i++)); do
                        [[ -e $flag.done ]] && exit 0
                        sleep 0.05
                done
                : >"$flag.late"
                kill -KILL "$pid"
        ) >/dev/null 2>&1 &
        watchdog=$!
        kill "-$sig" "$pid" 2>/dev/null || true
        { wait "$pid"; } 2>/dev/null || rc=$?
        : >"$flag.done"
        { wait "$watchdog"; } 2>/dev/null || true
        if [[ -e $flag.late ]]; then
                rc=124
        fi
        rm -f "$flag.done" "$flag.late"
        return "$rc"
}

# ---- the bus and the daemon ----

# start_bus: a private dbus-daemon on $BUS.
start_bus() {
        local deadline=$((SECONDS + 10)) include=

        if [[ -n ${MEMACCT_BUS_POLICY:-} && -e $MEMACCT_BUS_POLICY ]]; then
                include="<include>$MEMACCT_BUS_POLICY</include>"
        fi
        cat >"$TMP/bus.conf" <<EOF
<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>session</type>
  <listen>$BUS</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow send_destination="*" eavesdrop="true"/>
    <allow eavesdrop="true"/>
    <allow own="*"/>
  </policy>
  $include
</busconfig>
EOF
        "$DBUS_DAEMON" --config-file="$TMP/bus.conf" --nofork --nopidfile >"$BUS_LOG" 2>&1 &
        BUS_PID=$!
        until [[ -S $BUS_SOCK ]]; do
                if ! kill -0 "$BUS_PID" 2>/dev/null || ((SECONDS >= deadline)); then
                        echo "dbus-daemon did not start:" >&2
                        cat "$BUS_LOG" >&2
                        return 1
                fi
                sleep 0.02
        done
}

# start_daemon [OPTIONS...]: memacctd on $SOCK and $BUS, answering both
# when this returns 0.
start_daemon() {
        local deadline=$((SECONDS + 30))

        mkdir -p "$STATE"
        : >"$TMP/memacctd.conf"
        echo "--- start_daemon $*" >>"$DAEMON_LOG"
        "$MEMACCTD" --socket "$SOCK" --bus "$BUS" --state-dir "$STATE" --config "$TMP/memacctd.conf" \
                --workers 2 "$@" >>"$DAEMON_LOG" 2>&1 &
        DAEMON_PID=$!
        until ctl_sock show / >/dev/null 2>&1 && ctl_bus show / >/dev/null 2>&1; do
                if ! kill -0 "$DAEMON_PID" 2>/dev/null; then
                        local rc=0

                        wait "$DAEMON_PID" || rc=$?
                        DAEMON_PID=
                        echo "memacctd exited with status $rc at start" >&2
                        cat "$DAEMON_LOG" >&2
                        return 1
                fi
                if ((SECONDS >= deadline)); then
                        echo "memacctd did not answer on $SOCK and $BUS within 30 s" >&2
                        return 1
                fi
                sleep 0.05
        done
}

stop_daemon() {
        local pid=$DAEMON_PID rc=0

        [[ -n $pid ]] || return 0
        DAEMON_PID=
        stop_bg "$pid" "${1:-TERM}" 30 || rc=$?
        echo "--- daemon stopped: status $rc" >>"$DAEMON_LOG"
        return "$rc"
}

check_start() {
        if start_bus && start_daemon "$@"; then
                pass
        else
                fail "the bus and the daemon start"
                return 1
        fi
}

finish() {
        local rc=$?

        trap - EXIT
        for pid in "${BG_PIDS[@]}"; do
                kill -KILL "$pid" 2>/dev/null || true
        done
        if [[ -n $DAEMON_PID ]]; then
                local drc=0

                stop_daemon || drc=$?
                ((drc == 0)) || fail "the daemon exits 0 on SIGTERM at the end (status $drc)"
        fi
        # The daemon first: it must not see its bus vanish under it.
        if [[ -n $BUS_PID ]]; then
                stop_bg "$BUS_PID" TERM 10 >/dev/null 2>&1 || true
        fi
        if ((rc != 0)); then
                fail "$TEST_NAME stopped early with status $rc"
        fi
        if ((FAILED > 0)); then
                echo "--- daemon log ---" >&2
                cat "$DAEMON_LOG" >&2 || true
                echo "--- bus log ---" >&2
                cat "$BUS_LOG" >&2 || true
        fi
        rm -rf "$TMP"
        echo "$PASSED passed, $FAILED failed"
        if ((FAILED > 0)); then
                exit 1
        fi
        exit 0
}
trap finish EXIT
