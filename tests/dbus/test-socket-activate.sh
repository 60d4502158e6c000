#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# Socket activation as memacctd.socket does it: systemd-socket-activate
# binds and listens, and starts memacctd on the first connection with the
# socket as fd 3 (LISTEN_FDS=1). memacctctl works through it; the daemon
# says it was activated, ignores --socket, and leaves the socket file
# alone at exit (it belongs to whoever passed it).
#
# Then as memacctd-metrics.socket adds to it: a TCP listener passed too,
# named "metrics" (--fdname), and passed first, so that the daemon must go
# by the names, not the order. It serves the scrape on it with no
# [metrics] listen, and the client socket still works.

# shellcheck source-path=SCRIPTDIR source=../lib.sh
source "$(dirname "$0")/../lib.sh"

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

# ---- a metrics listener passed as memacctd-metrics.socket passes it ----

# A free loopback port: bound, read and released (the activator binds it next).
PORT=$("$PY" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
rm -f "$ACT"
bg "$DAEMON_LOG" systemd-socket-activate -l "127.0.0.1:$PORT" -l "$ACT" --fdname=metrics:memacctd.socket \
        "$MEMACCTD" --state-dir "$STATE" --workers 2
activator=$BG_PID
if wait_for 10 test -S "$ACT"; then
        pass
else
        fail "systemd-socket-activate listens on $ACT and 127.0.0.1:$PORT"
fi
check_eq "the client socket is taken by name, not as fd 3" "$(actl --json show /act | jget 'd["current"]')" $M
check_match "memacctd serves metrics on the passed listener" "$(<"$DAEMON_LOG")" \
        "Serving metrics on http://127.0.0.1:$PORT/metrics"
scrape=$("$PY" -c 'import sys, urllib.request
print(urllib.request.urlopen(sys.argv[1], timeout=10).read().decode())' "http://127.0.0.1:$PORT/metrics" 2>&1) ||
        scrape="the scrape failed: $scrape"
check_match "the scrape has the charged group's usage" "$scrape" \
        "memacct_group_usage_bytes\{group=\"/act\"\} $M"
check_match "and the daemon's own series" "$scrape" 'memacctd_requests_total\{'
rc=0
stop_bg "$activator" TERM 30 || rc=$?
check_eq "memacctd exits 0 on SIGTERM with a passed metrics listener" "$rc" 0

