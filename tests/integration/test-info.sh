#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# memacctctl info: the daemon's version, its uptime, the requests it has
# served (counted on every transport, one per request), the sessions and
# groups it has now, and its state file's state: saved while it can save,
# failing with the cause once it cannot (a tmpfs remounted read-only),
# and saved again once it can.

# shellcheck source-path=SCRIPTDIR source=../lib.sh
source "$(dirname "$0")/../lib.sh"

info() {
        ctl --json info | jget "d[\"$1\"]"
}

check_start_daemon || exit 1

check_run "info" 0 ctl info
echo "$OUT"
check_eq "the version is the client's" "$(grep '^version:' <<<"$OUT")" \
        "version: memacctd $("$MEMACCTCTL" --version | awk '{ print $NF }')"
check_match "uptime in seconds" "$OUT" 'uptime_seconds: [0-9]+'
check_match "the state is saved" "$OUT" 'state: saved'
check_nomatch "no cause while saving" "$OUT" 'state_cause'

check_eq "groups: the root alone" "$(info groups)" 1
ctl create /a
ctl create /a/b
check_eq "groups count what was created" "$(info groups)" 3
# Each memacctctl is one session: info's own.
check_eq "sessions: the caller's" "$(info sessions)" 1
sessions_are() {
        [[ $(info sessions) == "$1" ]]
}
bg "$TMP/hold.out" "$MEMACCTCTL" --socket "$SOCK" hold /a/b 1M
wait_for 10 sessions_are 2
check_eq "sessions: the hold's too" "$(info sessions)" 2
stop_bg "$BG_PID" INT

# A memacctctl info is Hello then GetInfo: two requests, the second one
# counted before it is answered.
r1=$(info requests)
r2=$(info requests)
check_eq "each info is two requests more" "$((r2 - r1))" 2
saves=$(info saves)
ctl create /c
check_eq "a durable change is one save more" "$(info saves)" $((saves + 1))
check_match "the last save has a time" "$(info last_save_usec)" '^[1-9][0-9]{15}$'

check_stop_daemon

# ---- a state directory that cannot be written ----
if [[ $(id -u) != 0 ]]; then
        echo "SKIP: failing state: not root (mount)"
        exit 0
fi
MNT=$TMP/ro
mkdir -p "$MNT"
if ! mount -t tmpfs -o size=8m,mode=0700 tmpfs "$MNT" 2>/dev/null; then
        echo "SKIP: failing state: cannot mount a tmpfs"
        exit 0
fi
STATE=$MNT/state
mkdir -p "$STATE"
# Saved once, then read-only before the daemon starts again: a daemon
# holds its journal open, so the remount waits for it to stop.
if check_start_daemon; then
        ctl create /x
        check_stop_daemon
fi
mount -o remount,ro "$MNT"
if check_start_daemon; then
        check_run "a create is refused while the state cannot be saved" 1 ctl create /y
        check_eq "info says failing" "$(info state)" failing
        check_match "and why" "$(info state_cause)" 'Read-only file system'
        check_run "info, text" 0 ctl info
        echo "$OUT"
        check_match "the text has the cause" "$OUT" 'state_cause: .*Read-only file system'
        mount -o remount,rw "$MNT"
        state_is() {
                [[ $(info state) == "$1" ]]
        }
        wait_for 10 state_is saved
        check_eq "info says saved again" "$(info state)" saved
        check_stop_daemon
fi
umount -l "$MNT"
exit 0
