#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# memacctctl run's transient group survives a restart of the daemon, by
# SIGTERM and by kill -9: the group is saved transient, run reconnects and
# claims it back, its command charges into it again, and the group goes
# when run ends. A restored transient group whose creator never comes
# back goes after the grace period (shortened here through
# MEMACCTD_TRANSIENT_GRACE_MSEC, a knob for tests only).

# shellcheck source-path=SCRIPTDIR source=../lib.sh
source "$(dirname "$0")/../lib.sh"

: "${MEMACCT_RUN_HELPER:?MEMACCT_RUN_HELPER must name memacct-run-helper}"
H=$MEMACCT_RUN_HELPER
M=$((1024 * 1024))
GRACE_MSEC=3000
export MEMACCTD_TRANSIENT_GRACE_MSEC=$GRACE_MSEC

exists() {
        ctl show "$1" >/dev/null 2>&1
}

gone() {
        ! exists "$1"
}

claimed() {
        grep -q "Transient group $1: claimed back" "$DAEMON_LOG"
}

check_start_daemon -v || exit 1

# restart_under_run NAME SIGNAL: run a charging command, restart the
# daemon with SIGNAL while it runs, and follow the group through it.
restart_under_run() {
        local name=$1 sig=$2 g=/run.slice/$1 out=$TMP/$1.out run_pid

        bg "$out" "${CTL[@]}" run --name "$name" -- "$H" charge "$M" ready "$TMP/$name.a" \
                wait "$TMP/$name.go" charge "$M" ready "$TMP/$name.b" wait "$TMP/$name.end"
        run_pid=$BG_PID
        if wait_for 10 test -e "$TMP/$name.a"; then pass; else fail "$name: the command charged"; fi
        stop_daemon "$sig" || true
        check_start_daemon -v || return 1
        check_eq "$name: after kill -$sig and a start, the group is there" \
                "$(exists "$g" && echo yes || echo no)" yes
        if wait_for 10 claimed "$g"; then
                pass
        else
                fail "$name: run claimed $g back"
        fi
        # Past the grace period: claimed, so the daemon leaves it.
        sleep $((GRACE_MSEC / 1000 + 1))
        check_eq "$name: past the grace period the group stays" "$(exists "$g" && echo yes || echo no)" yes
        : >"$TMP/$name.go"
        if wait_for 10 test -e "$TMP/$name.b"; then pass; else fail "$name: the command charged again"; fi
        check_eq "$name: both charges succeeded" "$(grep -c "^charged $M\$" "$out")" 2
        # Session charges are replayed by the command's library on its
        # reconnection, so the group holds both.
        check_eq "$name: the group holds the command's charges" "$(current "$g")" $((2 * M))
        : >"$TMP/$name.end"
        local rc=0
        stop_bg "$run_pid" 0 20 || rc=$?
        check_eq "$name: run exits 0" "$rc" 0
        check_nomatch "$name: run did not give up" "$(cat "$out")" "could not claim"
        check_eq "$name: after run, the group is gone" "$(exists "$g" && echo yes || echo no)" no
}

restart_under_run t1 TERM
restart_under_run t2 KILL

# ---- a creator that never comes back: removed after the grace period ----

bg "$TMP/o.out" "${CTL[@]}" run --name o -- bash -c 'echo $$ >"$1"; exec sleep 60' sh "$TMP/o.pid"
RUN=$BG_PID
if wait_for 10 test -s "$TMP/o.pid"; then pass; else fail "run o started its command"; fi
stop_daemon KILL || true
stop_bg "$RUN" KILL 10 || true
kill -KILL "$(<"$TMP/o.pid")" 2>/dev/null || true
check_start_daemon -v || exit 1
START=$SECONDS
check_eq "orphan: restored, within its grace period" "$(exists /run.slice/o && echo yes || echo no)" yes
if wait_for 15 gone /run.slice/o; then pass; else fail "orphan: removed after the grace period"; fi
check_eq "orphan: not removed before the grace period" "$((SECONDS - START >= GRACE_MSEC / 1000 - 1))" 1

check_stop_daemon
run_cgroups_rmdir o
