#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# memacctctl --bus against the real memacctd on a private bus: every
# command prints the same and exits the same over the bus as over the
# socket (issue 4: "same output").
#
# The same command sequence runs twice, over the socket on a tree /S and
# over the bus on a tree /B; each step's exit status, stdout and stderr
# must be equal once the tree's name is replaced by /T (the only thing
# that legitimately differs). Then the same state is read both ways
# (show, tree, --json), and hold (a session charge that belongs to the
# bus peer and ends with it), watch (the Event signal) and the ways of
# naming the bus (--bus, --bus=system, --bus=user, --bus=ADDRESS) are
# checked.

# shellcheck source=tests/dbus-client/lib.sh
source "$(dirname "$0")/lib.sh"

check_start || exit 1

# nostat: stdin with the stat items left out (the JSON "stat" member, the
# text's memory.stat lines). The bus cannot ask for a flush of the
# daemon's per-thread statistics, and the Group properties are read
# without one, so --exact over the bus is at most one flush interval
# (flush-interval, 2 s by default) behind; the stat items are compared
# apart, once they have had time to settle.
nostat() {
        "$PY" -I -S -c '
import json, sys
skip = False
for line in sys.stdin.read().splitlines():
    if line[:1] in ("{", "["):
        try:
            d = json.loads(line)
            strip = lambda g: {k: v for k, v in g.items() if k != "stat"}
            print(json.dumps([strip(g) for g in d] if isinstance(d, list) else strip(d)))
            continue
        except ValueError:
            pass
    if line.startswith("memory.stat:"):
        skip = True
        print("memory.stat: (left out)")
        continue
    if skip and line.startswith("\t"):
        continue
    skip = False
    print(line)'
}

# step WHO ARGS...: run memacctctl over WHO (sock or bus) with ARGS, in
# which every @ stands for the tree's root; record the outcome with the
# root written /T and the stat items left out.
step() {
        local who=$1 root rc=0

        shift
        if [[ $who == sock ]]; then root=/S; else root=/B; fi
        "ctl_$who" "${@//@/$root}" >"$TMP/o" 2>"$TMP/e" || rc=$?
        {
                echo "== ${*} -> $rc"
                sed "s#$root#/T#g" "$TMP/o" | nostat
                echo "-- stderr"
                sed "s#$root#/T#g" "$TMP/e"
        } >>"$TMP/steps.$who"
}

# The sequence: creation with limits, kept charges and uncharges, the
# refusals of both limits in the path, force, peaks, listing, and the
# errors of every kind the daemon reports. Reads are --exact: without it
# the stat items are whatever the daemon's per-thread statistics had
# flushed by then, which depends on timing, not on the transport.
sequence() {
        local who=$1

        : >"$TMP/steps.$who"
        step "$who" create @ max=1M high=768K low=256K min=128K
        step "$who" create @/u
        step "$who" create @/u/v max=64K
        step "$who" create @/w low=1G
        step "$who" show @ --exact
        step "$who" --json show @ --exact
        step "$who" charge @/u 100K --stat file
        step "$who" charge @/u 12K
        step "$who" --json show @/u --exact
        step "$who" show @/u --exact
        step "$who" charge @/u/v 100K
        step "$who" charge @/u 2M --stat shmem
        step "$who" uncharge @/u 200K --stat file
        step "$who" uncharge @/u 50K --stat file
        step "$who" uncharge @/u 1K --stat sock
        step "$who" set @ max=10K
        step "$who" set @ max=10K --force
        step "$who" --json show @ --exact
        step "$who" set @ max=max high=max
        step "$who" reset-peak @/u
        step "$who" --json show @/u --exact
        step "$who" tree @ --exact
        step "$who" --json tree @ --exact
        step "$who" tree @/u --exact
        step "$who" create @
        step "$who" create @/nope/x
        step "$who" create @/bad%name
        step "$who" show @/nope
        step "$who" remove @/nope
        step "$who" remove @
        step "$who" remove @/u/v
        step "$who" set @/nope max=1K
        step "$who" reset-peak @/nope
        step "$who" charge @/nope 1K
        step "$who" charge @/u 1K --stat nosuch
        step "$who" charge @/u 18446744073709551615
        step "$who" hold @/nope 1K
        step "$who" move 0 @/u
        step "$who" client 2147483646
        step "$who" show relative
        step "$who" create
        step "$who" frobnicate
}

sequence sock
sequence bus
if cmp -s "$TMP/steps.sock" "$TMP/steps.bus"; then
        pass
else
        fail "the sequence differs over the bus (< socket, > bus):
$(diff "$TMP/steps.sock" "$TMP/steps.bus" || true)"
fi
# The sequence really ran: a refusal names the group whose max refused.
check_match "the sequence saw a refused charge" "$(cat "$TMP/steps.bus")" \
        'charge refused: /T/u: limit exceeded \(max of /T\)'

# The stat items of both trees, once settled: over the bus as over the
# socket with --exact.
stats_settled() {
        local g want got

        for g in "" /u /u/v /w; do
                want=$(ctl_sock --json show "/S$g" --exact | jget 'd["stat"]')
                got=$(ctl_bus --json show "/B$g" | jget 'd["stat"]')
                [[ $got == "$want" ]] || return 1
        done
}
if wait_for 10 stats_settled; then
        pass
else
        fail "the stat items over the bus do not settle to the socket's exact ones:
$(ctl_sock --json tree /S --exact)
$(ctl_bus --json tree /B)"
fi
check_eq "and they are not all 0" "$(ctl_bus --json show /B | jget 'd["stat"]["file"]')" $((50 * 1024))

# ---- the same state, read both ways ----

# (Nothing has been charged since the stat items settled, so they are
# compared too.)
for args in "show /S/u --exact" "--json show /S/u --exact" "show /B" "tree / --exact" \
            "--json tree / --exact" "--json tree /S" "tree /B/u" "show /nope"; do
        # shellcheck disable=SC2086
        run ctl_sock $args
        want_rc=$RC want_out=$OUT want_err=$ERR
        # shellcheck disable=SC2086
        run ctl_bus $args
        check_eq "$args: exit status over the bus" "$RC" "$want_rc"
        check_eq "$args: output over the bus" "$OUT" "$want_out"
        check_eq "$args: stderr over the bus" "$ERR" "$want_err"
done

# What a bus handle cannot do says so, and is a failure (status 1).
check_run "show --reclaim-root over the bus" 1 ctl_bus show /S/u --reclaim-root /S
check_match "it says why" "$ERR" 'no D-Bus form'
check_run "show --reclaim-root / over the bus" 0 ctl_bus show /S/u --reclaim-root /

# ---- hold: a session charge owned by the bus peer ----

ctl_sock create /H max=1M
bg "$TMP/hold.out" "${CTL_BUS[@]}" hold /H 300K --stat file
HOLD=$BG_PID
wait_for 10 grep -q '^holding' "$TMP/hold.out" || true
check_eq "hold over the bus prints what the socket's does" "$(cat "$TMP/hold.out")" \
        "holding 300K in /H"
check_current_soon "the held charge is counted" /H $((300 * 1024))
check_eq "as file" "$(field /H 'd["stat"]["file"]')" $((300 * 1024))
check_run "a kept charge beside it is refused at the max" 1 ctl_bus charge /H 800K
check_eq "refusal over the bus" "$ERR" "memacctctl: charge refused: /H: limit exceeded (max of /H)"
rc=0
stop_bg "$HOLD" TERM || rc=$?
check_eq "hold exits 0 on SIGTERM" "$rc" 0
check_current_soon "the held charge is released when hold ends" /H 0

bg "$TMP/hold.out" "${CTL_BUS[@]}" hold /H 200K
HOLD=$BG_PID
check_current_soon "a second hold charges" /H $((200 * 1024))
rc=0
stop_bg "$HOLD" KILL || rc=$?
check_current_soon "killed, its peer leaves the bus and the charge goes" /H 0

check_run "hold on a missing group over the bus" 1 ctl_bus hold /nope 1K
want=$ERR
check_run "hold on a missing group over the socket" 1 ctl_sock hold /nope 1K
check_eq "the same refusal" "$want" "$ERR"

# ---- watch: the Event signal ----

ctl_sock create /E max=64K
ctl_sock create /E/a max=8K
ctl_sock create /F max=4K
bg "$TMP/watch.bus" "${CTL_BUS[@]}" watch /E
WB=$BG_PID
bg "$TMP/watch.sock" "${CTL_SOCK[@]}" watch /E
WS=$BG_PID
bg "$TMP/watchj.bus" "${CTL_BUS[@]}" --json watch /E/a
WBJ=$BG_PID
bg "$TMP/watchj.sock" "${CTL_SOCK[@]}" --json watch /E/a
WSJ=$BG_PID
# Subscribed once `watch` is waiting; give both a moment to get there.
sleep 1
ctl_sock charge /E/a 16K 2>/dev/null || true
ctl_sock charge /E 100K 2>/dev/null || true
ctl_sock charge /F 8K 2>/dev/null || true
ctl_bus charge /E/a 9K 2>/dev/null || true
wait_for 10 test "$(wc -l <"$TMP/watch.bus")" -ge 6 || true
wait_for 10 test "$(wc -l <"$TMP/watch.sock")" -ge 6 || true
sleep 0.3
for p in "$WB" "$WS" "$WBJ" "$WSJ"; do
        stop_bg "$p" INT || true
done
check_eq "watch over the bus prints what it prints over the socket" \
        "$(cat "$TMP/watch.bus")" "$(cat "$TMP/watch.sock")"
check_eq "watch --json too" "$(cat "$TMP/watchj.bus")" "$(cat "$TMP/watchj.sock")"
check_match "the watch saw max events below /E" "$(cat "$TMP/watch.bus")" '^/E/a max [0-9]+$'
check_match "and on /E itself" "$(cat "$TMP/watch.bus")" '^/E max [0-9]+$'
if grep -q '^/F' "$TMP/watch.bus"; then
        fail "watch /E over the bus printed an event of /F"
else
        pass
fi
if grep -q '"/E"' "$TMP/watchj.bus"; then
        fail "watch /E/a over the bus printed an event of /E"
else
        pass
fi

# ---- naming the bus ----

check_run "--bus=system with \$DBUS_SYSTEM_BUS_ADDRESS" 0 \
        env DBUS_SYSTEM_BUS_ADDRESS="$BUS" "$MEMACCTCTL" --bus=system show /H
check_run "--bus=user with \$DBUS_SESSION_BUS_ADDRESS" 0 \
        env DBUS_SESSION_BUS_ADDRESS="$BUS" "$MEMACCTCTL" --bus=user show /H
if [[ $(id -u) == 0 ]]; then
        check_run "--bus as root is the system bus" 0 \
                env DBUS_SYSTEM_BUS_ADDRESS="$BUS" DBUS_SESSION_BUS_ADDRESS=unix:path=/nonexistent \
                "$MEMACCTCTL" --bus show /H
else
        check_run "--bus as a user is the user bus" 0 \
                env DBUS_SESSION_BUS_ADDRESS="$BUS" DBUS_SYSTEM_BUS_ADDRESS=unix:path=/nonexistent \
                "$MEMACCTCTL" --bus show /H
fi
check_run "--bus with --socket is a usage error" 2 "$MEMACCTCTL" --bus --socket "$SOCK" show /
check_run "--bus system (no '=') is a usage error" 2 "$MEMACCTCTL" --bus system show /
check_match "that says how to write it" "$ERR" "write --bus=system"
check_run "a bus address with nothing there" 1 "$MEMACCTCTL" --bus=unix:path="$TMP/none" show /
check_match "it says where it looked" "$ERR" "cannot reach memacctd on the bus at unix:path=$TMP/none"

# A bus without memacctd on it: refused, not hung.
rc=0
stop_daemon || rc=$?
check_eq "the daemon exits 0" "$rc" 0
check_run "the bus without org.memacct1" 1 ctl_bus show /
check_match "it says the daemon is not there" "$ERR" "cannot reach memacctd on the bus at $BUS: Connection refused"
