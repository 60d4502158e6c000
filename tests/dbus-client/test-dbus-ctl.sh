#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# memacctctl --bus against the real memacctd on a private bus: every
# command prints the same and exits the same over the bus as over the
# socket, to the letter.
#
# The same command sequence runs twice, over the socket on a tree /S and
# over the bus on a tree /B; each step's exit status, stdout and stderr
# must be equal once the tree's name is replaced by /T (the only thing
# that legitimately differs, with the pid of a background hold). It has
# every verb with a daemon call (create, remove, set, show, tree, charge,
# uncharge, hold, move, client, reset-peak, watch, import-cgroups), their
# successes and their refusals. Then uid 65534 runs a sequence of its own
# on trees with a group delegated to it (/P, /Q): the refusals of a
# delegate, and what it may do. Then the same state is read both ways
# (show, tree, --json), and hold (a session charge that belongs to the
# bus peer and ends with it), watch (the Event signal) and the ways of
# naming the bus (--bus, --bus=system, --bus=user, --bus=ADDRESS) are
# checked. Last, the daemon is restarted with [access] read = owner and
# [limits] sessions-per-uid = 2, and uid 65534's reads and sessions are
# compared (/O, /R).

# shellcheck source-path=SCRIPTDIR source=../lib.sh
source "$(dirname "$0")/../lib.sh"

check_start_both || exit 1

# nostat: stdin with the stat items left out (the JSON "stat" member, the
# text's memory.stat lines, and the session bytes made of them), and a
# mirror's kernel_current (the kernel's
# usage, sampled when the daemon likes). The bus cannot ask for a flush of the
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
            strip = lambda g: {k: v for k, v in g.items() if k not in ("stat", "kernel_current", "session")}
            print(json.dumps([strip(g) for g in d] if isinstance(d, list) else strip(d)))
            continue
        except ValueError:
            pass
    if line.startswith("memory.session:"):
        print("memory.session: (left out)")
        continue
    if line.startswith("memory.stat:"):
        skip = True
        print("memory.stat: (left out)")
        continue
    if skip and line.startswith("\t"):
        continue
    skip = False
    print(line)'
}

# The trees of the two runs, and who runs them: AS is a command prefix
# (empty: root; setpriv ...: another uid).
ROOT_SOCK=/S
ROOT_BUS=/B
AS=()
STEP_PID=

root_of() {
        if [[ $1 == sock ]]; then echo "$ROOT_SOCK"; else echo "$ROOT_BUS"; fi
}

# untree ROOT: stdin with the tree's root written /T and $STEP_PID (a
# process that differs between the runs) written PID.
untree() {
        if [[ -n $STEP_PID ]]; then
                sed -E "s#$1#/T#g; s#(^|[^0-9])$STEP_PID([^0-9]|\$)#\1PID\2#g"
        else
                sed "s#$1#/T#g"
        fi
}

# ctl_as WHO ARGS...: memacctctl over WHO (sock or bus) as $AS.
ctl_as() {
        local who=$1

        shift
        if [[ $who == sock ]]; then
                "${AS[@]}" "${CTL_SOCK[@]}" "$@"
        else
                "${AS[@]}" "${CTL_BUS[@]}" "$@"
        fi
}

# step WHO ARGS...: run memacctctl over WHO (sock or bus) with ARGS, in
# which every @ stands for the tree's root and %P for $STEP_PID; record
# the outcome with the root written /T, the pid PID and the stat items
# left out.
step() {
        local who=$1 root rc=0 args

        shift
        root=$(root_of "$who")
        args=("${@//@/$root}")
        args=("${args[@]//%P/$STEP_PID}")
        ctl_as "$who" "${args[@]}" >"$TMP/o" 2>"$TMP/e" || rc=$?
        {
                echo "== ${*} -> $rc"
                untree "$root" <"$TMP/o" | nostat
                echo "-- stderr"
                untree "$root" <"$TMP/e"
        } >>"$TMP/steps.$who"
}

# hold_start WHO ARGS...: memacctctl hold ARGS over WHO in the background,
# as step reads them; its pid is STEP_PID once it holds.
hold_start() {
        local who=$1 root args cmd

        shift
        root=$(root_of "$who")
        args=("${@//@/$root}")
        if [[ $who == sock ]]; then cmd=("${CTL_SOCK[@]}"); else cmd=("${CTL_BUS[@]}"); fi
        bg "$TMP/hold.$who" "${AS[@]}" "${cmd[@]}" hold "${args[@]}"
        STEP_PID=$BG_PID
        wait_for 10 grep -q '^holding' "$TMP/hold.$who" || true
        echo "== hold ${*} (in the background)" >>"$TMP/steps.$who"
}

# hold_stop WHO [GROUP]: stop it (SIGTERM), record its exit status and
# output, and wait until its charges left GROUP (@ for the root).
hold_stop() {
        local who=$1 root rc=0

        root=$(root_of "$who")
        stop_bg "$STEP_PID" TERM || rc=$?
        {
                echo "== hold stopped -> $rc"
                untree "$root" <"$TMP/hold.$who"
        } >>"$TMP/steps.$who"
        if [[ -n ${2:-} ]]; then
                wait_for 10 current_is "${2//@/$root}" 0 || echo "-- its charges stayed" >>"$TMP/steps.$who"
        fi
}

# compare_runs WHAT: the two runs' records are the same.
compare_runs() {
        if cmp -s "$TMP/steps.sock" "$TMP/steps.bus"; then
                pass
        else
                fail "$1 differs over the bus (< socket, > bus):
$(diff "$TMP/steps.sock" "$TMP/steps.bus" || true)"
        fi
}

# This process's memory cgroup, for an import of a cgroup no other test
# touches ("/" when there is none).
OWN_CG=$(mem_cgroup self) || OWN_CG=/

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
        # hold, client, move: a session of a process of its own.
        hold_start "$who" @/u 80K --stat file
        step "$who" client %P --exact
        step "$who" --json client %P --exact
        step "$who" --json move %P @/w
        step "$who" show @/w --exact
        step "$who" move %P @/u/v
        step "$who" move %P @/nope
        hold_stop "$who" @/w
        step "$who" client %P
        STEP_PID=
        step "$who" hold auto 1K
        step "$who" hold "" 1K
        step "$who" hold @/u 1K --stat nosuch
        step "$who" watch @/nope
        step "$who" import-cgroups --from /memacct-no-such-cgroup --under @/imp
        step "$who" import-cgroups --from bad//cgroup
        step "$who" import-cgroups --under relative
        if [[ $OWN_CG != / ]]; then
                step "$who" --json import-cgroups --from "$OWN_CG" --under @/imp
                step "$who" import-cgroups --from "$OWN_CG" --under @/imp
                step "$who" --json tree @/imp
                # The mirrors go again, leaves first, so that nothing below
                # reads the kernel's usage (which changes as it likes).
                local g=@/imp$OWN_CG
                while [[ $g != @ ]]; do
                        step "$who" remove "$g"
                        g=${g%/*}
                done
        fi
        step "$who" create @
        step "$who" create @/nope/x
        step "$who" create @/bad%name
        step "$who" show @/nope
        step "$who" remove @/nope
        step "$who" remove @
        step "$who" remove @/u/v
        step "$who" remove /
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

if [[ $OWN_CG == / ]]; then
        echo "SKIP: the import of a cgroup (this process is in the root memory cgroup)"
fi
sequence sock
sequence bus
compare_runs "the sequence"
# The sequence really ran: a refusal names the group whose max refused,
# a hold was moved, a client read.
check_match "the sequence saw a refused charge" "$(cat "$TMP/steps.bus")" \
        'charge refused: /T/u: limit exceeded \(max of /T\)'
check_match "and a move" "$(cat "$TMP/steps.bus")" '^\{"sessions": ?1\}$'
check_match "and a client's counters" "$(cat "$TMP/steps.bus")" '"file": ?81920'
check_match "and a move refused by a max" "$(cat "$TMP/steps.bus")" \
        'move refused: /T/u/v: limit exceeded \(max of /T/u/v\)'

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

# ---- another uid: the refusals of a delegate, both ways ----

# Root makes two trees of the same shape, /P for the socket run and /Q
# for the bus run: a group of root's (r) and one delegated to uid 65534
# (d; memacctctl cannot delegate, busctl's CreateGroup can). Then uid
# 65534 runs the same commands over both transports.
NOBODY=65534
AS_NOBODY=(setpriv --reuid=$NOBODY --regid=$NOBODY --clear-groups)
NOBODY_OK=1
if [[ $(id -u) != 0 ]]; then
        echo "SKIP: the refusals of another uid (not root: cannot switch uids)"
        NOBODY_OK=
elif ! command -v setpriv >/dev/null || ! command -v busctl >/dev/null; then
        echo "SKIP: the refusals of another uid (no setpriv or no busctl)"
        NOBODY_OK=
fi

# make_trees SOCK-ROOT BUS-ROOT: the two trees, made by root.
make_trees() {
        local t

        for t in "$@"; do
                ctl_sock create "$t" max=1M
                ctl_sock create "$t/r"
                busctl --address="$BUS" call org.memacct1 /org/memacct1 org.memacct1.Manager CreateGroup \
                        'sa{st}u' "$t/d" 1 max $((512 * 1024)) $NOBODY >/dev/null
        done
}

sequence_nobody() {
        local who=$1

        : >"$TMP/steps.$who"
        step "$who" create @/y
        step "$who" create @/r/y
        step "$who" create /memacct-nobody
        step "$who" set @/d max=1G
        step "$who" set @/d max=1G --force
        step "$who" set @/r max=1G
        step "$who" set @ max=1G
        step "$who" remove @/d
        step "$who" remove @/r
        step "$who" remove @
        step "$who" charge @/r 1K
        step "$who" charge @ 1K
        step "$who" uncharge @/r 1K
        step "$who" reset-peak @/r
        step "$who" hold @/r 1K
        step "$who" move $$ @/d
        step "$who" move 0 @/r
        step "$who" import-cgroups
        step "$who" import-cgroups --from /memacct-no-such-cgroup --under @/d/imp
        # Reads are open.
        step "$who" show @/r
        step "$who" --json tree @
        step "$who" client $$
        # Inside the delegated subtree.
        step "$who" create @/d/g max=64K
        step "$who" create @/d/g/x
        step "$who" set @/d/g max=32K high=16K
        step "$who" charge @/d/g/x 16K --stat file
        step "$who" charge @/d 4K
        step "$who" charge @/d/g 100K
        step "$who" set @/d/g max=8K
        step "$who" set @/d/g max=8K --force
        step "$who" charge @/d/g/x 1K
        step "$who" reset-peak @/d
        step "$who" reset-peak @/d/g
        step "$who" --json show @/d/g --exact
        step "$who" uncharge @/d/g/x 16K --stat file
        step "$who" uncharge @/d 4K
        # Its own process it may move, not another one of its uid.
        step "$who" move 0 @/d/g
        hold_start "$who" @/d 8K
        step "$who" --json client %P --exact
        step "$who" move %P @/d/g/x
        step "$who" move %P @/r
        hold_stop "$who" @/d
        STEP_PID=
        step "$who" remove @/d/g
        step "$who" remove @/d/g/x
        step "$who" remove @/d/g
        step "$who" --json tree @
}

if [[ -n $NOBODY_OK ]]; then
        make_trees /P /Q
        ROOT_SOCK=/P ROOT_BUS=/Q AS=("${AS_NOBODY[@]}")
        sequence_nobody sock
        sequence_nobody bus
        ROOT_SOCK=/S ROOT_BUS=/B AS=()
        compare_runs "the sequence of uid $NOBODY"
        check_match "it was refused outside its subtree" "$(cat "$TMP/steps.bus")" \
                'create refused: /T/y: not delegated to uid 65534'
        check_match "and on the delegated group itself" "$(cat "$TMP/steps.bus")" \
                'set refused: /T/d: permission denied'
        check_match "and a move of another process" "$(cat "$TMP/steps.bus")" \
                'move refused: /T/d: only root moves other processes'
        check_match "and an import" "$(cat "$TMP/steps.bus")" 'import-cgroups refused: /: only root imports cgroups'
        check_match "nor of another process of its own uid" "$(cat "$TMP/steps.bus")" \
                'move refused: /T/d/g/x: only root moves other processes'
        check_eq "nothing is left in its trees" "$(current /P)/$(current /Q)" 0/0
fi

# ---- hold: a session charge owned by the bus peer ----

ctl_sock create /H max=1M
bg "$TMP/hold.out" "${CTL_BUS[@]}" hold /H 300K --stat file
HOLD=$BG_PID
wait_for 10 grep -q '^holding' "$TMP/hold.out" || true
check_eq "hold over the bus prints what the socket's does" "$(cat "$TMP/hold.out")" \
        "attached to /H
holding 300K in /H"
check_current_soon "the held charge is counted" /H $((300 * 1024))
check_eq "as file" "$(field /H 'd["stat"]["file"]' --exact)" $((300 * 1024))
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
# Each line starts with the time it was read: compared without it. Who
# raised an event comes over the bus too (libmemacct matches EventBy): the
# lines are the same, requesters included.
for f in watch.bus watch.sock; do
        sed -E 's/^[^ ]+ //' "$TMP/$f" >"$TMP/$f.untimed"
done
for f in watchj.bus watchj.sock; do
        sed -E 's/"time":"[^"]*",//' "$TMP/$f" >"$TMP/$f.untimed"
done
check_eq "watch over the bus prints what it prints over the socket" \
        "$(cat "$TMP/watch.bus.untimed")" "$(cat "$TMP/watch.sock.untimed")"
check_eq "watch --json too" "$(cat "$TMP/watchj.bus.untimed")" "$(cat "$TMP/watchj.sock.untimed")"
check_match "the watch saw max events below /E" "$(cat "$TMP/watch.bus.untimed")" '^/E/a max [0-9]+ by pid [0-9]+ uid 0$'
check_match "and on /E itself" "$(cat "$TMP/watch.bus.untimed")" '^/E max [0-9]+ by pid [0-9]+ uid 0$'
if grep -q ' /F' "$TMP/watch.bus"; then
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
# As systemctl: the system bus for every uid, the user bus asked for.
check_run "--bus is the system bus" 0 \
        env DBUS_SYSTEM_BUS_ADDRESS="$BUS" DBUS_SESSION_BUS_ADDRESS=unix:path=/nonexistent \
        "$MEMACCTCTL" --bus show /H
check_run "--bus --user is the user bus" 0 \
        env DBUS_SESSION_BUS_ADDRESS="$BUS" DBUS_SYSTEM_BUS_ADDRESS=unix:path=/nonexistent \
        "$MEMACCTCTL" --bus --user show /H
check_run "--bus --user without a user bus" 1 \
        env DBUS_SESSION_BUS_ADDRESS=unix:path=/nonexistent DBUS_SYSTEM_BUS_ADDRESS="$BUS" \
        "$MEMACCTCTL" --bus --user show /H
check_match "it names the user bus" "$ERR" "cannot reach memacctd on the user bus"
check_run "--user with --bus=ADDRESS is a usage error" 2 "$MEMACCTCTL" --user --bus=system show /
check_run "--bus with --socket is a usage error" 2 "$MEMACCTCTL" --bus --socket "$SOCK" show /
check_run "--bus system (no '='), as a user types it, is the system bus" 0 \
        env DBUS_SYSTEM_BUS_ADDRESS="$BUS" "$MEMACCTCTL" --bus system show /H
check_run "--bus ADDRESS (no '=') too" 0 "$MEMACCTCTL" --bus "$BUS" show /H
check_run "--bus system with no command is a usage error" 2 "$MEMACCTCTL" --bus system
check_run "a bus address with nothing there" 1 "$MEMACCTCTL" --bus=unix:path="$TMP/none" show /
check_match "it says where it looked" "$ERR" "cannot reach memacctd on the bus at unix:path=$TMP/none"

# A bus without memacctd on it: refused, not hung.
rc=0
stop_daemon || rc=$?
check_eq "the daemon exits 0" "$rc" 0
check_run "the bus without org.memacct1" 1 ctl_bus show /
check_match "it says the daemon is not there" "$ERR" "cannot reach memacctd on the bus at $BUS: Connection refused"

# ---- reads restricted to owners, two sessions per uid ----

# The daemon again, with [access] read = owner and [limits]
# sessions-per-uid = 2: uid 65534 reads only what is delegated to it, on
# either transport, and has two sessions at most on both together.
sequence_restricted() {
        local who=$1

        : >"$TMP/steps.$who"
        step "$who" show @/r
        step "$who" show @ --exact
        step "$who" show /
        step "$who" --json show @/d
        step "$who" tree @
        step "$who" --json tree @/d
        step "$who" client $$
        step "$who" client 2147483646
        step "$who" watch @/r
        step "$who" watch /
        step "$who" charge @/d 4K
        step "$who" uncharge @/d 4K
        hold_start "$who" @/d 4K
        step "$who" --json show @/d --exact
        step "$who" --json client %P --exact
        hold_stop "$who" @/d
        STEP_PID=
}

if [[ -n $NOBODY_OK ]]; then
        DAEMON_CONF=$'[access]\nread = owner\n\n[limits]\nsessions-per-uid = 2\n'
        if start_daemon; then
                pass
        else
                fail "the daemon starts with read = owner and sessions-per-uid = 2"
                exit 1
        fi
        make_trees /O /R
        ROOT_SOCK=/O ROOT_BUS=/R AS=("${AS_NOBODY[@]}")
        sequence_restricted sock
        sequence_restricted bus
        ROOT_SOCK=/S ROOT_BUS=/B AS=()
        compare_runs "the sequence of uid $NOBODY with read = owner"
        check_match "reads of what is not delegated are refused" "$(cat "$TMP/steps.bus")" \
                'show refused: /T/r: permission denied'
        check_match "so are client counters" "$(cat "$TMP/steps.bus")" \
                "client refused: $$: pid $$: permission denied"
        check_match "while what is delegated reads" "$(cat "$TMP/steps.bus")" \
                '^\[\{"path": "/T/d"'
        # Two holds, the uid's two sessions; a third is refused with the
        # daemon's words. But over the socket a connection is a session,
        # over the bus only a session charge or an attach makes one: the
        # third is refused at the connection on the socket, at the attach
        # on the bus, and a read that needs no session is served over the
        # bus only.
        bg "$TMP/h1" "${AS_NOBODY[@]}" "${CTL_BUS[@]}" hold /R/d 4K
        h1=$BG_PID
        bg "$TMP/h2" "${AS_NOBODY[@]}" "${CTL_BUS[@]}" hold /R/d 4K
        h2=$BG_PID
        wait_for 10 grep -q '^holding' "$TMP/h1" || true
        wait_for 10 grep -q '^holding' "$TMP/h2" || true
        check_current_soon "uid $NOBODY holds two sessions" /R/d $((8 * 1024))
        check_run "a third session over the socket is refused" 1 "${AS_NOBODY[@]}" "${CTL_SOCK[@]}" show /R/d
        check_eq "at the connection" "$ERR" \
                "memacctctl: cannot connect to memacctd at $SOCK: too many sessions for uid $NOBODY"
        check_run "a third session over the bus is refused" 1 "${AS_NOBODY[@]}" "${CTL_BUS[@]}" hold /R/d 4K
        check_eq "at the attach" "$ERR" "memacctctl: attach failed: /R/d: too many sessions for uid $NOBODY"
        check_run "a read over the socket is refused too" 1 "${AS_NOBODY[@]}" "${CTL_SOCK[@]}" tree /R/d
        check_run "a read over the bus opens no session, and is served" 0 \
                "${AS_NOBODY[@]}" "${CTL_BUS[@]}" tree /R/d
        check_run "root is never limited" 0 ctl_sock show /R/d
        # Who holds what, over either transport: the two bus sessions.
        check_run "sessions over the socket" 0 ctl_sock sessions /R/d
        sock_sessions=$OUT
        echo "$OUT"
        check_eq "the two holds, bus sessions of uid $NOBODY" \
                "$(grep -cE "^pid=($h1|$h2) uid=$NOBODY comm=memacctctl transport=bus group=/R/d bytes=4096 stock=0\$" <<<"$OUT")" 2
        check_run "sessions over the bus" 0 "${CTL_BUS[@]}" sessions /R/d
        check_eq "the same list over the bus" "$OUT" "$sock_sessions"
        check_run "info over the bus" 0 "${CTL_BUS[@]}" --json info
        check_eq "info over the bus: saved, the version" "$(jget '[d["state"], d["version"].split()[0]]' <<<"$OUT")" \
                '["saved", "memacctd"]'
        stop_bg "$h1" TERM || true
        stop_bg "$h2" TERM || true
        check_current_soon "the holds are released" /R/d 0
fi
