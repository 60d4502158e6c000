#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# memacctd as deployed: the project built with --prefix=/usr and installed
# into a staging directory (meson install --destdir), then booted under a
# real systemd in systemd-nspawn and driven only through systemctl, busctl
# and memacctctl inside it, as root and as nobody.
#
# The container is the host's own OS on a tmpfs root (--volatile=yes: /usr
# is the host's, read-only; /etc and /var start empty, as on a first boot)
# with the staged /usr laid over the host's (--overlay-ro): meson install
# with --prefix=/usr puts everything under usr/ (units, bus policy and
# activation file included), so nothing else needs binding. It boots
# basic.target only, so that none of the host's own enabled services (nor
# memacctd.service, which the first boot's presets enable) are started;
# sockets.target is part of it, so the system bus and memacctd.socket are
# there. --private-network: no host port is taken, and the hardened unit
# can set up its own loopback. --register=no --keep-unit: no machined or
# host systemd is needed; the test talks to the container through nsenter
# on its PID 1.
#
# Beyond systemctl's verbs: the daemon runs as the memacct user with an
# exposure of at most 1.0, and with memacctd-metrics.socket started a
# scrape from outside the service answers, and a real Prometheus in the
# container (the host's /usr/bin/prometheus, when installed) scrapes it.
#
# Usage: test-system.sh SOURCE_ROOT. Needs root and systemd-nspawn
# (systemd-container); prints SKIP and exits 77 when the container cannot
# boot here. About a minute on 2 cores, most of it the build.

SRC=${1:?usage: test-system.sh SOURCE_ROOT}
# The binaries under test are the installed ones, inside the container;
# lib.sh insists on names.
export MEMACCTD=/usr/sbin/memacctd MEMACCTCTL=/usr/bin/memacctctl
# shellcheck source-path=SCRIPTDIR source=../lib.sh
source "$(dirname "$0")/../lib.sh"

BUILD=$TMP/build
STAGE=$TMP/stage
NSPAWN_LOG=$TMP/nspawn.log
MACHINE=memacct-system-$$
NSPAWN_PID=
LEADER=

((EUID == 0)) || skip_test "needs root (systemd-nspawn boots a container)"
for tool in systemd-nspawn nsenter meson ninja; do
        command -v "$tool" >/dev/null ||
                skip_test "$tool not installed (systemd-nspawn: apt-get install systemd-container)"
done
[[ -x /lib/systemd/systemd || -x /usr/lib/systemd/systemd ]] ||
        skip_test "the host has no systemd to boot in the container (apt-get install systemd)"

# ---- the container (container.sh: c, as_nobody, boot, shutdown_container) ----

# The host's OS on a tmpfs root, the staged /usr laid over the host's.
CONTAINER_OPTS=(--directory=/ --volatile=yes --overlay-ro="/usr:$STAGE/usr:/usr")
# shellcheck source-path=SCRIPTDIR source=container.sh
source "$(dirname "$0")/container.sh"

# On any way out: the container's journal into the log finish shows on a
# failure, the container shut down (then lib.sh's report).
cleanup() {
        if [[ -n $LEADER ]]; then
                c journalctl -b --no-pager -o short-monotonic -u memacctd.service \
                        -u memacctd.socket -u dbus.service >>"$DAEMON_LOG" 2>&1 || true
        fi
        shutdown_container
        [[ -z $NSPAWN_RC || $NSPAWN_RC == 0 ]] ||
                fail "the container shuts down cleanly (systemd-nspawn status $NSPAWN_RC)"
        if ((FAILED > 0)) && [[ -s $NSPAWN_LOG ]]; then
                echo "--- systemd-nspawn ---" >>"$DAEMON_LOG"
                cat "$NSPAWN_LOG" >>"$DAEMON_LOG"
        fi
}
on_exit cleanup

# ---- 1. build and stage ----

t0=$SECONDS
if ! { meson setup "$BUILD" "$SRC" --prefix=/usr -Dtests=false -Dbench=false &&
        ninja -C "$BUILD" -j2 &&
        meson install -C "$BUILD" --no-rebuild --destdir "$STAGE"; } >"$TMP/build.log" 2>&1; then
        tail -n 30 "$TMP/build.log" >&2
        fail "meson setup --prefix=/usr, ninja and meson install --destdir"
        exit 1
fi
echo "built and staged in $((SECONDS - t0)) s"
# Only usr/ is laid over the container: a file installed elsewhere would
# silently be missing from the deployment under test.
check_eq "meson install with --prefix=/usr writes only under usr/" "$(ls -A "$STAGE")" usr
for f in sbin/memacctd bin/memacctctl lib/systemd/system/memacctd.service \
        lib/systemd/system/memacctd.socket share/dbus-1/system.d/org.memacct1.conf \
        share/dbus-1/system-services/org.memacct1.service; do
        if [[ -e $STAGE/usr/$f ]]; then pass; else fail "/usr/$f installed"; fi
done

# ---- 2. boot ----

t0=$SECONDS
if ! boot; then
        shutdown_container
        skip_test "systemd-nspawn cannot boot the host's OS here: $BOOT_WHY"
fi
# Until systemd listens on its private bus, systemctl cannot even ask; then
# --wait waits for the boot to finish.
booted() {
        run c systemctl is-system-running
        [[ $OUT =~ ^(running|degraded|maintenance|stopping)$ ]]
}
wait_for 60 booted || true
check_match "the container boots (is-system-running)" "$OUT" '^(running|degraded)$'
if [[ $OUT == degraded ]]; then
        echo "degraded; failed units: $(c systemctl --failed --plain --no-legend | tr '\n' ' ')"
fi
echo "booted in $((SECONDS - t0)) s"
check_eq "the container's memacctd is the staged one" \
        "$(c sha256sum /usr/sbin/memacctd | cut -d' ' -f1)" \
        "$(sha256sum "$STAGE/usr/sbin/memacctd" | cut -d' ' -f1)"

# ---- 3. socket activation ----

# Whatever the presets did at boot: start from both stopped.
c systemctl stop memacctd.service memacctd.socket
check_eq "memacctd.service stopped" "$(c systemctl is-active memacctd.service || true)" inactive
check_run "systemctl start memacctd.socket" 0 c systemctl start memacctd.socket
check_eq "memacctd.socket active" "$(c systemctl is-active memacctd.socket || true)" active
check_eq "the service waits for a connection" \
        "$(c systemctl is-active memacctd.service || true)" inactive
check_run "memacctctl tree (the first connection)" 0 c memacctctl tree
check_match "tree shows the root" "$OUT" '^/ '
# The daemon answers a moment before it tells systemd READY=1:
# "activating" until then.
service_active() { [[ $(c systemctl is-active memacctd.service) == active ]]; }
wait_for 10 service_active || true
check_eq "the connection started memacctd.service" \
        "$(c systemctl is-active memacctd.service || true)" active
check_match "memacctd took the socket from systemd" \
        "$(c journalctl -b -u memacctd.service -o cat --no-pager)" \
        'Listening on /run/memacctd/memacctd\.sock \(socket activation\)'

# ---- status ----

run c systemctl status --no-pager --lines=0 memacctd.service
check_match "systemctl status shows the STATUS= text" "$OUT" \
        'Status: "Listening on /run/memacctd/memacctd\.sock and org\.memacct1 on the system bus: [0-9]+ groups?, [0-9]+ sessions?'

# ---- kept charges survive a crash ----

check_run "memacctctl create /x" 0 c memacctctl create /x

# ---- the audit trail's journal fields and catalog ----

# journal_entry ID GROUP: the newest entry of the unit with that
# MESSAGE_ID and MEMACCT_GROUP, as JSON ("" while there is none).
journal_entry() {
        c journalctl -b --no-pager -o json -n 1 _SYSTEMD_UNIT=memacctd.service "MESSAGE_ID=$1" \
                "MEMACCT_GROUP=$2" 2>/dev/null || true
}
CREATED_ID=$(sed -n 's/^#define MESSAGE_GROUP_CREATED "\(.*\)"$/\1/p' "$SRC/daemon/service/message-ids.h")
has_entry() { [[ -n $(journal_entry "$1" "$2") ]]; }
wait_for 10 has_entry "$CREATED_ID" /x || true
ENTRY=$(journal_entry "$CREATED_ID" /x)
check_eq "the create's entry has its MESSAGE_ID and MEMACCT_GROUP" \
        "$(jget 'd["MEMACCT_GROUP"] + " " + d["MESSAGE_ID"]' <<<"${ENTRY:-null}")" "/x $CREATED_ID"
check_eq "and who made it, over which transport" \
        "$(jget 'd["MEMACCT_UID"] + " " + d["MEMACCT_COMM"] + " " + d["MEMACCT_TRANSPORT"]' <<<"${ENTRY:-null}")" \
        "0 memacctctl socket"
check_eq "at notice" "$(jget 'd["PRIORITY"]' <<<"${ENTRY:-null}")" 5
check_run "memacctctl create /jmax max=4K" 0 c memacctctl create /jmax max=4K
check_run "a charge over its max is refused" 1 c memacctctl charge /jmax 8K
REFUSED_ID=$(sed -n 's/^#define MESSAGE_REFUSED_AT_MAX "\(.*\)"$/\1/p' "$SRC/daemon/service/message-ids.h")
wait_for 10 has_entry "$REFUSED_ID" /jmax || true
check_eq "the refusal's entry counts the group's max events" \
        "$(jget 'd["MEMACCT_EVENTS"]' <<<"$(journal_entry "$REFUSED_ID" /jmax)")" 1
check_run "journalctl --update-catalog reads the installed catalog" 0 c journalctl --update-catalog
check_match "journalctl -x explains the create" \
        "$(c journalctl -b --no-pager -x -n 1 "MESSAGE_ID=$CREATED_ID" MEMACCT_GROUP=/x)" \
        'The group /x was created by uid 0'
check_run "memacctctl remove /jmax" 0 c memacctctl remove /jmax
check_run "memacctctl charge /x 1M" 0 c memacctctl charge /x 1M
kept() {
        c memacctctl --json show /x | jget 'd["kept"]'
}
check_eq "the kept charge" "$(kept)" 1048576

# ---- a user of its own ----

pid0=$(c systemctl show -P MainPID memacctd.service)
check_eq "sysusers.d made the memacct user" "$(c getent passwd memacct | cut -d: -f1,7)" memacct:/usr/sbin/nologin
check_eq "the daemon runs as memacct" "$(c ps -o user= -p "$pid0" | tr -d ' ')" memacct
check_eq "its state is memacct's" "$(c stat -c %U /var/lib/memacctd)" memacct
check_eq "and private (UMask=0077)" "$(c stat -c %a /var/lib/memacctd/state)" 600
check_eq "the socket stays open to all" "$(c stat -c %a /run/memacctd/memacctd.sock)" 666

# ---- reload ----

reloads() {
        c journalctl -b -u memacctd.service -o cat --no-pager | grep -c 'Configuration reloaded' || true
}
# reload CONF: CONF as /etc/memacctd/memacctd.conf, then systemctl reload
# and the reload logged. ExecReload only sends SIGHUP: the log line may
# come a moment after systemctl returns.
reload_with() {
        local n0

        n0=$(reloads)
        printf '%s\n' "$1" | c tee /etc/memacctd/memacctd.conf >/dev/null
        check_run "systemctl reload memacctd" 0 c systemctl reload memacctd
        reloaded() { (($(reloads) > n0)); }
        if wait_for 10 reloaded; then pass; else fail "SIGHUP reload logged (Configuration reloaded)"; fi
}
# A change a reload applies ([access] read), seen by a client: the reload
# is not only logged.
check_run "nobody reads the tree" 0 as_nobody memacctctl tree
reload_with $'[access]\nread = root'
run as_nobody memacctctl tree
if [[ $RC != 0 ]]; then pass; else fail "after the reload to read = root, nobody reads nothing"; fi
reload_with $'[access]\nread = all'
check_run "after the reload to read = all, nobody reads the tree" 0 as_nobody memacctctl tree
check_eq "a reload keeps the process" "$(c systemctl show -P MainPID memacctd.service)" "$pid0"
# A file with an error: systemctl reload fails (ExecReload checks it
# first), and the running configuration stays.
printf '[access]\nread = everybody\n' | c tee /etc/memacctd/memacctd.conf >/dev/null
check_run "systemctl reload with a broken file fails" 1 c systemctl reload memacctd
check_match "the journal says where" \
        "$(c journalctl -b -u memacctd.service -o cat --no-pager | tail -n 20)" "memacctd.conf:2: .*read"
check_run "the daemon still serves, with the running configuration" 0 as_nobody memacctctl tree
check_eq "and is the same process" "$(c systemctl show -P MainPID memacctd.service)" "$pid0"
printf '[access]\nread = all\n' | c tee /etc/memacctd/memacctd.conf >/dev/null

# ---- SIGKILL: Restart= brings it back ----

check_run "systemctl kill -s KILL memacctd" 0 c systemctl kill -s KILL memacctd
restarted() {
        local state pid

        state=$(c systemctl show -P ActiveState memacctd.service)
        pid=$(c systemctl show -P MainPID memacctd.service)
        [[ $state == active && $pid != 0 && $pid != "$pid0" ]]
}
if wait_for 20 restarted; then
        pass
else
        fail "memacctd restarted by itself after SIGKILL" \
                "($(c systemctl show -p ActiveState -p SubState -p Result memacctd.service | tr '\n' ' '))"
fi
check_match "NRestarts counts it" "$(c systemctl show -P NRestarts memacctd.service)" '^[1-9]'
check_eq "the kept charge after the crash" "$(kept)" 1048576

# ---- stop, start, restart ----

check_run "systemctl stop memacctd" 0 c systemctl stop memacctd.service
check_eq "stopped" "$(c systemctl is-active memacctd.service || true)" inactive
check_run "systemctl start memacctd" 0 c systemctl start memacctd.service
check_eq "started" "$(c systemctl is-active memacctd.service || true)" active
pid1=$(c systemctl show -P MainPID memacctd.service)
check_run "systemctl restart memacctd" 0 c systemctl restart memacctd.service
check_eq "restarted" "$(c systemctl is-active memacctd.service || true)" active
pid2=$(c systemctl show -P MainPID memacctd.service)
if [[ $pid2 != "$pid1" && $pid2 != 0 ]]; then pass; else fail "restart makes a new process ($pid1, $pid2)"; fi
check_eq "the kept charge after stop, start and restart" "$(kept)" 1048576

# ---- bus activation ----

# The socket too: only the bus may start the service now.
c systemctl stop memacctd.service memacctd.socket
check_eq "stopped for bus activation" "$(c systemctl is-active memacctd.service || true)" inactive
check_run "busctl call org.memacct1 ... GetInfo with the service stopped" 0 \
        c busctl call org.memacct1 /org/memacct1 org.memacct1.Manager GetInfo
check_match "GetInfo answers" "$OUT" '^sttuusstt "memacctd '
wait_for 10 service_active || true
check_eq "the bus started memacctd.service" "$(c systemctl is-active memacctd.service || true)" active
check_match "bus activation started it" \
        "$(c journalctl -b -u dbus.service -o cat --no-pager)" \
        "Activating via systemd: service name='org\\.memacct1'"

# ---- a user without privilege, no options ----

check_run "nobody: memacctctl tree" 0 as_nobody memacctctl tree
check_match "nobody sees /x charged" "$OUT" '^  x +1048576 '
check_run "nobody: memacctctl --bus tree" 0 as_nobody memacctctl --bus tree
check_match "nobody sees /x charged over the bus" "$OUT" '^  x +1048576 '
run as_nobody memacctctl create /nobody
if [[ $RC != 0 ]]; then pass; else fail "nobody may not create a group under /"; fi

# ---- metrics from outside the service, and a real Prometheus ----

# memacctd-metrics.socket is opt-in: started, the service gets its TCP
# listener at its next start, and keeps PrivateNetwork=yes.
check_run "systemctl start memacctd-metrics.socket" 0 c systemctl start memacctd-metrics.socket
# The checks above started it more often than StartLimitBurst= allows in
# its interval: the count starts afresh.
c systemctl reset-failed memacctd.service >/dev/null 2>&1 || true
check_run "systemctl restart memacctd.service (it takes the listener)" 0 c systemctl restart memacctd.service
check_eq "the service keeps its private network" "$(c systemctl show -P PrivateNetwork memacctd.service)" yes
# scrape URL: the answer, fetched inside the container but outside the
# service (the container's loopback, where the socket unit listens).
scrape() {
        c python3 -c 'import sys, urllib.request; sys.stdout.write(urllib.request.urlopen(sys.argv[1], timeout=5).read().decode())' "$1"
}
c memacctctl tree >/dev/null 2>&1 || true # a request to count
run scrape http://127.0.0.1:9464/metrics
check_eq "a scrape of 127.0.0.1:9464 from outside the service answers" "$RC" 0
check_match "with /x's usage" "$OUT" '^memacct_group_usage_bytes\{group="/x"[^}]*\} 1048576$'
check_match "and the daemon's own request counter" "$OUT" '^memacctd_requests_total\{'

if c test -x /usr/bin/prometheus; then
        c sh -c 'mkdir -p /run/prom && cat >/run/prom/prometheus.yml' <<'CONF'
global:
  scrape_interval: 1s
scrape_configs:
  - job_name: memacctd
    static_configs:
      - targets: ['127.0.0.1:9464']
CONF
        c sh -c '/usr/bin/prometheus --config.file=/run/prom/prometheus.yml --storage.tsdb.path=/run/prom/tsdb \
                --web.listen-address=127.0.0.1:9099 >/run/prom/log 2>&1 &'
        # promql EXPR: the first sample's value of EXPR, or nothing.
        promql() {
                c python3 -c 'import json, sys, urllib.parse, urllib.request
u = "http://127.0.0.1:9099/api/v1/query?query=" + urllib.parse.quote(sys.argv[1])
r = json.load(urllib.request.urlopen(u, timeout=5))["data"]["result"]
print(r[0]["value"][1] if r else "")' "$1" 2>/dev/null
        }
        x_usage() {
                [[ $(promql 'memacct_group_usage_bytes{group="/x"}') == 1048576 ]]
        }
        if wait_for 60 x_usage; then
                pass
        else
                fail "Prometheus in the container scraped /x's 1M within 60 s (log: $(c tail -n 5 /run/prom/log))"
        fi
        check_eq "the scrape target is up" "$(promql 'up{job="memacctd"}')" 1
        c sh -c 'kill $(pidof prometheus)' || true
else
        echo "SKIP: Prometheus under the shipped units: /usr/bin/prometheus missing (Debian package prometheus)"
fi

# ---- the units as systemd sees them ----

check_run "systemd-analyze verify memacctd.service memacctd.socket memacctd-metrics.socket" 0 \
        c systemd-analyze verify memacctd.service memacctd.socket memacctd-metrics.socket
check_eq "systemd-analyze verify says nothing" "$OUT$ERR" ""
run c systemd-analyze security --no-pager memacctd.service
exposure=$(grep -oE 'Overall exposure level for memacctd\.service: [0-9]+\.[0-9]+' <<<"$OUT" |
        grep -oE '[0-9]+\.[0-9]+$' || true)
echo "systemd-analyze security memacctd.service: exposure $exposure"
check_match "systemd-analyze security prints an exposure" "$exposure" '^[0-9]+\.[0-9]+$'
if [[ -n $exposure ]]; then
        if awk -v e="$exposure" 'BEGIN { exit !(e <= 1.0) }'; then
                pass
        else
                fail "exposure $exposure above 1.0"
        fi
fi

# ---- 4. shut down ----

c journalctl -b --no-pager -o short-monotonic -u memacctd.service -u memacctd.socket \
        -u dbus.service >>"$DAEMON_LOG" 2>&1 || true
shutdown_container
check_eq "the container powers off cleanly (systemd-nspawn status)" "$NSPAWN_RC" 0
NSPAWN_RC=
