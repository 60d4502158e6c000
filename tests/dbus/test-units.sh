#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# The systemd and D-Bus files as `meson install` installs them (into a
# temporary DESTDIR): each where systemd and the bus daemon look, the
# units clean under `systemd-analyze verify` (any message is a failure,
# not only the exit status: unknown keys only warn), the man pages they
# name installed, ExecStart's command line accepted by the installed
# daemon, the policy and activation file accepted by a real dbus-daemon.
# The check itself is checked: a broken copy of the unit must fail it.
#
# systemd-analyze verify wants ExecStart's binary to exist: the copy it
# verifies points into the DESTDIR (nothing else is changed).

# shellcheck source-path=SCRIPTDIR source=../lib.sh
source "$(dirname "$0")/../lib.sh"

: "${MEMACCT_BUILD_ROOT:?}" "${MEMACCT_MESON:?}" "${MEMACCT_SBINDIR:?}" "${MEMACCT_MANDIR:?}"
: "${MEMACCT_UNIT_DIR:?}" "${MEMACCT_DBUS_POLICY_DIR:?}" "${MEMACCT_DBUS_SERVICES_DIR:?}"
need systemd-analyze dbus-daemon busctl

DEST=$TMP/dest
UNITS=$DEST$MEMACCT_UNIT_DIR
DAEMON=$DEST$MEMACCT_SBINDIR/memacctd

run "$MEMACCT_MESON" install -C "$MEMACCT_BUILD_ROOT" --destdir "$DEST" --no-rebuild --quiet
check_eq "meson install --destdir succeeds (stderr: $ERR)" "$RC" 0
for f in "$UNITS/memacctd.service" "$UNITS/memacctd.socket" "$UNITS/memacctd-metrics.socket" \
        "$DEST$MEMACCT_DBUS_POLICY_DIR/org.memacct1.conf" \
        "$DEST$MEMACCT_DBUS_SERVICES_DIR/org.memacct1.service" "$DAEMON"; do
        check_eq "installed: ${f#"$DEST"}" "$(test -f "$f" && echo yes || echo no)" yes
done
# Under the prefix unless -Dsystemdsystemunitdir names another.
check_eq "the unit directory is the one configured, else under the prefix" "$MEMACCT_UNIT_DIR" \
        "${MEMACCT_UNIT_DIR_OPTION:-$MEMACCT_PREFIX/lib/systemd/system}"
check_match "the policy goes where the bus daemon reads policies" "$MEMACCT_DBUS_POLICY_DIR" \
        '/dbus-1/system\.d$'
check_match "the activation file where it reads them" "$MEMACCT_DBUS_SERVICES_DIR" \
        '/dbus-1/system-services$'

# ---- the units ----

exec_start=$(sed -n 's/^ExecStart=//p' "$UNITS/memacctd.service")
check_match "ExecStart is the installed daemon" "$exec_start" "^$MEMACCT_SBINDIR/memacctd( |\$)"
# The arguments of ExecStart, given to the installed daemon with --version
# appended: it must accept them (and exit before doing anything).
read -r -a exec_args <<<"${exec_start#* }"
check_run "the installed memacctd accepts ExecStart's options" 0 "$DAEMON" "${exec_args[@]}" --version
check_match "the service is Type=notify with the bus name" "$(<"$UNITS/memacctd.service")" \
        $'Type=notify\nBusName=org.memacct1'
check_match "the socket is /run/memacctd/memacctd.sock" "$(<"$UNITS/memacctd.socket")" \
        '^ListenStream=/run/memacctd/memacctd\.sock$'
metrics_socket=$(<"$UNITS/memacctd-metrics.socket")
check_match "the metrics socket listens on loopback" "$metrics_socket" '^ListenStream=127\.0\.0\.1:[0-9]+$'
check_match "it names its descriptor metrics" "$metrics_socket" '^FileDescriptorName=metrics$'
check_match "and passes it to the service" "$metrics_socket" '^Service=memacctd\.service$'

# verify_units DIR: systemd-analyze verify of DIR's units; its output in OUT.
# Return: 0 when it exits 0 and says nothing.
verify_units() {
        local man=--man=no

        # Documentation= is checked too, against the installed man pages.
        if command -v man >/dev/null; then
                man=--man=yes
        fi
        RC=0
        OUT=$(cd "$1" && MANPATH=$DEST$MEMACCT_MANDIR systemd-analyze verify "$man" \
                ./memacctd.service ./memacctd.socket ./memacctd-metrics.socket 2>&1) || RC=$?
        [[ $RC == 0 && -z $OUT ]]
}

# copy_units DIR: the installed units, ExecStart and ExecReload pointing into DEST.
copy_units() {
        mkdir -p "$1"
        sed -E "s#^(ExecStart|ExecReload)=$MEMACCT_SBINDIR/#\1=$DEST$MEMACCT_SBINDIR/#" "$UNITS/memacctd.service" \
                >"$1/memacctd.service"
        cp "$UNITS/memacctd.socket" "$UNITS/memacctd-metrics.socket" "$1/"
}

copy_units "$TMP/verify"
if verify_units "$TMP/verify"; then
        pass
else
        fail "systemd-analyze verify of the installed units (status $RC): $OUT"
fi

# The check catches a broken unit: a misspelt key (only a warning to
# systemd) and a missing binary (an error).
copy_units "$TMP/broken1"
sed -i 's/^WatchdogSec=/WatchdogSecs=/' "$TMP/broken1/memacctd.service"
if verify_units "$TMP/broken1"; then
        fail "a unit with an unknown key passes the check"
else
        check_match "an unknown key fails the check" "$OUT" "Unknown key"
fi
copy_units "$TMP/broken2"
sed -i "s|^ExecStart=[^ ]*|ExecStart=$DEST/nonexistent/memacctd|" "$TMP/broken2/memacctd.service"
if verify_units "$TMP/broken2"; then
        fail "a unit whose binary is missing passes the check"
else
        check_match "a missing binary fails the check" "$OUT" "not executable"
fi

# ---- the bus files ----

policy=$DEST$MEMACCT_DBUS_POLICY_DIR/org.memacct1.conf
activation=$DEST$MEMACCT_DBUS_SERVICES_DIR/org.memacct1.service
check_match "activation starts memacctd.service" "$(<"$activation")" '^SystemdService=memacctd\.service$'
check_match "activation is for org.memacct1" "$(<"$activation")" '^Name=org\.memacct1$'
# A bus daemon that includes the installed policy and reads the installed
# activation file: it starts, and lists org.memacct1 as activatable.
if start_bus "$policy" "$DEST$MEMACCT_DBUS_SERVICES_DIR"; then
        pass
else
        fail "dbus-daemon starts with the installed policy"
fi
if [[ -n $BUS_ADDR ]]; then
        run bctl call org.freedesktop.DBus /org/freedesktop/DBus org.freedesktop.DBus ListActivatableNames
        check_match "the bus daemon reads the activation file" "$OUT" '"org\.memacct1"'
        # The policy names the service's user; on a host where sysusers.d
        # never made it (this one: nothing is installed) the bus daemon
        # says so, once, and goes on. Anything else about our files counts.
        buslog=$(<"$TMP/bus.log")
        if ! getent passwd memacct >/dev/null; then
                buslog=$(grep -v 'Unknown username "memacct" in message bus configuration file' <<<"$buslog" || true)
        fi
        check_nomatch "and says nothing about our files" "$buslog" 'memacct'
fi
stop_bus
