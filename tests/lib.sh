# SPDX-License-Identifier: LGPL-2.1-or-later
# shellcheck shell=bash
#
# The one library of the shell tests, sourced first by each of them (the
# cgroup tests source tests/cgroup/cgroup-lib.sh after it): a temporary
# directory, checks that count, skips (exit 77), background processes, a
# private memacctd on a socket and state directory of its own, a private
# dbus-daemon and busctl against it, and cleanup that never leaves a
# process behind.
#
# Environment: MEMACCTD, MEMACCTCTL (the binaries under test), DBUS_DAEMON
# (optional, default dbus-daemon from $PATH), MEMACCT_SOURCE_ROOT
# (optional, default the tree this file is in), MEMACCT_BUS_POLICY
# (optional, default units/org.memacct1.conf of that tree).
#
# Every check prints "FAIL: what" on failure and the script goes on; the
# last line is "N passed, M failed", and the exit status is 0 only when
# nothing failed and the script ran to its end.

set -eEuo pipefail
trap 'echo "$0: line $LINENO: \"$BASH_COMMAND\" failed" >&2' ERR

: "${MEMACCTD:?MEMACCTD must name the memacctd binary}"
: "${MEMACCTCTL:?MEMACCTCTL must name the memacctctl binary}"
PY=/usr/bin/python3
TESTS_DIR=$(dirname "${BASH_SOURCE[0]}")
SOURCE_ROOT=${MEMACCT_SOURCE_ROOT:-$TESTS_DIR/..}

PASSED=0
FAILED=0
TEST_NAME=$(basename "$0" .sh)
TMP=$(mktemp -d "${TMPDIR:-/tmp}/memacct-$TEST_NAME.XXXXXX")
STATE=$TMP/state
DAEMON_LOG=$TMP/daemon.log
DAEMON_PID=
BUS_PID=
BUS_ADDR=
BG_PIDS=()
EXIT_HOOKS=()
: >"$DAEMON_LOG"
# Others may traverse it: the tests that drop to uid 65534 reach the
# daemon's socket and the bus's through it.
chmod 0755 "$TMP"
SOCK=$TMP/run/memacctd.sock
# The private bus's address, known before it starts (launch_bus sets
# BUS_ADDR, the same bus as the daemon prints it).
BUS_SOCK=$TMP/bus.sock
BUS=unix:path=$BUS_SOCK
# The client both ways, as arrays too, for bg: a function would run in a
# subshell, which a signal then ends instead of memacctctl.
CTL=("$MEMACCTCTL" --socket "$SOCK")
CTL_SOCK=("${CTL[@]}")
CTL_BUS=("$MEMACCTCTL" --bus="$BUS")

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

# jget EXPR: evaluate EXPR on the JSON document read from stdin (bound to
# d); strings print bare, containers as JSON.
jget() {
        "$PY" -I -S -c '
import json, sys
d = json.load(sys.stdin)
v = eval(sys.argv[1])
print(json.dumps(v, sort_keys=True) if isinstance(v, (dict, list)) else v)' "$1"
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

# skip_test WHY: the whole test cannot run here (said before anything is
# started): say why, remove TMP and exit 77, a skip, which finish would
# count as a failure.
skip_test() {
        echo "SKIP: $*"
        trap - EXIT
        rm -rf "$TMP"
        exit 77
}

# need PROGRAM...: skip the test (skip_test) when one is not installed.
need() {
        local p

        for p in "$@"; do
                command -v "$p" >/dev/null || skip_test "$p is not installed"
        done
}

# need_root WHY: skip the test unless it runs as root.
need_root() {
        [[ $(id -u) == 0 ]] || skip_test "not root: $*"
}

# mem_cgroup PID: the kernel memory cgroup of PID ("self": this process)
# as /proc/PID/cgroup names it, and as memacctd and its OCI hook read it:
# v1's memory line, else the unified (0::) one. Return: 1 when there is
# neither.
# run_cgroups_rmdir NAME...: the kernel cgroups memacctctl run made as
# /run.slice/NAME and could not remove (killed with SIGKILL, or a child
# outlived the command), once their processes are gone; a test's litter on
# the host's hierarchy (v1's memory controller, or v2's).
run_cgroups_rmdir() {
        local m n

        for m in /sys/fs/cgroup/memory /sys/fs/cgroup; do
                for n in "$@"; do
                        rmdir "$m/run.slice/$n" 2>/dev/null || true
                done
        done
        return 0
}

mem_cgroup() {
        local line cg=

        while IFS= read -r line; do
                case $line in
                *:memory:* | *,memory:* | *:memory,*) echo "${line#*:*:}"; return 0 ;;
                0::*) cg=${line#0::} ;;
                esac
        done <"/proc/$1/cgroup"
        [[ -n $cg ]] && echo "$cg"
}

# ---- the client ----

ctl() {
        "${CTL[@]}" "$@"
}

ctl_sock() {
        "${CTL_SOCK[@]}" "$@"
}

ctl_bus() {
        "${CTL_BUS[@]}" "$@"
}

# field PATH EXPR [SHOW-OPTIONS...]: EXPR on `show --json PATH` over the
# socket; prints "show-failed" when show fails, so that a comparison fails
# clearly.
field() {
        local path=$1 expr=$2 json

        shift 2
        json=$(ctl --json show "$path" "$@" 2>&1) || {
                echo "show-failed: $json"
                return 0
        }
        jget "$expr" <<<"$json" 2>&1 || echo "json-failed: $json"
}

# ---- background processes ----

# bg OUTFILE CMD...: start CMD in the background (stdout and stderr to
# OUTFILE), its pid in BG_PID; cleanup kills it if it is still running.
bg() {
        local out=$1

        shift
        # Emptied here, not by the child's redirection: a caller that waits
        # for a line in $out must never see one the last run left there.
        : >"$out"
        "$@" >>"$out" 2>&1 &
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

# await_daemon WHERE READY-CMD...: after the daemon was started as
# DAEMON_PID, poll READY-CMD until it succeeds. Return: 0, or 1 (said on
# stderr) when the daemon exits first or does not answer on WHERE within
# 30 s.
await_daemon() {
        local where=$1 deadline=$((SECONDS + 30))

        shift
        until "$@" >/dev/null 2>&1; do
                if ! kill -0 "$DAEMON_PID" 2>/dev/null; then
                        local rc=0

                        wait "$DAEMON_PID" || rc=$?
                        DAEMON_PID=
                        echo "memacctd exited with status $rc at start" >&2
                        return 1
                fi
                if ((SECONDS >= deadline)); then
                        echo "memacctd did not answer on $where within 30 s" >&2
                        return 1
                fi
                sleep 0.05
        done
}

# daemon_answers: the daemon answers on $SOCK, and on $DAEMON_BUS when it
# serves a bus.
daemon_answers() {
        [[ -S $SOCK ]] && ctl show / || return 1
        [[ -z ${DAEMON_BUS:-} ]] || "$MEMACCTCTL" --bus="$DAEMON_BUS" show /
}

# start_daemon [OPTIONS...]: a daemon on $SOCK with state in $STATE,
# answering requests when this returns 0. With DAEMON_BUS set it serves
# that bus too and answers there; with DAEMON_CONF set (even empty) it
# reads a configuration file of that text, not the host's.
start_daemon() {
        local args=(--socket "$SOCK" --state-dir "$STATE" --workers 2)

        if [[ -n ${DAEMON_BUS:-} ]]; then
                args+=(--bus "$DAEMON_BUS")
        fi
        if [[ -n ${DAEMON_CONF+set} ]]; then
                printf '%s' "$DAEMON_CONF" >"$TMP/memacctd.conf"
                args+=(--config "$TMP/memacctd.conf")
        fi
        echo "--- start_daemon $*" >>"$DAEMON_LOG"
        "$MEMACCTD" "${args[@]}" "$@" >>"$DAEMON_LOG" 2>&1 &
        DAEMON_PID=$!
        await_daemon "$SOCK${DAEMON_BUS:+ and $DAEMON_BUS}" daemon_answers
}

# check_start_daemon / check_stop_daemon: start_daemon and stop_daemon,
# counted as checks.
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

# ---- a private bus ----

# launch_bus CONF: a dbus-daemon on the configuration file CONF (its
# output in $TMP/bus.log), listening when this returns 0; BUS_PID is its
# pid and BUS_ADDR its address. finish stops it after the daemon: memacctd
# exits with a failure when it loses its bus.
launch_bus() {
        local deadline=$((SECONDS + 10))

        : >"$TMP/bus.addr"
        "${DBUS_DAEMON:-dbus-daemon}" --config-file="$1" --nofork --nopidfile --print-address=3 \
                3>"$TMP/bus.addr" >"$TMP/bus.log" 2>&1 &
        BUS_PID=$!
        until [[ -s $TMP/bus.addr ]]; do
                if ! kill -0 "$BUS_PID" 2>/dev/null || ((SECONDS >= deadline)); then
                        echo "dbus-daemon did not start:" >&2
                        cat "$TMP/bus.log" >&2
                        return 1
                fi
                sleep 0.02
        done
        BUS_ADDR=$(head -n1 "$TMP/bus.addr")
}

# start_bus [POLICY [SERVICEDIR]]: a private bus on $BUS with the system
# bus's default policy (tests/bus-conf.sh system: everyone connects,
# nobody owns or calls anything unless a policy file allows it), then
# POLICY included (default: the project's units/org.memacct1.conf).
start_bus() {
        local policy=${1:-${MEMACCT_BUS_POLICY:-$SOURCE_ROOT/units/org.memacct1.conf}}

        sh "$TESTS_DIR/bus-conf.sh" system "$BUS_SOCK" "$policy" ${2:+"$2"} >"$TMP/bus.conf" || return 1
        launch_bus "$TMP/bus.conf"
}

# start_open_bus: a private bus on $BUS on which any uid may connect and
# own any name (tests/bus-conf.sh open: a test may drop to another uid),
# with the project's policy file included when it exists.
start_open_bus() {
        sh "$TESTS_DIR/bus-conf.sh" open "$BUS_SOCK" \
                "${MEMACCT_BUS_POLICY:-$SOURCE_ROOT/units/org.memacct1.conf}" >"$TMP/bus.conf" || return 1
        launch_bus "$TMP/bus.conf"
}

# stop_bus: stop the bus daemon (after the daemon: memacctd exits with a
# failure when it loses its bus).
stop_bus() {
        if [[ -n $BUS_PID ]]; then
                stop_bg "$BUS_PID" TERM || true
                BUS_PID=
        fi
}

# check_start_both [OPTIONS...]: an open bus (start_open_bus) and a daemon
# serving it and the socket (DAEMON_BUS), on a configuration of
# $DAEMON_CONF (empty unless set: every default), answering both ways;
# counted as one check. Skips without dbus-daemon or a memacctd --bus.
check_start_both() {
        need "${DBUS_DAEMON:-dbus-daemon}"
        # (Not `--help | grep -q`: under pipefail, grep quitting early fails the pipe.)
        [[ $("$MEMACCTD" --help 2>&1 || true) == *--bus* ]] || skip_test "memacctd has no --bus option"
        DAEMON_BUS=$BUS
        DAEMON_CONF=${DAEMON_CONF-}
        if start_open_bus && start_daemon "$@"; then
                pass
        else
                fail "the bus and the daemon start"
                return 1
        fi
}

bctl() {
        busctl --address="$BUS_ADDR" "$@"
}

# mcall METHOD SIGNATURE ARGS...: call a Manager method.
mcall() {
        bctl call org.memacct1 /org/memacct1 org.memacct1.Manager "$@"
}

# objpath GROUP: the object path of a group, as sd_bus_path_encode() makes
# it (every byte but [A-Za-z0-9] as _xx).
objpath() {
        local s=$1 out=/org/memacct1/group/ c i

        for ((i = 0; i < ${#s}; i++)); do
                c=${s:i:1}
                if [[ $c == [A-Za-z0-9] ]]; then
                        out+=$c
                else
                        out+=$(printf '_%02x' "'$c")
                fi
        done
        printf '%s\n' "$out"
}

# prop GROUP PROPERTY: busctl get-property's output ("t 1024"), or its
# error message; never fails.
prop() {
        bctl get-property org.memacct1 "$(objpath "$1")" org.memacct1.Group "$2" 2>&1 || true
}

# propv GROUP PROPERTY: the value alone of a "t" property.
propv() {
        local v

        v=$(prop "$1" "$2")
        printf '%s\n' "${v#t }"
}

as_nobody() {
        setpriv --reuid=65534 --regid=65534 --clear-groups "$@"
}

# ---- the end ----

# on_exit COMMAND...: run COMMAND first when the script ends, however it
# ends (before the daemon and the bus are stopped), the last registered
# first. Its failure is reported, never fatal.
on_exit() {
        EXIT_HOOKS=("$*" "${EXIT_HOOKS[@]}")
}

finish() {
        local rc=$? hook

        trap - EXIT
        for hook in "${EXIT_HOOKS[@]}"; do
                eval "$hook" || echo "at exit: '$hook' failed" >&2
        done
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
                if [[ -e $TMP/bus.log ]]; then
                        echo "--- bus log ---" >&2
                        cat "$TMP/bus.log" >&2 || true
                fi
        fi
        rm -rf "$TMP"
        echo "$PASSED passed, $FAILED failed"
        if ((FAILED > 0)); then
                exit 1
        fi
        exit 0
}
trap finish EXIT
