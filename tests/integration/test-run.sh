#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# memacctctl run: the command's session charges (libmemacct, no attach:
# $MEMACCT_GROUP) land in the transient group and its max refuses them;
# the group is gone after the command, kept with --keep-group and while a
# session of the command's child outlives it; the exit status is the
# command's (3 -> 3, SIGTERM -> 143, not found 127, not executable 126);
# the signals sent to run reach the command; --name and --group place the
# group.

# shellcheck source-path=SCRIPTDIR source=../lib.sh
source "$(dirname "$0")/../lib.sh"

: "${MEMACCT_RUN_HELPER:?MEMACCT_RUN_HELPER must name memacct-run-helper}"
H=$MEMACCT_RUN_HELPER
M=$((1024 * 1024))

exists() {
        ctl show "$1" >/dev/null 2>&1
}

gone() {
        ! exists "$1"
}

# check_gone WHAT PATH: PATH does not exist (now: run returned after it
# removed it).
check_gone() {
        if exists "$2"; then
                fail "$1: $2 still exists"
        else
                pass
        fi
}

# await_file FILE WHAT: FILE appears within 10 s.
await_file() {
        if wait_for 10 test -e "$1"; then
                pass
        else
                fail "$2: $1 did not appear"
                return 1
        fi
}

# The groups below /run.slice, one a line.
run_children() {
        ctl --json tree /run.slice | jget '"\n".join(g["path"] for g in d[1:])'
}

check_start_daemon || exit 1

# ---- usage ----

check_run "run without a command" 2 "${CTL[@]}" run max=10M --
check_run "run without --" 2 "${CTL[@]}" run max=10M "$H" exit 0
check_match "without --: says why" "$ERR" 'write -- before the command'
check_run "--group and --name" 2 "${CTL[@]}" run --group /x --name y -- "$H"
check_run "--name with a /" 2 "${CTL[@]}" run --name a/b -- "$H"
check_run "a bad size" 2 "${CTL[@]}" run max=lots -- "$H"
check_run "--keep-group elsewhere" 2 "${CTL[@]}" show / --keep-group
check_eq "no group made by a usage error" "$(exists /run.slice && echo yes || echo no)" no

# ---- the default name, the max, the status, the removal ----

out=$TMP/run1.out
bg "$out" "${CTL[@]}" run max=10M -- "$H" charge $((4 * M)) charge $((8 * M)) ready "$TMP/r1" \
        wait "$TMP/g1" exit 3
pid=$BG_PID
if await_file "$TMP/r1" "the command under run starts"; then
        group=$(run_children)
        check_match "the group's name" "$group" "^/run\.slice/run-$pid-[0-9a-f]{8}$"
        check_eq "the command's charge is in the group" "$(current "$group")" $((4 * M))
        check_eq "the group's max" "$(field "$group" 'd["max"]')" $((10 * M))
        check_match "the charge within the max" "$(<"$out")" "charged $((4 * M))"
        check_match "the charge over the max refused" "$(<"$out")" "refused $((8 * M)): EDQUOT"
        : >"$TMP/g1"
        rc=0
        stop_bg "$pid" 0 || rc=$?
        check_eq "exit 3 passed through" "$rc" 3
        check_gone "after the command" "$group"
        check_eq "nothing left below /run.slice" "$(run_children)" ""
fi

# ---- signals ----

bg "$TMP/run2.out" "${CTL[@]}" run -- "$H" ready "$TMP/r2" wait "$TMP/never"
pid=$BG_PID
if await_file "$TMP/r2" "run for SIGTERM starts"; then
        rc=0
        stop_bg "$pid" TERM || rc=$?
        check_eq "SIGTERM forwarded; killed by it: 143" "$rc" 143
        check_eq "nothing left after SIGTERM" "$(run_children)" ""
fi

bg "$TMP/run3.out" "${CTL[@]}" run -- "$H" usr1 7 ready "$TMP/r3" wait "$TMP/never"
pid=$BG_PID
if await_file "$TMP/r3" "run for SIGUSR1 starts"; then
        rc=0
        stop_bg "$pid" USR1 || rc=$?
        check_eq "SIGUSR1 reaches the command, which exits 7" "$rc" 7
        check_match "the command saw SIGUSR1" "$(<"$TMP/run3.out")" '^got SIGUSR1$'
fi

# ---- commands that cannot run ----

check_run "a command not found: 127" 127 "${CTL[@]}" run -- "$TMP/no-such-command"
check_match "not found: says why" "$ERR" 'No such file or directory'
check_run "a command not executable: 126" 126 "${CTL[@]}" run -- /dev/null
check_eq "nothing left after commands that did not run" "$(run_children)" ""

# ---- --name, --group, --keep-group ----

check_run "--name" 0 "${CTL[@]}" run --name named max=8M -- \
        "$H" charge $((2 * M)) ready "$TMP/r4" exit 0
check_match "--name: charged" "$OUT" "charged $((2 * M))"
check_gone "--name: removed after" /run.slice/named

ctl create /mine
bg "$TMP/run5.out" "${CTL[@]}" run --group /mine/job high=6M -- "$H" charge $M ready "$TMP/r5" \
        wait "$TMP/g5"
pid=$BG_PID
if await_file "$TMP/r5" "run --group starts"; then
        check_eq "--group: the charge there" "$(current /mine/job)" "$M"
        check_eq "--group: the limits given" "$(field /mine/job 'd["high"]')" $((6 * M))
        : >"$TMP/g5"
        rc=0
        stop_bg "$pid" 0 || rc=$?
        check_eq "--group: exit 0" "$rc" 0
        check_gone "--group: removed after" /mine/job
fi
check_run "--group: an existing group is refused" 1 "${CTL[@]}" run --group /mine -- "$H"
check_eq "--group: the existing group stays" "$(exists /mine && echo yes)" yes

check_run "--keep-group" 0 "${CTL[@]}" run --keep-group --name kept -- "$H" charge $M
check_match "--keep-group: says so" "$ERR" 'kept /run\.slice/kept'
check_eq "--keep-group: kept, its session's charge released" "$(current /run.slice/kept)" 0
ctl remove /run.slice/kept

# ---- a session that outlives the command keeps the group ----

check_run "a child's session outlives the command" 0 "${CTL[@]}" run --name outlive -- \
        bash -c '"$1" charge 1048576 ready "$2" wait "$3" >/dev/null &
                until [[ -e $2 ]]; do sleep 0.05; done' sh "$H" "$TMP/r6" "$TMP/g6"
check_match "outliving session: a note" "$ERR" 'leaving /run\.slice/outlive'
check_eq "outliving session: the group stays, charged" "$(current /run.slice/outlive)" "$M"
: >"$TMP/g6"
if wait_for 10 gone /run.slice/outlive; then
        pass
else
        fail "the daemon removes the transient group once the child's session ended"
fi

# ---- libmemacct and a MEMACCT_GROUP that is not there ----

RC=0
MEMACCT_SOCKET=$SOCK MEMACCT_GROUP=/no/such "$H" charge 1 >"$TMP/r7" 2>&1 || RC=$?
check_eq "a missing MEMACCT_GROUP fails the connect" "$RC" 1
check_match "a missing MEMACCT_GROUP: says which" "$(<"$TMP/r7")" 'MEMACCT_GROUP=/no/such'
run_cgroups_rmdir kept outlive named
