#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# The Debian packages on a running host: a systemd-nspawn container of the
# host's OS (an overlay on its root, so dpkg's database and the libraries
# are the host's and every change stays in the container), booted, the
# system bus already running, no memacct user. In it, as an operator would:
#  - dpkg -i of the packages of this tree: the user is made, the bus reads
#    the policy, and memacctd serves on the socket and on the bus at once,
#    no reboot, no manual step;
#  - an upgrade to a second build (the same tree, a higher version): the
#    running daemon is replaced and its kept charges are still there;
#  - a broken config: `systemctl reload` fails and the daemon serves on;
#  - dbus masked and stopped: the daemon restarts and serves the socket;
#  - the journal lines of a create, a limit change and a refused charge.
# Each step's output is printed, as a transcript.
#
# Usage: test-deb-upgrade.sh SOURCE_ROOT. Needs root, systemd-nspawn,
# dpkg-buildpackage and git; SKIP otherwise or where the container cannot
# boot. A few minutes on 2 cores, most of them the two package builds.

SRC=${1:?usage: test-deb-upgrade.sh SOURCE_ROOT}
export MEMACCTD=/usr/sbin/memacctd MEMACCTCTL=/usr/bin/memacctctl
# shellcheck source-path=SCRIPTDIR source=../lib.sh
source "$(dirname "$0")/../lib.sh"

DEBS=$TMP/debs
NSPAWN_LOG=$TMP/nspawn.log
MACHINE=memacct-deb-$$
NSPAWN_PID=
LEADER=

((EUID == 0)) || skip_test "needs root (systemd-nspawn boots a container)"
for tool in systemd-nspawn nsenter dpkg-buildpackage dh git; do
        command -v "$tool" >/dev/null ||
                skip_test "$tool not installed (apt-get install systemd-container dpkg-dev debhelper git)"
done
git -C "$SRC" rev-parse --git-dir >/dev/null 2>&1 || skip_test "$SRC is not a git checkout"
getent passwd memacct >/dev/null &&
        skip_test "the host has a memacct user: the container would not start without one"

# The host's root filesystem under an overlay with a tmpfs upper layer
# (nspawn's own --volatile=overlay refuses the host's root): dpkg's
# database, /etc and /usr as the host has them, all writable, nothing
# written reaching the host. Its own machine id, so its journal is its own.
ROOT=$TMP/root
mkdir -p "$TMP/upper" "$ROOT"
mount -t tmpfs tmpfs "$TMP/upper" || skip_test "cannot mount a tmpfs"
mkdir -p "$TMP/upper/up" "$TMP/upper/work"
mount -t overlay overlay -o "lowerdir=/,upperdir=$TMP/upper/up,workdir=$TMP/upper/work" "$ROOT" ||
        skip_test "cannot mount an overlay on the host's root"
on_exit 'umount -l "$ROOT" "$TMP/upper"'
systemd-id128 new >"$ROOT/etc/machine-id"
CONTAINER_OPTS=(--directory="$ROOT" --bind-ro="$DEBS:/debs")
# shellcheck source-path=SCRIPTDIR source=container.sh
source "$(dirname "$0")/container.sh"

cleanup() {
        if [[ -n $LEADER ]] && ((FAILED > 0)); then
                c journalctl -b --no-pager -o short-monotonic -u memacctd.service -u memacctd.socket \
                        -u dbus.service >>"$DAEMON_LOG" 2>&1 || true
        fi
        shutdown_container
}
on_exit cleanup

# say CMD...: run CMD in the container, print it and its output (the
# transcript), leave RC, OUT and ERR as run does.
say() {
        run c "$@"
        printf '# %s\n' "$*"
        [[ -z $OUT ]] || printf '%s\n' "$OUT"
        [[ -z $ERR ]] || printf '%s\n' "$ERR"
        [[ $RC == 0 ]] || printf '(exit status %s)\n' "$RC"
}

# ---- 1. two builds of the packages: this tree, and the same a version up ----

t0=$SECONDS
mkdir -p "$DEBS/v1" "$DEBS/v2"
build() { # build DIR [VERSION]: the .debs of a clone (VERSION: a changelog entry first)
        git clone -q "$SRC" "$TMP/$1/src" || return 1
        if [[ -n ${2:-} ]]; then
                {
                        printf 'memacctd (%s) unstable; urgency=medium\n\n  * The upgrade test'"'"'s build.\n\n' "$2"
                        printf ' -- %s  %s\n\n' "$(sed -n 's/^ -- \(.*>\)  .*/\1/p' "$TMP/$1/src/debian/changelog" | head -n 1)" \
                                "$(date -R)"
                        cat "$TMP/$1/src/debian/changelog"
                } >"$TMP/changelog" && mv "$TMP/changelog" "$TMP/$1/src/debian/changelog"
        fi
        (cd "$TMP/$1/src" && dpkg-buildpackage -us -uc -b) >"$TMP/$1.log" 2>&1 || { tail -n 30 "$TMP/$1.log"; return 1; }
        mv "$TMP/$1"/*.deb "$DEBS/$1/"
}
V1=$(dpkg-parsechangelog -l "$SRC/debian/changelog" -S Version)
V2=$V1+upgrade1
if build v1 && build v2 "$V2"; then
        pass
else
        fail "dpkg-buildpackage of $V1 and $V2"
        exit 1
fi
echo "built $V1 and $V2 in $((SECONDS - t0)) s"

# ---- 2. boot, the bus running, no memacct user ----

t0=$SECONDS
if ! boot; then
        shutdown_container
        skip_test "systemd-nspawn cannot boot the host's OS here: $BOOT_WHY"
fi
booted() {
        run c systemctl is-system-running
        [[ $OUT =~ ^(running|degraded|maintenance|stopping)$ ]]
}
wait_for 60 booted || true
check_match "the container boots" "$OUT" '^(running|degraded)$'
echo "booted in $((SECONDS - t0)) s"
check_run "the system bus runs before the install" 0 c systemctl start dbus.service
check_run "no memacct user yet" 2 c getent passwd memacct
# A container image's policy-rc.d (exit 101: start nothing) is not on a
# real host, and would keep dpkg from starting or restarting anything.
c rm -f /usr/sbin/policy-rc.d

# ---- 3. install ----

say sh -c 'dpkg -i /debs/v1/*.deb'
check_eq "dpkg -i of $V1 succeeds" "$RC" 0
[[ $RC == 0 ]] || exit 1
check_run "the install made the memacct user" 0 c getent passwd memacct
check_run "memacctd.socket is active" 0 c systemctl is-active memacctd.socket
say memacctctl create /jobs max=64M
check_eq "memacctctl create over the socket (socket activation)" "$RC" 0
check_run "the service runs" 0 c systemctl is-active memacctd.service
owned() { c busctl --system status org.memacct1 >/dev/null 2>&1; }
if wait_for 20 owned; then pass; else fail "memacctd owns org.memacct1 without a dbus reload by hand"; fi
say memacctctl --bus=system tree
check_eq "memacctctl over the bus" "$RC" 0
say memacctctl charge /jobs 3M
check_eq "a kept charge" "$RC" 0
pid_v1=$(c systemctl show -P MainPID memacctd.service)

# ---- 4. upgrade ----

say sh -c 'dpkg -i /debs/v2/*.deb'
check_eq "dpkg -i of $V2 (the upgrade) succeeds" "$RC" 0
[[ $RC == 0 ]] || exit 1
check_eq "the installed version is $V2" "$(c dpkg-query -W -f '${Version}' memacctd)" "$V2"
new_daemon() {
        local p
        p=$(c systemctl show -P MainPID memacctd.service)
        [[ -n $p && $p != 0 && $p != "$pid_v1" ]]
}
if wait_for 20 new_daemon; then pass; else fail "the upgrade replaced the running daemon (pid $pid_v1)"; fi
check_run "the service runs after the upgrade" 0 c systemctl is-active memacctd.service
check_run "and the socket is still active" 0 c systemctl is-active memacctd.socket
say memacctctl tree
check_eq "the kept charge survived the upgrade" "$(c memacctctl --json show /jobs | jget 'd["kept"]')" $((3 * 1024 * 1024))
if wait_for 20 owned; then pass; else fail "after the upgrade memacctd owns org.memacct1 again"; fi

# ---- 5. a broken config: reload refused, the daemon serves on ----

pid_v2=$(c systemctl show -P MainPID memacctd.service)
c mkdir -p /etc/memacctd
c sh -c 'printf "[daemon]\nworkers = many\n" >/etc/memacctd/memacctd.conf'
say systemctl reload memacctd.service
check_eq "systemctl reload of a broken config fails" "$([[ $RC != 0 ]] && echo failed)" failed
check_eq "the same daemon serves on" "$(c systemctl show -P MainPID memacctd.service)" "$pid_v2"
check_run "and answers" 0 c memacctctl show /jobs
say journalctl -b -u memacctd.service -o cat --no-pager -n 3
check_match "the journal says where the config is wrong" "$OUT" 'memacctd\.conf:2: .*workers'
c rm /etc/memacctd/memacctd.conf

# ---- 6. dbus masked and stopped ----

say systemctl mask --now dbus.socket dbus.service
check_eq "dbus masked and stopped" "$RC" 0
say systemctl restart memacctd.service
check_eq "memacctd restarts without a bus" "$RC" 0
say memacctctl tree
check_eq "and serves the socket" "$RC" 0
say systemctl show -P StatusText memacctd.service
check_match "its status says the bus is not connected" "$OUT" 'not connected'

# ---- 7. the journal: a create, a limit change, a refused charge ----

c memacctctl create /jobs/full max=1M >/dev/null
c memacctctl set /jobs/full max=2M >/dev/null
c memacctctl charge /jobs/full 4M >/dev/null 2>&1 || true
logged() {
        [[ $(c journalctl -b -u memacctd.service -o cat --no-pager | grep -c "$1") -gt 0 ]]
}
wait_for 10 logged 'Group /jobs/full refused' || true
run c journalctl -b -u memacctd.service -o cat --no-pager
JOURNAL=$OUT
echo "# journalctl -u memacctd.service (the audit lines)"
grep -E '/jobs' <<<"$JOURNAL"
check_match "the create is in the journal, with who" "$JOURNAL" 'Group /jobs/full created, owner 0, by uid 0 pid [0-9]+ \(memacctctl\)'
check_match "the limit change, with the value" "$JOURNAL" 'Limits of /jobs/full set: max=2097152, by uid 0'
check_match "the refused charge" "$JOURNAL" 'Group /jobs/full refused a charge at its max'
