#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# Durable changes over the bus: an OK is sent once the change is saved
# (the state file holds it when the reply arrives), a save that fails turns
# the held OK into org.memacct1.Error.Internal ("in effect but could not
# be saved"), new durable changes are refused with ResourceExhausted naming
# the cause while session charges and reads go on, and everything comes
# back without a restart once the state directory is there again.

# shellcheck source-path=SCRIPTDIR source=../integration/lib.sh
source "$(dirname "$0")/../integration/lib.sh"
# shellcheck source-path=SCRIPTDIR source=bus-lib.sh
source "$(dirname "$0")/bus-lib.sh"

need dbus-daemon busctl
if [[ $(id -u) != 0 ]]; then
        echo "not root: the policy lets only root own org.memacct1"
        trap - EXIT
        rm -rf "$TMP"
        exit 77
fi

start_bus || exit 1
check_start_daemon --bus "$BUS_ADDR" || exit 1

check_run "CreateGroup /b over the bus" 0 mcall CreateGroup 'sa{st}u' /b 0 4294967295
check_run "the state file holds /b when the reply arrives" 0 grep -q '^group /b ' "$STATE/state"
check_run "a kept charge over the bus" 0 mcall Charge stsb /b 4096 anon true
check_run "the state file holds the kept charge when the reply arrives" 0 \
        grep -q '^group /b .*kept.anon=4096' "$STATE/state"

# The state directory goes away under the daemon.
mv "$STATE" "$STATE.away"
check_run "a change whose save fails" 1 mcall CreateGroup 'sa{st}u' /lost 0 4294967295
check_match "is answered Internal: in effect, not saved" "$ERR" "in effect but could not be saved"
check_run "the next durable change is refused" 1 mcall CreateGroup 'sa{st}u' /refused 0 4294967295
check_match "with the cause named" "$ERR" "cannot be saved to .*No such file or directory"
check_run "a kept charge is refused too" 1 mcall Charge stsb /b 4096 anon true
check_match "as resource exhausted" "$ERR" "durable changes are refused"
check_run "the refused group does not exist" 1 mcall GetGroup s /refused
check_run "a session charge goes on" 0 mcall Charge stsb /b 8192 anon false
check_run "reads go on" 0 mcall GetGroup s /b

mv "$STATE.away" "$STATE"
ok=0
for _ in $(seq 50); do
        if mcall CreateGroup 'sa{st}u' /back 0 4294967295 >/dev/null 2>&1; then
                ok=1
                break
        fi
        sleep 0.1
done
check_eq "durable changes are accepted again once the directory is back" "$ok" 1
check_run "the change that was in effect is saved with them" 0 grep -q '^group /lost ' "$STATE/state"
check_run "and the new one" 0 grep -q '^group /back ' "$STATE/state"

check_stop_daemon
finish
