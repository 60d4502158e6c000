#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# The journal's record of who changed what: every create, remove, limit
# change, delegation, placement rule and kept charge is logged at the
# daemon's default level, after it is made, naming the uid, pid, command
# and transport that made it; a refused change is not logged as made.

source "$(dirname "$0")/../lib.sh"

check_start_daemon || exit 1

logged() {
        grep -c -- "$1" "$DAEMON_LOG" || true
}

check_run "create" 0 ctl create /app max=1G
check_match "a create is logged with who made it" "$(<"$DAEMON_LOG")" \
        "notice: Group /app created, owner 0, by uid 0 pid [0-9]+ \\(memacctctl\\) over the socket"
check_run "set limits" 0 ctl set /app max=1M high=512K
check_match "a limit change, with the values" "$(<"$DAEMON_LOG")" \
        "Limits of /app set: max=1048576 high=524288, by uid 0 pid [0-9]+ \\(memacctctl\\) over the socket"
check_run "a kept charge" 0 ctl charge /app 4K
check_match "is logged" "$(<"$DAEMON_LOG")" "Kept charge of 4096 anon bytes on /app, by uid 0"
check_run "and its release" 0 ctl uncharge /app 4K
check_match "too" "$(<"$DAEMON_LOG")" "Kept charge of 4096 anon bytes released from /app, by uid 0"
if [[ $(id -u) == 0 ]]; then
        check_run "delegate" 0 ctl set /app owner=65534
        check_match "a delegation, old and new owner" "$(<"$DAEMON_LOG")" "Group /app delegated to uid 65534 \\(was 0\\)"
        check_run "the delegate creates inside" 0 setpriv --reuid=65534 --regid=65534 --clear-groups \
                "$MEMACCTCTL" --socket "$SOCK" create /app/sub
        check_match "with its own uid" "$(<"$DAEMON_LOG")" "Group /app/sub created, owner 65534, by uid 65534"
        before=$(logged "Group /evil created")
        check_run "a refused create" 1 setpriv --reuid=65534 --regid=65534 --clear-groups \
                "$MEMACCTCTL" --socket "$SOCK" create /evil
        check_eq "is not logged as made" "$(logged "Group /evil created")" "$before"
        check_run "remove" 0 ctl remove /app/sub
fi
check_run "a placement rule" 0 ctl rule add /memacct-audit-cgroup /app
check_match "is logged" "$(<"$DAEMON_LOG")" "Placement rule /memacct-audit-cgroup -> /app added, by uid 0"
check_run "and removed" 0 ctl rule remove /memacct-audit-cgroup
check_match "too" "$(<"$DAEMON_LOG")" "Placement rule of /memacct-audit-cgroup removed, by uid 0"
# A refused charge and an oom: logged, at most once per group every 10 s.
check_run "a group with a small max" 0 ctl create /full max=4K
for i in 1 2 3; do
        check_run "a charge over its max, $i" 1 ctl charge /full 8K
done
check_eq "the refusal is logged once, not three times" \
        "$(logged "Group /full refused a charge at its max")" 1
check_match "saying by whom" "$(<"$DAEMON_LOG")" \
        "Group /full refused a charge at its max \\(max events: 1\\), of uid 0 pid [0-9]+"
check_run "remove /full" 0 ctl remove /full
check_run "remove /app" 0 ctl remove /app
check_match "a removal" "$(<"$DAEMON_LOG")" "Group /app removed, by uid 0"
check_stop_daemon

# ---- [daemon] log-level: warning leaves the trail out, a reload brings it back ----

DAEMON_CONF=$'[daemon]\nlog-level = warning\n' check_start_daemon || exit 1
check_run "create at log-level = warning" 0 ctl create /quiet max=4K
check_run "a refusal at log-level = warning" 1 ctl charge /quiet 8K
check_eq "the create is not logged" "$(logged "Group /quiet created")" 0
check_eq "nor the refusal" "$(logged "Group /quiet refused")" 0
printf '[daemon]\nlog-level = notice\n' >"$TMP/memacctd.conf"
before=$(logged "Configuration reloaded")
kill -HUP "$DAEMON_PID"
reloaded() { [[ $(logged "Configuration reloaded") -gt $before ]]; }
if wait_for 10 reloaded; then pass; else fail "the daemon logs its reload at notice"; fi
check_run "create after the reload" 0 ctl create /loud
check_match "is logged" "$(<"$DAEMON_LOG")" "Group /loud created, owner 0, by uid 0"
check_stop_daemon
printf '[daemon]\nlog-level = loud\n' >"$TMP/bad.conf"
run "$MEMACCTD" --config "$TMP/bad.conf" --check-config
check_eq "a bad log-level fails --check-config" "$RC" 1
check_match "naming the values" "$ERR$OUT" "log-level = loud: must be err, warning, notice, info or debug"
