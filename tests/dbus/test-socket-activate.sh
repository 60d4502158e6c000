#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# Socket activation as memacctd.socket does it: systemd-socket-activate
# binds and listens, and starts memacctd on the first connection with the
# socket as fd 3 (LISTEN_FDS=1). memacctctl works through it; the daemon
# says it was activated, ignores --socket, and leaves the socket file
# alone at exit (it belongs to whoever passed it).

# shellcheck source-path=SCRIPTDIR source=../integration/lib.sh
source "$(dirname "$0")/../integration/lib.sh"
# shellcheck source-path=SCRIPTDIR source=bus-lib.sh
source "$(dirname "$0")/bus-lib.sh"

need systemd-socket-activate
ACT=$TMP/act.sock
M=$((1024 * 1024))

actl() {
        "$MEMACCTCTL" --socket "$ACT" "$@"
}

# The activator waits for a connection before it runs memacctd.
bg "$DAEMON_LOG" systemd-socket-activate -l "$ACT" \
        "$MEMACCTD" --state-dir "$STATE" --workers 2 --socket "$TMP/not-this.sock"
activator=$BG_PID
if wait_for 10 test -S "$ACT"; then
        pass
else
        fail "systemd-socket-activate listens on $ACT"
fi

check_run "the first connection starts memacctd, and is served" 0 actl show /
check_run "create through the passed socket" 0 actl create /act max=4M
check_run "charge through the passed socket" 0 actl charge /act 1M
check_eq "show through the passed socket" "$(actl --json show /act | jget 'd["current"]')" $M
check_match "memacctd says it was socket-activated" "$(<"$DAEMON_LOG")" "socket activation"
check_match "and that it ignores --socket" "$(<"$DAEMON_LOG")" "not --socket"
check_eq "it binds no socket of its own" "$(test -e "$TMP/not-this.sock" && echo yes || echo no)" no
# The activator exec()s memacctd: the same pid.
check_eq "memacctd runs as the activator's process" "$(cat "/proc/$activator/comm")" memacctd

rc=0
stop_bg "$activator" TERM 30 || rc=$?
check_eq "memacctd exits 0 on SIGTERM" "$rc" 0
check_eq "it leaves the passed socket in place" "$(test -S "$ACT" && echo yes || echo no)" yes

# Started again (as after a restart), the state is back. systemd would
# keep the socket open across the restart; systemd-socket-activate binds
# anew, so the old node goes first.
rm -f "$ACT"
bg "$DAEMON_LOG" systemd-socket-activate -l "$ACT" "$MEMACCTD" --state-dir "$STATE" --workers 2
activator=$BG_PID
if wait_for 10 test -S "$ACT"; then
        pass
else
        fail "systemd-socket-activate listens on $ACT again"
fi
check_eq "the kept charge survived the restart" "$(actl --json show /act | jget 'd["current"]')" $M
rc=0
stop_bg "$activator" TERM 30 || rc=$?
check_eq "memacctd exits 0 on SIGTERM again" "$rc" 0
