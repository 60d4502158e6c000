#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# The bus daemon restarted under a running memacctd: a private system bus
# (tests/bus-conf.sh system, with units/org.memacct1.conf), memacctd on
# it with a state directory, kept charges and session charges over the
# socket (memacctctl hold, which reconnects, and a raw client, which does
# not) and over the bus. The dbus-daemon is killed: memacctd must stay up
# and say so, every socket session and its charges stay, the bus peer's
# session charge ends with its peer. Then a new dbus-daemon at the same
# address: memacctd, the same process, owns the name again within a few
# seconds and serves the bus as before. Once more with the bus daemon
# stopped cleanly (SIGTERM, as `systemctl restart dbus` does), and once
# with no bus daemon at all for a while: the same. The socket answers
# throughout.

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
# The address without its guid, as a system bus is named: the next bus
# daemon at the same path has another.
check_start_daemon --bus "${BUS_ADDR%%,guid=*}" --config "$TMP/memacctd.conf" || exit 1
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

# lose_bus SIGNAL: stop the bus daemon with SIGNAL; memacctd must stay
# up, say that it lost the bus, and keep serving the socket.
lose_bus() {
        local sig=$1 log_lines

        log_lines=$(wc -l <"$DAEMON_LOG")
        # One group, stderr closed: bash's "Killed" report is no failure here.
        {
                kill "-$sig" "$BUS_PID"
                wait "$BUS_PID"
        } 2>/dev/null || true
        BUS_PID=
        if wait_for 10 sh -c "tail -n +$((log_lines + 1)) '$DAEMON_LOG' | grep -q 'Lost the connection to '"; then
                pass
        else
                fail "SIG$sig: the log says the connection was lost: $(tail -n +"$((log_lines + 1))" "$DAEMON_LOG")"
        fi
        check_eq "SIG$sig: memacctd is still running" "$(kill -0 "$DAEMON_PID" 2>/dev/null && echo yes)" yes
        check_eq "SIG$sig: the socket answers" "$(current /kept)" "$kept_top"
        LOST_AT=$log_lines
}

# find_bus_again: a new bus daemon at the same address; memacctd takes the
# name back by itself.
find_bus_again() {
        start_bus || exit 1
        if wait_for 20 sh -c "[ \"\$(busctl --address='$BUS_ADDR' status org.memacct1 2>/dev/null | sed -n 's/^PID=//p')\" = $DAEMON_PID ]"; then
                pass
        else
                fail "memacctd ($DAEMON_PID) owns org.memacct1 again on the new bus: '$(name_owner)'"
        fi
        check_match "the log says so" "$(tail -n +"$((LOST_AT + 1))" "$DAEMON_LOG")" \
                "Connected to .*: org.memacct1 is ours again"
}

# ---- the bus daemon dies ----

lose_bus KILL
check_current_soon "the bus peer's session charge ends with its peer" /bus 0
check_eq "the raw socket client still holds its charge" "$(current /raw)" $((512 * K))
check_eq "memacctctl hold's charge is still there" "$(current /lib)" "$M"
check_nomatch "the raw client's connection is not closed" "$(<"$TMP/raw.out")" 'closed'
check_eq "the kept charges are still there" "$(current /kept)" "$kept_top"
check_eq "the state file has the kept charges" "$(state_kept /kept)" \
        " kept.anon=$((2 * M)) kept.file=$M"
check_eq "no session charge of /bus is saved" "$(state_kept /bus)" ""

# ---- a new bus daemon: the same memacctd takes the name back ----

find_bus_again
check_eq "the same process serves it" "$DAEMON_PID" "$first_pid"
check_eq "the kept charges are seen over the new bus" "$(propv /kept MemoryCurrent)" "$kept_top"
check_run "a kept charge over the new bus" 0 mcall Charge stsb /kept/deep $((4 * K)) anon true
check_eq "it counts" "$(current /kept/deep)" $((64 * K + 8 * K))
check_run "and goes again" 0 mcall Uncharge stsb /kept/deep $((4 * K)) anon true
check_eq "the root counts the kept charges and both socket holders" "$(current /)" \
        $((kept_top + M + 512 * K))

rc=0
stop_bg "$lib_pid" INT || rc=$?
check_eq "memacctctl hold exits 0 on SIGINT" "$rc" 0
check_current_soon "its charge is released" /lib 0

# ---- stopped cleanly (systemctl restart dbus: SIGTERM), back after a while ----

lose_bus TERM
sleep 1
check_eq "without a bus, the socket still answers" "$(current /raw)" $((512 * K))
find_bus_again
check_eq "still the same process" "$DAEMON_PID" "$first_pid"
check_eq "the kept charges are there" "$(propv /kept MemoryCurrent)" "$kept_top"
check_stop_daemon
