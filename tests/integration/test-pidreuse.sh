#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# A recycled pid forges nothing. In a private pid namespace (where
# ns_last_pid hands out a chosen pid) a victim uid at pid N opens a
# session and charges, leaves the connection to a child and exits; an
# attacker uid then gets pid N and moves "its own" pid: the victim's
# session and charges stay where they are. Root's move of pid N takes
# only the live process's sessions, and the kept connection of the
# victim's child cannot move pid N either, since its process is gone.

if [[ ${1-} != --inside ]]; then
        if [[ $(id -u) != 0 ]]; then
                echo "SKIP: not root: cannot make a pid namespace or switch uids"
                exit 77
        fi
        if ! err=$(unshare --pid --fork --mount-proc true 2>&1); then
                echo "SKIP: unshare --pid --fork --mount-proc is not permitted here: $err"
                exit 77
        fi
        exec unshare --pid --fork --mount-proc bash "$0" --inside
fi

# shellcheck source-path=SCRIPTDIR source=../lib.sh
source "$(dirname "$0")/../lib.sh"

: "${MEMACCT_TEST_HELPER:?MEMACCT_TEST_HELPER must name memacct-test-helper}"
: "${MEMACCT_PIDREUSE_HELPER:?MEMACCT_PIDREUSE_HELPER must name memacct-pidreuse-helper}"
K=1024
M=$((1024 * 1024))
VICTIM=65534
ATTACKER=65533
N=3000
FIFO=$TMP/kept.fifo

# at_pid OUTFILE UID CMD...: CMD as UID in the background, stdout and
# stderr to OUTFILE, with pid $N: the namespace hands out the pid after
# ns_last_pid next, and nothing in here forks between the write and the
# fork of the subshell, which execs setpriv, which execs CMD. Its pid in
# BG_PID; cleanup kills it if it is still running.
at_pid() {
        local out=$1 uid=$2

        shift 2
        [[ ! -e /proc/$N ]] || {
                fail "pid $N is free before it is handed out again"
                return 1
        }
        : >"$out"
        echo $((N - 1)) >/proc/sys/kernel/ns_last_pid
        (exec setpriv --reuid="$uid" --regid="$uid" --clear-groups "$@") >>"$out" 2>&1 7>&- &
        BG_PID=$!
        BG_PIDS+=("$BG_PID")
        check_eq "the process got pid $N" "$BG_PID" "$N"
}
first_line() {
        [[ -s $1 ]] && head -n 1 "$1"
}
has_lines() {
        [[ $(wc -l <"$1") -ge $2 ]]
}
check_usages() {
        local what=$1

        shift
        while (($#)); do
                check_eq "$what: current of $1" "$(current "$1")" "$2"
                shift 2
        done
}

check_eq "this shell is init of a new pid namespace" "$$" 1
check_start_daemon || exit 1
for g in /v:$VICTIM /a:$ATTACKER /a2:$ATTACKER; do
        check_run "create ${g%%:*} for uid ${g#*:}" 0 \
                "$MEMACCT_TEST_HELPER" "$SOCK" create-owned "${g%%:*}" "${g#*:}"
done
ctl create /r
mkfifo -m 0666 "$FIFO"

# ---- the victim: a session at pid N, kept open by its child ----

at_pid "$TMP/victim.out" "$VICTIM" "$MEMACCT_PIDREUSE_HELPER" hold "$SOCK" /v "$M" "$FIFO"
VICTIM_PID=$BG_PID
rc=0
wait "$VICTIM_PID" || rc=$?
check_eq "the victim exits 0 after handing its connection on" "$rc" 0
check_eq "the victim saw itself as pid $N" "$(first_line "$TMP/victim.out")" "$N"
HOLDER=$(sed -n 2p "$TMP/victim.out")
check_match "the child keeping the connection runs" "$HOLDER" '^[0-9]+$'
# Keeps the FIFO open for writing, so the child reads until the end.
exec 7>"$FIFO"
check_usages "the victim's session outlives the victim" /v "$M" /a 0 /a2 0

# ---- the attacker at pid N moves "its own" pid ----

at_pid "$TMP/attacker.out" "$ATTACKER" "$MEMACCT_PIDREUSE_HELPER" charge-move "$SOCK" /a $((64 * K)) /a2
ATTACKER_PID=$BG_PID
wait_for 10 has_lines "$TMP/attacker.out" 2 || fail "the attacker answered: $(cat "$TMP/attacker.out")"
check_eq "the attacker is pid $N" "$(first_line "$TMP/attacker.out")" "$N"
check_eq "the attacker's move took its own session only" "$(sed -n 2p "$TMP/attacker.out")" 1
check_usages "after the attacker's move" /v "$M" /a 0 /a2 $((64 * K))
stop_bg "$ATTACKER_PID" TERM || true
check_current_soon "the attacker's charge ends with it" /a2 0
check_eq "the victim's charge stays" "$(current /v)" "$M"

# The same through memacctctl: its session is the only one moved.
at_pid "$TMP/ctl.out" "$ATTACKER" "$MEMACCTCTL" --socket "$SOCK" --json move "$N" /a2
rc=0
wait "$BG_PID" || rc=$?
check_eq "memacctctl move of its own pid succeeds" "$rc" 0
check_eq "memacctctl moved one session" "$(jget 'd["sessions"]' <"$TMP/ctl.out" 2>&1)" 1
check_usages "after memacctctl's move" /v "$M" /a2 0

# ---- the kept connection cannot move pid N: its process is gone ----

echo "$N /a2" >&7
wait_for 10 grep -q "^move $N:" "$TMP/victim.out" || fail "the child answered: $(cat "$TMP/victim.out")"
check_nomatch "the kept connection's move by pid is refused" "$(grep "^move $N:" "$TMP/victim.out")" \
        "^move $N: [0-9]+$"
check_usages "after the kept connection's move" /v "$M" /a2 0

# ---- root moves pid N: the live process's sessions only ----

at_pid "$TMP/live.out" "$ATTACKER" "$MEMACCT_PIDREUSE_HELPER" live "$SOCK" /a $((64 * K))
LIVE_PID=$BG_PID
wait_for 10 grep -q '^ready$' "$TMP/live.out" || fail "the live process answered: $(cat "$TMP/live.out")"
check_usages "before root's move" /v "$M" /a $((64 * K)) /r 0
check_run "root moves pid $N" 0 ctl --json move "$N" /r
check_eq "root moved one session" "$(jget 'd["sessions"]' <<<"$OUT" 2>&1)" 1
check_usages "after root's move" /v "$M" /a 0 /r $((64 * K))
stop_bg "$LIVE_PID" TERM || true
check_current_soon "the live process's charge ends with it" /r 0
check_run "root's move of pid $N with no process at it is refused" 1 ctl move "$N" /r
check_usages "after root's refused move" /v "$M" /r 0

# ---- the victim's session ends with the last copy of its connection ----

exec 7>&-
check_current_soon "the victim's charge ends with the connection" /v 0

check_stop_daemon
exit 0
