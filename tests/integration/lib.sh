# SPDX-License-Identifier: LGPL-2.1-or-later
# shellcheck shell=bash
#
# Sourced by the integration scripts: a private memacctd on a temporary
# socket and state directory, memacctctl against it, checks that count,
# and cleanup that never leaves a process behind.
#
# Environment (set by tests/integration/meson.build):
#   MEMACCTD, MEMACCTCTL   the binaries under test
#   MEMACCT_TEST_HELPER    tests/integration/test-helper.c, built
#
# Every check prints "FAIL: what" on failure and the script goes on; the
# last line is "N passed, M failed", and the exit status is 0 only when
# nothing failed and the script ran to its end.

set -eEuo pipefail
trap 'echo "$0: line $LINENO: \"$BASH_COMMAND\" failed" >&2' ERR

: "${MEMACCTD:?MEMACCTD must name the memacctd binary}"
: "${MEMACCTCTL:?MEMACCTCTL must name the memacctctl binary}"
PY=/usr/bin/python3

PASSED=0
FAILED=0
TEST_NAME=$(basename "$0" .sh)

TMP=$(mktemp -d "${TMPDIR:-/tmp}/memacct-$TEST_NAME.XXXXXX")
# Others may traverse it: the non-root test reaches the socket through it.
chmod 0755 "$TMP"
SOCK=$TMP/run/memacctd.sock
STATE=$TMP/state
DAEMON_LOG=$TMP/daemon.log
DAEMON_PID=
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

# check_eq WHAT GOT WANT
check_eq() {
        if [[ $2 == "$3" ]]; then
                pass
        else
                fail "$1: got '$2', want '$3'"
        fi
}

# check_match WHAT TEXT ERE: TEXT matches the extended regex ERE.
check_match() {
        if grep -Eq -- "$3" <<<"$2"; then
                pass
        else
                fail "$1: '$2' does not match /$3/"
        fi
}

# check_nomatch WHAT TEXT ERE
check_nomatch() {
        if grep -Eq -- "$3" <<<"$2"; then
                fail "$1: '$2' matches /$3/"
        else
                pass
        fi
}

# run CMD...: sets RC, OUT and ERR, never fails.
run() {
        RC=0
        "$@" >"$TMP/run.out" 2>"$TMP/run.err" || RC=$?
        OUT=$(<"$TMP/run.out")
        ERR=$(<"$TMP/run.err")
}

# check_run WHAT RC CMD...: CMD exits RC; sets OUT/ERR as run does.
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

# ---- the client ----

ctl() {
        "$MEMACCTCTL" --socket "$SOCK" "$@"
}

# jget EXPR: evaluate EXPR on the JSON document read from stdin (bound to
# d); strings print bare, containers as JSON.
jget() {
        "$PY" -I -S -c '
import json, sys
d = json.load(sys.stdin)
v = eval(sys.argv[1])
print(json.dumps(v, sort_keys=True) if isinstance(v, (dict, list)) else v)' "$1"
}

# field PATH EXPR [SHOW-OPTIONS...]: EXPR on `show --json PATH`; prints
# "show-failed" when show fails, so that a comparison fails clearly.
field() {
        local path=$1 expr=$2 json

        shift 2
        json=$(ctl --json show "$path" "$@" 2>&1) || {
                echo "show-failed: $json"
                return 0
        }
        jget "$expr" <<<"$json" 2>&1 || echo "json-failed: $json"
}

current() {
        field "$1" 'd["current"]'
}

# wait_for SECONDS CMD...: poll until CMD succeeds. Return: 0, or 1 after
# SECONDS.
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

# check_current_soon WHAT PATH BYTES [SECONDS]: current of PATH reaches
# BYTES within SECONDS (default 10).
check_current_soon() {
        if wait_for "${4:-10}" current_is "$2" "$3"; then
                pass
        else
                fail "$1: current of $2 is '$(current "$2")', want $3"
        fi
}

# file_has FILE ERE
file_has() {
        grep -Eq -- "$2" "$1"
}

# ---- background processes ----

# bg OUTFILE CMD...: start CMD in the background (stdout and stderr to
# OUTFILE), its pid in BG_PID; cleanup kills it if it is still running.
bg() {
        local out=$1

        shift
        "$@" >"$out" 2>&1 &
        BG_PID=$!
        BG_PIDS+=("$BG_PID")
}

# stop_bg PID SIGNAL [SECONDS]: send SIGNAL, reap, return the exit status
# (128+n for a signal), or 124 when it did not end within SECONDS
# (default 10; then it is killed). A watchdog rather than a polling loop:
# bash reports a job killed by a signal unless a wait reaps it.
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

# ---- the daemon ----

# start_daemon [OPTIONS...]: a daemon on $SOCK with state in $STATE,
# answering requests when this returns 0.
start_daemon() {
        local deadline=$((SECONDS + 30))

        echo "--- start_daemon $*" >>"$DAEMON_LOG"
        "$MEMACCTD" --socket "$SOCK" --state-dir "$STATE" --workers 2 "$@" >>"$DAEMON_LOG" 2>&1 &
        DAEMON_PID=$!
        until [[ -S $SOCK ]] && ctl show / >/dev/null 2>&1; do
                if ! kill -0 "$DAEMON_PID" 2>/dev/null; then
                        local rc=0

                        wait "$DAEMON_PID" || rc=$?
                        DAEMON_PID=
                        echo "memacctd exited with status $rc at start" >&2
                        return 1
                fi
                if ((SECONDS >= deadline)); then
                        echo "memacctd did not answer on $SOCK within 30 s" >&2
                        return 1
                fi
                sleep 0.05
        done
}

# stop_daemon [SIGNAL]: stop it (SIGTERM by default) and return its exit
# status; 124 if it did not end within 30 s.
stop_daemon() {
        local pid=$DAEMON_PID rc=0

        [[ -n $pid ]] || return 0
        DAEMON_PID=
        stop_bg "$pid" "${1:-TERM}" 30 || rc=$?
        echo "--- daemon stopped: status $rc" >>"$DAEMON_LOG"
        return "$rc"
}

# check_start_daemon / check_stop_daemon: the same, counted as checks.
check_start_daemon() {
        if start_daemon "$@"; then
                pass
        else
                fail "the daemon starts (options: $*)"
                return 1
        fi
}

check_stop_daemon() {
        local rc=0

        stop_daemon "$@" || rc=$?
        check_eq "the daemon exits 0 on SIG${1:-TERM}" "$rc" 0
}

# ---- the end ----

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
        if ((rc != 0)); then
                fail "$TEST_NAME stopped early with status $rc"
        fi
        if ((FAILED > 0)); then
                echo "--- daemon log ---" >&2
                cat "$DAEMON_LOG" >&2 || true
        fi
        rm -rf "$TMP"
        echo "$PASSED passed, $FAILED failed"
        if ((FAILED > 0)); then
                exit 1
        fi
        exit 0
}
trap finish EXIT
