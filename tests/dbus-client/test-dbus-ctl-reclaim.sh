#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# memacctctl's reclaim over the bus, on libmemacct's bus handle: hold
# --reclaimable over the bus gives back what a charge refused at a max
# needs, whether that charge comes over the bus or the socket; reclaim
# over the bus says what came back; charge --no-wait and set --no-wait are
# refused at once over the bus with the socket's words, nobody asked.
# What the holder was asked is read from its output and from the daemon's
# sessions over the socket.

# shellcheck source-path=SCRIPTDIR source=../lib.sh
source "$(dirname "$0")/../lib.sh"

M=$((1024 * 1024))

check_start_both || exit 1
ctl_sock create /C max=10M
ctl_sock create /C/cache
ctl_sock create /C/w

bg "$TMP/hold.out" "${CTL_BUS[@]}" hold --reclaimable /C/cache 6M
hold=$BG_PID
wait_for 10 file_has "$TMP/hold.out" '^reclaimable' ||
        fail "hold --reclaimable starts over the bus: $(cat "$TMP/hold.out")"
check_current_soon "the hold holds its 6M" /C/cache $((6 * M))

# ---- refused at once ----

check_run "charge --no-wait over the bus is refused" 1 ctl_bus charge --no-wait /C/w 6M
bus_err=$ERR
check_run "charge --no-wait over the socket is refused" 1 ctl_sock charge --no-wait /C/w 6M
check_eq "with the same words" "$bus_err" "$ERR"
check_eq "the max's" "$ERR" "memacctctl: charge refused: /C/w: limit exceeded (max of /C)"
check_run "set --no-wait over the bus: a max below usage is refused" 1 ctl_bus set --no-wait /C max=4M
bus_err=$ERR
check_run "set --no-wait over the socket too" 1 ctl_sock set --no-wait /C max=4M
check_eq "with the same words" "$bus_err" "$ERR"
check_nomatch "the holder was not asked" "$(cat "$TMP/hold.out")" '^gave back'
check_run "sessions over the socket" 0 ctl_sock sessions /C/cache
check_match "the daemon asked nothing of it" "$OUT" ' reclaim_asked=0 reclaim_released=0 reclaim_late=0$'
check_eq "the max stays" "$(field /C 'd["max"]')" $((10 * M))

# ---- a charge waits while the holder gives back ----

check_run "a charge past max over the bus succeeds" 0 ctl_bus charge /C/w 6M
check_eq "the holder gave back once" "$(grep -c '^gave back' "$TMP/hold.out")" 1
check_run "a charge past max over the socket succeeds" 0 ctl_sock charge /C/w 1M
check_eq "the holder gave back again" "$(grep -c '^gave back' "$TMP/hold.out")" 2
held=$(sed -n 's/^gave back [0-9]* bytes, holding \([0-9]*\)$/\1/p' "$TMP/hold.out" | tail -n1)
check_eq "what it says it holds is in its group" "$(current /C/cache)" "$held"
check_eq "and /C is within its max" "$(($(current /C) <= 10 * M))" 1
check_run "sessions over the socket" 0 ctl_sock sessions /C/cache
check_match "the daemon counts what came back" "$OUT" " reclaim_released=$((6 * M - held)) reclaim_late=0\$"

# ---- proactive reclaim ----

check_run "reclaim over the bus" 0 ctl_bus reclaim /C 1M
released=${OUT#released }
check_match "says what came back" "$OUT" '^released [1-9][0-9]*$'
check_current_soon "that much left the holder" /C/cache $((held - released))
check_run "reclaim --json over the bus, of a group nobody gives back in" 0 ctl_bus --json reclaim /C/w 1M
check_eq "nothing came back" "$OUT" '{"released":0}'
check_run "reclaim over the bus of a group that is not there" 1 ctl_bus reclaim /C/none 1M
bus_err=$ERR
check_run "over the socket" 1 ctl_sock reclaim /C/none 1M
check_eq "the same words" "$bus_err" "$ERR"

rc=0
stop_bg "$hold" TERM || rc=$?
check_eq "the hold exits 0" "$rc" 0
check_current_soon "its charge is released with its bus connection" /C/cache 0
ctl_sock uncharge /C/w 7M
rc=0
stop_daemon || rc=$?
check_eq "the daemon exits 0" "$rc" 0
exit 0
