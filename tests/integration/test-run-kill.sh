#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# memacctctl run killed by SIGKILL leaves no group: the group is transient,
# and the daemon removes it when run's connection closes; while a session
# of the command still charges in it, it stays, and goes when that session
# ends. --keep-group's group is an ordinary one and stays.

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

check_start_daemon || exit 1

# ---- a plain command: the group goes with run ----

bg "$TMP/k1" "${CTL[@]}" run --name k1 -- bash -c 'echo $$ >"$1"; exec sleep 60' sh "$TMP/p1"
RUN1=$BG_PID
if wait_for 10 exists /run.slice/k1; then pass; else fail "run made /run.slice/k1"; fi
# The command has started (and written its pid) before run is killed.
wait_for 10 test -s "$TMP/p1" || fail "the command of run started"
stop_bg "$RUN1" KILL 10 || true
if wait_for 10 gone /run.slice/k1; then
        pass
else
        fail "run killed -9: /run.slice/k1 is still there"
fi
[[ -s $TMP/p1 ]] && kill -KILL "$(<"$TMP/p1")" 2>/dev/null || true

# ---- a command whose session still charges: it waits for the session ----

bg "$TMP/k2" "${CTL[@]}" run --name k2 -- "$H" charge "$M" ready "$TMP/r2" wait "$TMP/g2"
RUN2=$BG_PID
if wait_for 10 test -e "$TMP/r2"; then pass; else fail "the command of run charged"; fi
stop_bg "$RUN2" KILL 10 || true
sleep 0.3
check_eq "run killed -9, its command charging: the group stays, charged" "$(current /run.slice/k2)" "$M"
: >"$TMP/g2"
if wait_for 10 gone /run.slice/k2; then
        pass
else
        fail "the group goes once the command's session ended"
fi

# ---- --keep-group: kept ----

bg "$TMP/k3" "${CTL[@]}" run --keep-group --name k3 -- bash -c 'echo $$ >"$1"; exec sleep 60' sh "$TMP/p3"
RUN3=$BG_PID
if wait_for 10 exists /run.slice/k3; then pass; else fail "run made /run.slice/k3"; fi
stop_bg "$RUN3" KILL 10 || true
sleep 0.5
check_eq "--keep-group killed -9: the group stays" "$(exists /run.slice/k3 && echo yes || echo no)" yes
kill -KILL "$(<"$TMP/p3")" 2>/dev/null || true
run_cgroups_rmdir k1 k2 k3
