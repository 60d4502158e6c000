#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# Lifetimes. A session's charges die with the session: when its client
# exits normally and when it is killed with SIGKILL, and only its own.
# Kept charges, limits and owners outlive the daemon: SIGTERM and SIGINT
# save them, a crash (SIGKILL) loses nothing already saved, a damaged
# state file is set aside and the previous one used, and a client that
# held charges (memacctctl hold, built on libmemacct) charges them again
# when the daemon is back.

# shellcheck source-path=SCRIPTDIR source=../lib.sh
source "$(dirname "$0")/../lib.sh"

: "${MEMACCT_TEST_HELPER:?MEMACCT_TEST_HELPER must name memacct-test-helper}"
K=1024
M=$((1024 * 1024))
NOBODY=65534

# start_hold GROUP SIZE [OPTIONS...]: a backgrounded memacctctl hold that
# holds its charge when this returns 0; its pid in HOLD_PID.
start_hold() {
        local out=$TMP/hold.$RANDOM

        bg "$out" "${CTL[@]}" hold "$@"
        HOLD_PID=$BG_PID
        if wait_for 10 file_has "$out" '^holding'; then
                return 0
        fi
        fail "hold $* did not start: $(<"$out")"
        return 1
}

check_start_daemon || exit 1

# ---- a session's charges end with it ----

ctl create /sess max=64M
start_hold /sess 1M
check_eq "a hold's charge is in the group" "$(current /sess)" $M
rc=0
stop_bg "$HOLD_PID" TERM || rc=$?
check_eq "the hold exits normally" "$rc" 0
check_current_soon "released when the client exits normally" /sess 0

start_hold /sess 3M --stat file
check_eq "the hold to kill is charged" "$(current /sess)" $((3 * M))
rc=0
stop_bg "$HOLD_PID" KILL || rc=$?
check_eq "the hold died of SIGKILL" "$rc" $((128 + 9))
check_current_soon "released after kill -9 of the client" /sess 0
check_eq "the stat item is released too" "$(field /sess 'd["stat"]["file"]' --exact)" 0

# Several sessions: killing one releases exactly its own charges.
ctl create /sess/a
ctl create /sess/b
start_hold /sess/a 100K
h1=$HOLD_PID
start_hold /sess/a 200K
h2=$HOLD_PID
start_hold /sess/b 300K
h3=$HOLD_PID
check_eq "three holds" "$(current /sess)" $((600 * K))
stop_bg "$h2" KILL || true
check_current_soon "one killed: its 200K are gone" /sess/a $((100 * K))
check_eq "the others keep theirs" "$(current /sess)" $((400 * K))
# A session moved elsewhere and killed is released where it was moved to.
ctl move "$h1" /sess/b
check_eq "moved" "$(current /sess/a)/$(current /sess/b)" "0/$((400 * K))"
stop_bg "$h1" KILL || true
check_current_soon "the moved session's charges are released after kill -9" /sess/b $((300 * K))
stop_bg "$h3" INT || fail "the last hold exits 0"
check_current_soon "every session charge is gone" /sess 0
check_eq "peak saw all of them" "$(field /sess 'd["peak"]')" $((3 * M))
check_run "a group whose sessions ended can be removed" 0 ctl remove /sess/a

# A watcher killed does not disturb the daemon.
bg "$TMP/watch.out" "${CTL[@]}" watch /sess
sleep 0.2
stop_bg "$BG_PID" KILL || true
check_run "the daemon answers after a watcher is killed" 0 ctl show /sess

# ---- kept charges, limits and owners survive a restart ----

ctl create /keep max=10M high=8M low=1M min=512K
ctl create /keep/a max=4M
ctl create /keep/a/deep high=1M
ctl charge /keep/a 3M --stat file
ctl charge /keep 1M
ctl charge /keep/a/deep 64K --stat kernel
ctl set /keep/a high=2M low=256K
"$MEMACCT_TEST_HELPER" "$SOCK" create-owned /deleg $NOBODY $((2 * M))
# A max forced below the kept usage must come back as it was.
ctl set /keep/a/deep max=32K --force

# What must come back: everything show reports except what only lives in
# memory (peak, failcnt, events).
snapshot() {
        local g

        for g in /keep /keep/a /keep/a/deep /deleg; do
                printf '%s ' "$(field "$g" '[d[k] for k in ("path","current","max","high","low","min","stat")]' --exact)"
                "$MEMACCT_TEST_HELPER" "$SOCK" owner "$g" 2>&1
        done
}
before=$(snapshot)
check_match "the snapshot has the kept charges" "$before" "\"/keep/a\", $((3 * M + 64 * K)), $((4 * M)), $((2 * M)), $((256 * K)), 0"
check_match "the snapshot has the owner" "$before" "\"/deleg\", 0, $((2 * M)).* $NOBODY\$"

# A watcher from before the restart: the library subscribes it again.
# watch_sees_it N: raise a max event below /keep (/keep/a/deep is over its
# forced max, so the charge is refused and changes nothing) and say
# whether the watcher has printed more than N of them.
watch_sees_it() {
        ctl charge /keep/a/deep 1 >/dev/null 2>&1 || true
        (($(grep -c ' /keep/a/deep max' "$TMP/watch-restart.out") > $1))
}
bg "$TMP/watch-restart.out" "${CTL[@]}" watch /keep
watcher=$BG_PID
# Subscribed (not only connected) before the daemon stops: its first
# event is in.
wait_for 10 watch_sees_it 0 || fail "the watcher subscribes: '$(<"$TMP/watch-restart.out")'"
seen=$(grep -c ' /keep/a/deep max' "$TMP/watch-restart.out")

check_stop_daemon TERM
check_eq "the socket is removed at exit" "$([[ -e $SOCK ]] && echo present || echo removed)" removed
check_match "the state is on disk" "$(cat "$STATE/state" 2>&1)" '^group /keep/a owner=0 max=4194304 '
check_start_daemon || exit 1
after=$(snapshot)
check_eq "kept charges, limits and owners after SIGTERM and restart" "$after" "$before"
check_run "the restored max is in force" 1 ctl charge /keep/a 1M
check_match "and refuses with the restored group named" "$ERR" '\(max of /keep/a\)'
check_run "a kept charge can be uncharged after the restart" 0 ctl uncharge /keep/a/deep 64K --stat kernel
check_run "the restored forced max refuses what it refused before" 1 ctl charge /keep/a/deep 64K --stat kernel
ctl set /keep/a/deep max=32K --force
ctl set /keep/a/deep max=max
ctl charge /keep/a/deep 64K --stat kernel
ctl set /keep/a/deep max=32K --force

# The watcher reconnected and subscribed again: it sees events raised now.
if wait_for 20 watch_sees_it "$seen"; then
        pass
else
        fail "a watch started before the restart prints events after it: '$(<"$TMP/watch-restart.out")'"
fi
rc=0
stop_bg "$watcher" INT || rc=$?
check_eq "that watcher exits 0" "$rc" 0

check_stop_daemon INT
check_start_daemon || exit 1
check_eq "the same after SIGINT and a second restart" "$(snapshot)" "$before"

# A crash: what was saved before SIGKILL is there; the stale socket is no
# obstacle.
ctl charge /keep 512K --stat sock
# Saved: in the state file or the journal after it.
state_has() {
        cat "$STATE/state" "$STATE/journal" 2>/dev/null | grep -q "$1"
}
if state_has 'kept.sock=524288'; then pass; else fail "the kept charge is saved when its OK arrives: $(cat "$STATE/state" "$STATE/journal")"; fi
crashed=$(snapshot)
rc=0
stop_daemon KILL || rc=$?
check_eq "the daemon died of SIGKILL" "$rc" $((128 + 9))
check_eq "the socket is left behind" "$([[ -S $SOCK ]] && echo present || echo removed)" present
check_start_daemon || exit 1
check_match "the stale socket is replaced" "$(<"$DAEMON_LOG")" 'stale socket'
check_eq "what was saved before the crash is back" "$(snapshot)" "$crashed"
ctl uncharge /keep 512K --stat sock

# ---- held session charges come back with their client ----

ctl set /keep/a/deep max=max

start_hold /keep/a/deep 256K --stat anon
holder=$HOLD_PID
start_hold /keep 128K
doomed=$HOLD_PID
with_holds=$((4 * M + 64 * K + 256 * K + 128 * K))
check_eq "kept plus held" "$(current /keep)" $with_holds
# A hold moved by another process (memacctctl move): after the restart its
# charges belong where it was moved to, as they did before.
ctl create /mva
ctl create /mvb
start_hold /mva 200K
moved=$HOLD_PID
ctl move "$moved" /mvb
check_eq "moved before the restart" "$(current /mva)/$(current /mvb)" "0/$((200 * K))"
check_stop_daemon TERM
# This client dies while the daemon is away: nobody charges its bytes again.
stop_bg "$doomed" KILL || true
check_start_daemon || exit 1
check_current_soon "the surviving hold charges its bytes again" /keep $((with_holds - 128 * K)) 20
check_eq "in its group" "$(current /keep/a/deep)" $((64 * K + 256 * K))
check_eq "as its stat item" "$(field /keep/a/deep 'd["stat"]["anon"]' --exact)" $((256 * K))
check_current_soon "a moved hold charges its bytes again where it was moved to" /mvb $((200 * K)) 20
check_eq "not in the group it left" "$(current /mva)" 0
stop_bg "$moved" INT || fail "the moved hold exits 0"
check_current_soon "the moved hold's charge ends with it" / $((with_holds - 128 * K))
check_run "the replayed hold is a live session: move it" 0 ctl move "$holder" /keep/a
check_eq "moved" "$(current /keep/a/deep)" $((64 * K))
stop_bg "$holder" INT || fail "the replayed hold exits 0"
check_current_soon "and its charge ends with it" /keep $((4 * M + 64 * K))

# ---- a damaged state file is set aside, the previous one used ----

ctl create /later
if state_has '^[a-z]* /later '; then pass; else fail "/later is saved when its OK arrives"; fi
check_stop_daemon TERM
check_eq "a previous state is kept" "$([[ -f $STATE/state.old ]] && echo yes || echo no)" yes
# Flip one digit of a kept charge: the checksum must catch it.
sed -i 's/kept.file=3145728/kept.file=3145729/' "$STATE/state"
check_start_daemon || exit 1
check_eq "the damaged state is set aside" "$([[ -f $STATE/state.bad ]] && echo yes || echo no)" yes
check_match "the damage is reported" "$(<"$DAEMON_LOG")" 'damaged'
check_eq "the groups come back from the previous state" "$(field /keep/a 'd["max"]')" $((4 * M))
check_eq "not the damaged value" "$(field /keep/a 'd["stat"]["file"]' --exact)" $((3 * M))

check_stop_daemon
exit 0
