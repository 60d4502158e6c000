#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# The hardening of units/memacctd.service.in, checked against what the
# daemon really does (there is no PID-1 systemd here to apply it):
# memacctd runs with no capabilities and no_new_privs
# (CapabilityBoundingSet=, NoNewPrivileges=yes) under strace, serves the
# socket and the bus, reloads and stops; then check-syscalls.py checks
# every syscall against @system-service, every socket against AF_UNIX,
# every mapping against MemoryDenyWriteExecute, and every write against
# the directories the unit makes writable.

# shellcheck source-path=SCRIPTDIR source=../lib.sh
source "$(dirname "$0")/../lib.sh"

need strace setpriv systemd-analyze dbus-daemon busctl
need_root "the unit runs memacctd as root"
K=1024

start_bus || exit 1
# Root without any capability, as the unit leaves it; strace traces its
# own child, which needs none.
MEMACCTD_REAL=$MEMACCTD
wrapper=$TMP/memacctd-hardened
# (LeakSanitizer cannot run under ptrace: the other tests check leaks.)
cat >"$wrapper" <<EOF
#!/bin/sh
ASAN_OPTIONS=\${ASAN_OPTIONS:+\$ASAN_OPTIONS:}detect_leaks=0
export ASAN_OPTIONS
exec setpriv --no-new-privs --bounding-set=-all --inh-caps=-all \\
        strace -f -qq -y -o "$TMP/strace.log" "$MEMACCTD_REAL" "\$@"
EOF
chmod +x "$wrapper"
MEMACCTD=$wrapper
check_start_daemon --bus "$BUS_ADDR" || exit 1
# DAEMON_PID is strace's; it exits with memacctd's status. Signals go to
# memacctd itself.
real=$(pgrep -P "$DAEMON_PID" | head -n1)
check_eq "the daemon has no capabilities" "$(awk '/^CapEff/ { print $2 }' "/proc/$real/status")" \
        0000000000000000
check_eq "and no_new_privs" "$(awk '/^NoNewPrivs/ { print $2 }' "/proc/$real/status")" 1

# The socket.
check_run "create over the socket" 0 ctl create /h max=1M
check_run "a kept charge over the socket" 0 ctl charge /h 64K
run ctl charge /h 2M
check_eq "a refused charge over the socket" "$RC" 1
bg "$TMP/hold.out" "$MEMACCTCTL" --socket "$SOCK" hold /h 16K
check_current_soon "a session charge over the socket" /h $((80 * K))
stop_bg "$BG_PID" INT || fail "memacctctl hold exits 0"
check_run "show over the socket" 0 ctl --json show /h --exact
# The bus.
check_run "CreateGroup over the bus" 0 mcall CreateGroup 'sa{st}u' /h/b 1 max 65536 4294967295
check_run "a kept charge over the bus" 0 mcall Charge stsb /h/b 4096 "" true
check_run "a session charge over the bus" 0 mcall Charge stsb /h/b 4096 "" false
run mcall Charge stsb /h/b 1048576 "" true
check_eq "a refused charge over the bus" "$RC" 1
check_run "properties over the bus" 0 bctl get-property org.memacct1 "$(objpath /h/b)" org.memacct1.Group \
        MemoryCurrent Events Stats
check_run "GetManagedObjects" 0 bctl call org.memacct1 /org/memacct1 org.freedesktop.DBus.ObjectManager \
        GetManagedObjects
# A reload, and the state saved (housekeeping).
kill -HUP "$real"
if wait_for 10 grep -q "Configuration reloaded" "$DAEMON_LOG"; then
        pass
else
        fail "the daemon reloads on SIGHUP"
fi
kill -TERM "$real"
rc=0
wait "$DAEMON_PID" || rc=$?
DAEMON_PID=
check_eq "the daemon exits 0 on SIGTERM" "$rc" 0
check_nomatch "the state was saved" "$(ls -A "$STATE")" '^$'

systemd-analyze syscall-filter >"$TMP/syscall-filter.txt" 2>/dev/null
check_run "what memacctd did fits the unit's hardening" 0 "$PY" "$(dirname "$0")/check-syscalls.py" \
        "$TMP/strace.log" "$TMP/syscall-filter.txt" "$STATE" "$(dirname "$SOCK")"
printf '%s\n' "$OUT"
# The checker catches what it should: the same run with nothing writable,
# and with a syscall outside the set.
run "$PY" "$(dirname "$0")/check-syscalls.py" "$TMP/strace.log" "$TMP/syscall-filter.txt" /nonexistent
check_match "a write outside the writable directories is caught" "$OUT" "a write outside"
{
        cat "$TMP/strace.log"
        echo "1 reboot(LINUX_REBOOT_MAGIC1, LINUX_REBOOT_MAGIC2, LINUX_REBOOT_CMD_RESTART) = -1 EPERM"
} >"$TMP/strace-bad.log"
run "$PY" "$(dirname "$0")/check-syscalls.py" "$TMP/strace-bad.log" "$TMP/syscall-filter.txt" "$STATE" \
        "$(dirname "$SOCK")"
check_match "a syscall outside @system-service is caught" "$OUT" "syscall reboot is not in"
stop_bus
