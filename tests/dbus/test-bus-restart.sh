#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# The bus daemon restarted under a running memacctd: a private system bus
# (tests/bus-conf.sh system, with units/org.memacct1.conf), memacctd on
# it with a state directory, kept charges and session charges over the
# socket (memacctctl hold, which reconnects, and a raw client, which does
# not) and over the bus. The dbus-daemon is killed: memacctd must exit
# within a few seconds with status 1 and say why, having saved the kept
# charges; the unit restarts it on that failure (Restart=on-failure).
# Then a new dbus-daemon and a new memacctd: the name is owned again, the
# kept charges are back, the session charges are gone, but for
# memacctctl hold's, which libmemacct charges again (memacctctl(1)).
# Once more with the bus daemon stopped cleanly (SIGTERM, as `systemctl
# restart dbus` does): the same exit, the same state.

# shellcheck source-path=SCRIPTDIR source=../lib.sh
source "$(dirname "$0")/../lib.sh"

need dbus-daemon busctl
need_root "the policy lets only root own org.memacct1"
K=1024
M=$((K * K))
STATE_FILE=$STATE/state
# Both starts read this (empty) file, not the host's /etc/memacctd.
: >"$TMP/memacctd.conf"

# A socket session of its own, with no library and so no replay: charges
# PATH BYTES, says "holding", then waits for the daemon to close it.
RAW_HOLD='
import os, sys
sys.path.insert(0, os.path.join(os.environ["MEMACCT_SOURCE_ROOT"], "tests", "integration"))
from rawproto import Conn, REQ_CHARGE, charge_body, status, message
c = Conn(sys.argv[1], timeout=None)
c.hello()
r = c.call(REQ_CHARGE, charge_body(sys.argv[2], int(sys.argv[3])))
print("holding" if status(r) == 0 else "refused: " + message(r), flush=True)
try:
    while c.read() is not None:
        pass
except OSError:
    pass
print("closed", flush=True)
'

name_owner() {
        bctl status org.memacct1 2>/dev/null | sed -n 's/^PID=//p'
}

# state_kept GROUP: what follows the limits on GROUP's saved line (its
# kept.ITEM=BYTES fields, each with a space before it): the last one the
# state file and the journal after it give.
state_kept() {
        cat "$STATE_FILE" "$STATE/journal" 2>/dev/null |
                sed -n "s#^\(group\|set\) $1 .*owner=[0-9]* max=[^ ]* high=[^ ]* low=[^ ]* min=[^ ]*##p" | tail -n 1
}

state_kept_is() {
        [[ $(state_kept "$1") == "$2" ]]
}

check_match "memacctd.service restarts the daemon when it exits with a failure" \
        "$(<"$MEMACCT_SOURCE_ROOT/units/memacctd.service.in")" '^Restart=(on-failure|always)$'

start_bus || exit 1
check_start_daemon --bus "$BUS_ADDR" --config "$TMP/memacctd.conf" || exit 1
check_eq "the daemon owns org.memacct1" "$(name_owner)" "$DAEMON_PID"
first_pid=$DAEMON_PID

for g in /kept /kept/deep /lib /raw /bus; do
        check_run "create $g" 0 ctl create "$g"
done
check_run "a kept charge (socket)" 0 ctl charge /kept 2M
check_run "a kept charge of another item (socket)" 0 ctl charge /kept 1M --stat file
check_run "a kept charge below (socket)" 0 ctl charge /kept/deep 64K --stat shmem
check_run "a kept charge over the bus" 0 mcall Charge stsb /kept/deep $((4 * K)) anon true

bg "$TMP/lib.out" "$MEMACCTCTL" --socket "$SOCK" hold /lib 1M
lib_pid=$BG_PID
bg "$TMP/raw.out" "$PY" -c "$RAW_HOLD" "$SOCK" /raw $((512 * K))
bg "$TMP/bus.out" "$MEMACCTCTL" --bus="$BUS_ADDR" hold /bus 256K
for f in lib raw bus; do
        if wait_for 10 grep -q '^holding' "$TMP/$f.out"; then
                pass
        else
                fail "the $f holder holds: $(<"$TMP/$f.out")"
        fi
done
kept_top=$((2 * M + M + 64 * K + 4 * K))
check_current_soon "/kept holds its kept charges" /kept "$kept_top"
check_current_soon "the library's session charge" /lib "$M"
check_current_soon "the raw session charge" /raw $((512 * K))
check_current_soon "the bus peer's session charge" /bus $((256 * K))
# The save follows the change within 200 ms: on disk before the bus goes.
if wait_for 10 state_kept_is /kept " kept.anon=$((2 * M)) kept.file=$M"; then
        pass
else
        fail "the kept charges are saved before the bus goes: '$(state_kept /kept)'"
fi

# lose_bus SIGNAL: stop the bus daemon with SIGNAL; memacctd must exit by
# itself, promptly, with status 1, and say why in its log.
lose_bus() {
        local sig=$1 log_lines t0 ms exited=0 rc=0 log

        log_lines=$(wc -l <"$DAEMON_LOG")
        t0=$(date +%s%N)
        # One group, stderr closed: bash's "Killed" report is no failure here.
        {
                kill "-$sig" "$BUS_PID"
                wait "$BUS_PID"
        } 2>/dev/null || true
        BUS_PID=
        for ((i = 0; i < 200; i++)); do
                if ! kill -0 "$DAEMON_PID" 2>/dev/null; then
                        exited=1
                        break
                fi
                sleep 0.05
        done
        ms=$((($(date +%s%N) - t0) / 1000000))
        echo "memacctd exited $ms ms after its bus daemon got SIG$sig"
        check_eq "SIG$sig: memacctd exits by itself when its bus goes" "$exited" 1
        if ((exited)); then
                wait "$DAEMON_PID" || rc=$?
        else
                stop_bg "$DAEMON_PID" KILL 5 || rc=$?
        fi
        DAEMON_PID=
        check_eq "SIG$sig: with status 1" "$rc" 1
        if ((ms < 5000)); then
                pass
        else
                fail "SIG$sig: promptly: within 5 s, not $ms ms"
        fi
        log=$(tail -n +"$((log_lines + 1))" "$DAEMON_LOG")
        check_match "SIG$sig: the log says the connection was lost" "$log" 'Lost the connection to '
        check_match "SIG$sig: and why it stopped" "$log" 'Stopped: the bus connection was lost'
}

# ---- the bus daemon dies ----

lose_bus KILL
check_eq "the state file it left has the kept charges" "$(state_kept /kept)" \
        " kept.anon=$((2 * M)) kept.file=$M"
check_eq "of every item and group" "$(state_kept /kept/deep)" " kept.anon=$((4 * K)) kept.shmem=$((64 * K))"
for g in /lib /raw /bus; do
        check_eq "no session charge of $g is saved" "$(state_kept "$g")" ""
done
if wait_for 10 grep -q '^closed' "$TMP/raw.out"; then
        pass
else
        fail "the raw client saw its connection closed: $(<"$TMP/raw.out")"
fi

# ---- a new bus daemon, a new memacctd (what systemd would do) ----

start_bus || exit 1
check_start_daemon --bus "$BUS_ADDR" --config "$TMP/memacctd.conf" || exit 1
check_eq "the new daemon owns org.memacct1 on the new bus" "$(name_owner)" "$DAEMON_PID"
check_nomatch "it is a new process" "$DAEMON_PID" "^$first_pid\$"
check_eq "the kept charges are back (socket)" "$(current /kept)" "$kept_top"
check_eq "below too" "$(current /kept/deep)" $((64 * K + 4 * K))
check_eq "the kept charges are back (bus)" "$(propv /kept MemoryCurrent)" "$kept_top"
check_eq "the raw client's session charge is gone" "$(current /raw)" 0
check_eq "the bus peer's session charge is gone" "$(current /bus)" 0
# memacctctl hold reconnects and charges again, as memacctctl(1) says.
check_current_soon "memacctctl hold charges its session again on the new daemon" /lib "$M"
check_eq "the root counts the kept charges and the replayed hold" "$(current /)" $((kept_top + M))

rc=0
stop_bg "$lib_pid" INT || rc=$?
check_eq "memacctctl hold exits 0 on SIGINT" "$rc" 0
check_current_soon "its charge is released" /lib 0

# ---- and is stopped cleanly (systemctl restart dbus: SIGTERM) ----

lose_bus TERM
check_eq "the kept charges are in the state file again" "$(state_kept /kept)" \
        " kept.anon=$((2 * M)) kept.file=$M"
start_bus || exit 1
check_start_daemon --bus "$BUS_ADDR" --config "$TMP/memacctd.conf" || exit 1
check_eq "the third daemon owns org.memacct1" "$(name_owner)" "$DAEMON_PID"
check_eq "the kept charges are back again" "$(current /)" "$kept_top"
check_stop_daemon
