#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# Identity and delegation. A non-root uid (memacctctl run through setpriv)
# may read everything, is refused (exit 1, the cause on stderr) when it
# creates, charges, sets limits or removes outside a subtree delegated to
# it, and may do all of that strictly inside one; the delegated group
# itself it may charge but not reshape. Another uid gets nothing of it.

# shellcheck source-path=SCRIPTDIR source=../lib.sh
source "$(dirname "$0")/../lib.sh"

: "${MEMACCT_TEST_HELPER:?MEMACCT_TEST_HELPER must name memacct-test-helper}"
if [[ $(id -u) != 0 ]]; then
        echo "not root: cannot switch uids"
        exit 77
fi
K=1024
M=$((1024 * 1024))
NOBODY=65534
STRANGER=65533
as_uid() {
        local uid=$1

        shift
        setpriv --reuid="$uid" --regid="$uid" --clear-groups "$@"
}
nctl() {
        as_uid "$NOBODY" "$MEMACCTCTL" --socket "$SOCK" "$@"
}
sctl() {
        as_uid "$STRANGER" "$MEMACCTCTL" --socket "$SOCK" "$@"
}
owner() {
        "$MEMACCT_TEST_HELPER" "$SOCK" owner "$1" 2>&1
}
# check_denied WHAT CMD...: exit 1 and the cause on stderr.
check_denied() {
        local what=$1

        shift
        check_run "$what" 1 "$@"
        check_match "$what: refused for want of permission" "$ERR" 'refused: .*(permission denied|not delegated|only root)'
}

check_start_daemon || exit 1
check_eq "setpriv switches the uid" "$(as_uid $NOBODY id -u)" $NOBODY
check_eq "the socket is open to all" "$(stat -c %a "$SOCK")" 666

ctl create /shared max=10M
ctl create /shared/x
ctl charge /shared/x 1M
ctl create /other
check_run "root delegates /deleg to nobody" 0 \
        "$MEMACCT_TEST_HELPER" "$SOCK" create-owned /deleg $NOBODY $((4 * M))
check_eq "the owner is recorded" "$(owner /deleg)" $NOBODY
check_eq "a group root creates is root's" "$(owner /shared)" 0

# ---- reading is open ----

check_run "nobody: show" 0 nctl --json show /shared
check_eq "nobody reads the usage" "$(jget 'd["current"]' <<<"$OUT")" $M
check_run "nobody: tree" 0 nctl --json tree /
check_eq "nobody sees every group" "$(jget '[g["path"] for g in d]' <<<"$OUT")" \
        '["/", "/shared", "/shared/x", "/other", "/deleg"]'
check_run "nobody: hello reports our identity" 0 as_uid $NOBODY "$MEMACCT_TEST_HELPER" "$SOCK" hello
check_match "the server names itself" "$OUT" '^memacctd [0-9]'

# ---- refused outside the delegated subtree ----

check_denied "nobody: create below /" nctl create /mine
check_denied "nobody: create below a root group" nctl create /shared/mine
check_run "nothing was created" 1 ctl show /shared/mine
check_denied "nobody: kept charge outside" nctl charge /shared 1K
check_match "the charge refusal says permission denied" "$ERR" 'permission denied'
check_denied "nobody: uncharge outside" nctl uncharge /shared/x 1K
check_denied "nobody: hold outside" nctl hold /shared 1K
check_eq "no charge got through" "$(current /shared)" $M
check_denied "nobody: set limits outside" nctl set /shared max=1G
check_eq "the max is unchanged" "$(field /shared 'd["max"]')" $((10 * M))
check_denied "nobody: remove outside" nctl remove /other
check_run "/other is still there" 0 ctl show /other
check_denied "nobody: reset-peak outside" nctl reset-peak /shared
check_denied "nobody: set limits on the delegated group itself" nctl set /deleg max=1G
check_eq "the delegated budget is unchanged" "$(field /deleg 'd["max"]')" $((4 * M))
check_denied "nobody: remove the delegated group itself" nctl remove /deleg
check_run "nobody: delegate to another uid (libmemacct)" 1 \
        as_uid $NOBODY "$MEMACCT_TEST_HELPER" "$SOCK" create-owned /deleg/gift 0
check_match "only root delegates" "$ERR" 'Operation not permitted: only root delegates'
check_run "nothing was created" 1 ctl show /deleg/gift

# ---- allowed inside ----

check_run "nobody: create inside" 0 nctl create /deleg/job max=1M
check_eq "what nobody creates is nobody's" "$(owner /deleg/job)" $NOBODY
check_run "nobody: create deeper" 0 nctl create /deleg/job/step
check_run "nobody: create with itself as owner (libmemacct)" 0 \
        as_uid $NOBODY "$MEMACCT_TEST_HELPER" "$SOCK" create-owned /deleg/own $NOBODY
check_run "nobody: kept charge inside" 0 nctl charge /deleg/job/step 512K
check_eq "the charge is counted up to the delegated group" "$(current /deleg)" $((512 * K))
check_run "nobody: kept charge on the delegated group itself" 0 nctl charge /deleg 100K
check_run "nobody: set limits inside" 0 nctl set /deleg/job max=2M high=1536K
check_eq "the new max" "$(field /deleg/job 'd["max"]')" $((2 * M))
check_run "nobody: a charge over the delegated max is refused by it" 1 nctl charge /deleg/job 3M
check_match "the refusal names the delegated group" "$ERR" '\(max of /deleg/job\)'
check_run "nobody: reset-peak inside" 0 nctl reset-peak /deleg/job
check_run "nobody: reset-peak of the delegated group" 0 nctl reset-peak /deleg

# setpriv execs memacctctl: the pid is the client's.
bg "$TMP/hold.out" setpriv --reuid=$NOBODY --regid=$NOBODY --clear-groups \
        "$MEMACCTCTL" --socket "$SOCK" hold /deleg/job 256K
holder=$BG_PID
if wait_for 10 file_has "$TMP/hold.out" '^holding'; then pass; else fail "nobody: hold inside: $(<"$TMP/hold.out")"; fi
check_eq "nobody's hold is counted" "$(current /deleg/job)" $((512 * K + 256 * K))
check_denied "nobody: move a process (root only)" nctl move "$holder" /deleg/own
check_run "root may move nobody's process" 0 ctl move "$holder" /deleg/own
check_eq "moved" "$(current /deleg/own)" $((256 * K))
rc=0
stop_bg "$holder" INT || rc=$?
check_eq "nobody's hold exits 0" "$rc" 0
check_current_soon "nobody's hold is released" /deleg/own 0

check_run "nobody: uncharge inside" 0 nctl uncharge /deleg/job/step 512K
check_run "nobody: uncharge on the delegated group" 0 nctl uncharge /deleg 100K
# Root's kept charge on the delegated group is the delegator's: nobody
# may release only what it kept there itself.
before=$(current /deleg)
check_run "root: kept charge on the delegated group" 0 ctl charge /deleg 200K
check_run "nobody: kept charge on the delegated group next to root's" 0 nctl charge /deleg 50K
check_run "nobody: uncharge of root's kept bytes is refused" 1 nctl uncharge /deleg 250K
check_match "the refusal says whose they are" "$ERR" \
        'refused: /deleg: 204800 of the 256000 anon bytes it keeps were kept by whoever delegated it'
check_eq "the refused uncharge released nothing" "$(current /deleg)" $((before + 250 * K))
check_run "nobody: uncharge of its own kept bytes" 0 nctl uncharge /deleg 50K
check_run "nobody: not one byte more" 1 nctl uncharge /deleg 1K
check_run "root: releases the kept bytes that are its own" 0 ctl uncharge /deleg 200K
check_eq "the delegated group keeps what it kept before" "$(current /deleg)" "$before"
check_run "nobody: remove inside" 0 nctl remove /deleg/job/step
check_eq "all gone" "$(current /deleg)" 0

# ---- a delegate cannot force its way past the budget it was given ----

# Root gives nobody /top/budget with 512K under /top's 1M. Whatever nobody
# does with MEMACCT_FORCE, neither max may be passed: they are root's
# (service/authz.h: "never on the delegated group itself, whose budget belongs
# to whoever delegated it").
ctl create /top max=1M
"$MEMACCT_TEST_HELPER" "$SOCK" create-owned /top/budget $NOBODY $((512 * K))
nctl create /top/budget/job max=64K
run as_uid $NOBODY "$MEMACCT_TEST_HELPER" "$SOCK" charge-forced /top/budget $((10 * M))
check_eq "nobody: a forced charge past the delegated max is refused" "$RC" 1
run as_uid $NOBODY "$MEMACCT_TEST_HELPER" "$SOCK" charge-forced /top/budget/job $((2 * M))
check_eq "nobody: a forced charge below it, past the parent's max, is refused" "$RC" 1
check_eq "the delegated group stays within the max root gave it" \
        "$(field /top/budget 'd["current"] <= d["max"]')" True
check_eq "root's group stays within its max" "$(field /top 'd["current"] <= d["max"]')" True
run "$MEMACCT_TEST_HELPER" "$SOCK" charge-forced /top/budget $((2 * M))
check_eq "root may force past any max" "$RC" 0
check_eq "only root's forced charge is counted" "$(current /top)" $((2 * M))

# ---- another uid: the delegation is not its ----

check_denied "another uid: create in nobody's subtree" sctl create /deleg/intruder
check_denied "another uid: charge in nobody's subtree" sctl charge /deleg/job 1K
check_denied "another uid: set limits in nobody's subtree" sctl set /deleg/job max=1G
check_denied "another uid: remove in nobody's subtree" sctl remove /deleg/job
check_run "another uid may read" 0 sctl show /deleg/job

# ---- a delegate's held charges come back after a restart ----

bg "$TMP/hold2.out" setpriv --reuid=$NOBODY --regid=$NOBODY --clear-groups \
        "$MEMACCTCTL" --socket "$SOCK" hold /deleg/own 300K
holder=$BG_PID
wait_for 10 file_has "$TMP/hold2.out" '^holding' || fail "nobody: hold before the restart: $(<"$TMP/hold2.out")"
check_stop_daemon
printf '[limits]\nsessions-per-uid = 2\n' >"$TMP/limits.conf"
check_start_daemon --config "$TMP/limits.conf" || exit 1
check_eq "the delegation survived the restart" "$(owner /deleg)" $NOBODY
check_current_soon "nobody's hold charges its bytes again after the restart" /deleg/own $((300 * K)) 20
rc=0
stop_bg "$holder" INT || rc=$?
[[ $rc == 0 ]] || echo "the hold said: $(<"$TMP/hold2.out")" >&2
check_eq "nobody's hold exits 0 after the restart" "$rc" 0
check_current_soon "and releases its bytes" /deleg/own 0

# ---- sessions per uid ----
watchers=()
for i in 1 2; do
        bg "$TMP/watch$i.out" setpriv --reuid=$NOBODY --regid=$NOBODY --clear-groups \
                "$MEMACCTCTL" --socket "$SOCK" watch /deleg
        watchers+=("$BG_PID")
        # Its session exists once the daemon knows the pid.
        wait_for 10 ctl client "$BG_PID" || fail "nobody's watcher $i connects: $(<"$TMP/watch$i.out")"
done
check_run "a third session of nobody is refused" 1 nctl show /deleg
check_match "and told why" "$ERR" 'too many sessions'
check_run "root is never limited" 0 ctl show /deleg
check_run "another uid has sessions of its own" 0 sctl show /deleg
stop_bg "${watchers[0]}" KILL || true
if wait_for 10 nctl show /deleg; then
        pass
else
        fail "a session of nobody ended by SIGKILL frees its place"
fi
stop_bg "${watchers[1]}" INT || fail "nobody's second watcher exits 0"

check_stop_daemon
exit 0
