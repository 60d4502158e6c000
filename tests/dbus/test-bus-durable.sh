#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# Saver changes over the bus: an OK is sent once the change is saved
# (the state file or its journal holds it when the reply arrives); on a
# full state directory (a small tmpfs filled up) durable changes are
# refused with ResourceExhausted naming the cause while session charges
# and reads go on, and they are accepted again, without a restart, once
# there is room.

# shellcheck source-path=SCRIPTDIR source=../lib.sh
source "$(dirname "$0")/../lib.sh"

need dbus-daemon busctl
need_root "the policy lets only root own org.memacct1 (and a tmpfs needs mount)"
mkdir -p "$STATE"
mount -t tmpfs -o size=4m,mode=0700 tmpfs "$STATE" || skip_test "cannot mount a tmpfs for the state"
cleanup_mount() {
        umount -l "$STATE" 2>/dev/null || true
}

start_bus || { cleanup_mount; exit 1; }
check_start_daemon --bus "$BUS_ADDR" || { cleanup_mount; exit 1; }

# Saved: in the state file or the journal after it.
saved() {
        cat "$STATE/state" "$STATE/journal" 2>/dev/null | grep -q "$1"
}
check_run "CreateGroup /b over the bus" 0 mcall CreateGroup 'sa{st}u' /b 0 4294967295
check_run "/b is saved when the reply arrives" 0 saved '^[a-z]* /b owner='
check_run "a kept charge over the bus" 0 mcall Charge stsb /b 4096 anon true
check_run "the kept charge is saved when the reply arrives" 0 saved '^[a-z]* /b .*kept.anon=4096'

# Fill the disk: the room kept ahead takes the changes it holds, then
# durable changes are refused.
dd if=/dev/zero of="$STATE/fill" bs=64k >/dev/null 2>&1 || true
refused=0 last=
for i in $(seq 3000); do
        if mcall CreateGroup 'sa{st}u' "/b/n$i" 0 4294967295 >/dev/null 2>"$TMP/err"; then
                last=/b/n$i
        else
                refused=1
                break
        fi
done
check_eq "durable changes are refused once the disk is full" "$refused" 1
check_match "as resource exhausted, the cause named" "$(<"$TMP/err")" "cannot be saved to .*No space left on device"
[[ -z $last ]] || check_run "the last OK before it is saved" 0 saved "^[a-z]* $last owner="
check_run "a kept charge is refused too" 1 mcall Charge stsb /b 4096 anon true
check_run "the refused group does not exist" 1 mcall GetGroup s "/b/n$i"
check_run "a session charge goes on" 0 mcall Charge stsb /b 8192 anon false
check_run "reads go on" 0 mcall GetGroup s /b

rm -f "$STATE/fill"
ok=0
for _ in $(seq 50); do
        if mcall CreateGroup 'sa{st}u' /back 0 4294967295 >/dev/null 2>&1; then
                ok=1
                break
        fi
        sleep 0.1
done
check_eq "durable changes are accepted again once there is room" "$ok" 1
check_run "and saved" 0 saved '^[a-z]* /back owner='

check_stop_daemon
cleanup_mount
finish
