#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# What any uid can do to memacctd through the system bus must not stop it
# or starve root: a private bus with the system bus's policy and default
# limits (bus-conf.sh system: 256 connections per uid, 512 match rules
# per connection), memacctd on it with 40,000 groups.
#
#  - GetManagedObjects: one message of every group's properties, past the
#    bus's message limit at 40,000 groups; refused above
#    BUS_MANAGED_OBJECTS_MAX (ResourceExhausted, naming ListGroupsPage),
#    once and in a loop that never reads, and the daemon stays small;
#  - two uids each holding as many idle peers as the bus lets them (256),
#    each known to memacctd by one call: 512 peers, which cost memacctd
#    one match rule each before and filled its 512;
#  - arguments of 30 MiB, from another uid, one call after the other;
#  - then root: its calls answer, the daemon still owns the name, its log
#    says nothing was lost.
# Root's latency over the bus and the socket is printed during each
# (figures, never asserted: the machine may be busy).

source "$(dirname "$0")/../lib.sh"

need dbus-daemon busctl setpriv
id daemon >/dev/null 2>&1 || skip_test "no user daemon for the second uid of peers"
need_root "the policy lets only root own org.memacct1, and the peers need other uids"
: "${MEMACCT_BUS_PEERS:?MEMACCT_BUS_PEERS must name the bus-peers program}"
GROUPS_N=40000

mkdir -p "$STATE"
"$PY" -I -S - "$STATE/state" "$GROUPS_N" <<'PY'
import sys
path, n = sys.argv[1], int(sys.argv[2])
body = "memacctd-state 1\ngroup / owner=0 max=max high=max low=0 min=0\n" + "".join(
    f"group /g{i:05d} owner=0 max=max high=max low=0 min=0\n" for i in range(n))
h = 0xcbf29ce484222325
for b in body.encode():
    h = ((h ^ b) * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
with open(path, "w") as f:
    f.write(body + f"end {n + 1} fnv1a64={h:016x}\n")
PY
: >"$TMP/memacctd.conf"
printf '[limits]\ngroups = 65536\n' >"$TMP/memacctd.conf"

start_bus || exit 1
check_start_daemon --bus "$BUS_ADDR" --config "$TMP/memacctd.conf" || exit 1
check_run "the daemon holds the tree" 0 ctl show /g39999

# latency LABEL: 40 of root's GetInfo over the bus and show / over the socket, p50 and p99 printed.
latency() {
        "$PY" -I -S - "$1" "$BUS_ADDR" "$MEMACCTCTL" "$SOCK" <<'PY'
import subprocess, sys, time
label, addr, ctl, sock = sys.argv[1:]
def timed(cmd):
    t = time.monotonic()
    r = subprocess.run(cmd, capture_output=True)
    return (time.monotonic() - t) * 1000, r.returncode
bus = [timed(["busctl", f"--address={addr}", "call", "org.memacct1", "/org/memacct1",
              "org.memacct1.Manager", "GetInfo"]) for _ in range(40)]
sock_ = [timed([ctl, "--socket", sock, "show", "/g00001"]) for _ in range(40)]
for name, v in (("bus", bus), ("socket", sock_)):
    ms = sorted(x for x, _ in v)
    bad = sum(rc != 0 for _, rc in v)
    print(f"root's {name} calls {label}: p50 {ms[len(ms) // 2]:.1f} ms, p99 {ms[-1]:.1f} ms, {bad} failed")
PY
}

rss_kib() {
        sed -n 's/^VmRSS:\s*\([0-9]*\) kB/\1/p' "/proc/$DAEMON_PID/status"
}

latency "at rest"
base_rss=$(rss_kib)

# ---- GetManagedObjects ----

gmo() {
        busctl --address="$BUS_ADDR" call org.memacct1 /org/memacct1 org.freedesktop.DBus.ObjectManager \
                GetManagedObjects "$@"
}
run gmo
check_eq "GetManagedObjects at $GROUPS_N groups is refused" "$RC" 1
check_match "saying why and what instead" "$ERR" "groups are more than one reply carries here .*ListGroupsPage"
check_run "the daemon still answers on the bus" 0 bctl call org.memacct1 /org/memacct1 org.memacct1.Manager GetInfo
# A caller that never reads, every 50 ms, while root works.
"$PY" -I -S - "$BUS_ADDR" >"$TMP/gmo-loop.out" 2>&1 <<'PY' &
import subprocess, sys, time
procs = []
for _ in range(40):
    procs.append(subprocess.Popen(["busctl", f"--address={sys.argv[1]}", "call", "org.memacct1", "/org/memacct1",
                                   "org.freedesktop.DBus.ObjectManager", "GetManagedObjects"],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
    time.sleep(0.05)
print("refused", sum(p.wait() != 0 for p in procs))
PY
loop=$!
latency "under a GetManagedObjects loop"
wait "$loop" || true
check_eq "every looped GetManagedObjects was refused" "$(cat "$TMP/gmo-loop.out")" "refused 40"
rss=$(rss_kib)
echo "VmRSS: $base_rss KiB at rest, $rss KiB after the loop"
check_eq "the daemon did not grow by more than 64 MiB" "$((rss - base_rss < 65536))" 1

# ---- arguments of 30 MiB, one after the other, from another uid ----

setpriv --reuid=65534 --regid=65534 --clear-groups "$MEMACCT_BUS_PEERS" --big "$BUS_ADDR" $((30 * 1024 * 1024)) 10 \
        >"$TMP/big.out" 2>&1 &
big=$!
latency "under 30 MiB arguments"
wait "$big" || true
echo "the 30 MiB calls: $(cat "$TMP/big.out")"
check_match "each 30 MiB argument is refused, not served" "$(cat "$TMP/big.out")" '^big [0-9]+'
check_run "root still calls over the bus" 0 bctl call org.memacct1 /org/memacct1 org.memacct1.Manager GetInfo
rss=$(rss_kib)
echo "VmRSS after the 30 MiB arguments: $rss KiB"

# ---- 512 idle peers from two uids ----

exec {peers_a}> >(setpriv --reuid=65534 --regid=65534 --clear-groups "$MEMACCT_BUS_PEERS" "$BUS_ADDR" 300 \
        >"$TMP/peers-a.out" 2>&1)
exec {peers_b}> >(setpriv --reuid="$(id -u daemon)" --regid="$(id -g daemon)" --clear-groups "$MEMACCT_BUS_PEERS" "$BUS_ADDR" 300 \
        >"$TMP/peers-b.out" 2>&1)
for f in a b; do
        wait_for 120 grep -q '^peers' "$TMP/peers-$f.out" || fail "the peers of $f are there: $(cat "$TMP/peers-$f.out")"
        cat "$TMP/peers-$f.out"
done
na=$(sed -n 's/^peers \([0-9]*\).*/\1/p' "$TMP/peers-a.out")
nb=$(sed -n 's/^peers \([0-9]*\).*/\1/p' "$TMP/peers-b.out")
echo "idle peers: $na of uid 65534 (nobody), $nb of uid $(id -u daemon) (daemon) (the bus's limit per uid stops them)"
check_eq "the two uids hold 500 peers or more" "$((na + nb >= 500))" 1
latency "with $((na + nb)) idle peers"
check_run "root calls over the bus after them" 0 bctl call org.memacct1 /org/memacct1 org.memacct1.Manager GetInfo
check_eq "the daemon still owns the name" "$(bctl status org.memacct1 2>/dev/null | sed -n 's/^PID=//p')" "$DAEMON_PID"
check_nomatch "its bus connection was never lost" "$(<"$DAEMON_LOG")" "Lost the connection"
exec {peers_a}>&- {peers_b}>&-
check_stop_daemon
stop_bus
