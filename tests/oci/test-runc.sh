#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# The OCI hook under a real runtime: runc runs a busybox container whose
# hooks are those of the installed hooks.d files (data/oci, as podman and
# CRI-O would copy them into config.json), pointed at a private memacctd.
# Inside, `memacctctl hold auto 10M` must land in /containers/<id> by the
# placement rule the createRuntime hook added, and a second 8M must be
# refused by the 16M max of the annotation. From outside: the group holds
# 10M while the container runs, nothing once it has exited, and after
# runc delete (the poststop hook) neither the group nor its rule is left.
#
# The container's root is confined to its group (memacct(7), CONFINEMENT):
# inside, every operation that would reach outside the group, raise its
# own limits, force, place or import is refused, and those inside it are
# allowed; the matrix (operation, exit status, expected) is printed.
#
# A host that cannot run a trivial container at all (no cgroup access, no
# namespaces, ...) is a SKIP with runc's reason: that is not ours. Once a
# trivial container runs, every failure is a FAIL.
#
# Environment: MEMACCTD, MEMACCTCTL, OCI_HOOKS_D (the configured hooks.d
# files), RUNC and BUSYBOX (optional: runc and busybox from $PATH).

set -euo pipefail

skip() {
        echo "SKIP: $*"
        exit 77
}

RUNC=${RUNC:-$(command -v runc || true)}
BUSYBOX=${BUSYBOX:-$(command -v busybox || true)}
[[ -n $RUNC ]] || skip "no runc (Debian: apt-get install runc)"
[[ -n $BUSYBOX ]] || skip "no busybox (Debian: apt-get install busybox-static)"
[[ $(id -u) == 0 ]] || skip "not root: runc needs root for a container without a user namespace"
: "${OCI_HOOKS_D:?OCI_HOOKS_D must name the configured hooks.d files}"

# shellcheck source-path=SCRIPTDIR source=../lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

M=$((1024 * 1024))
ID=memacct-test-$$
RUNC_ROOT=$TMP/runc
BUNDLE=$TMP/bundle
ROOTFS=$BUNDLE/rootfs
OUTD=$TMP/out
mkdir -p "$RUNC_ROOT" "$ROOTFS" "$OUTD"

# The container is ours to remove, whatever happened.
cleanup_container() {
        "$RUNC" --root "$RUNC_ROOT" delete --force "$ID" >/dev/null 2>&1 || true
        "$RUNC" --root "$RUNC_ROOT" delete --force "$ID-probe" >/dev/null 2>&1 || true
}
on_exit cleanup_container

# ---- the rootfs: busybox and its applets, the host's libraries for memacctctl ----

mkdir -p "$ROOTFS"/{bin,proc,sys,dev,tmp,out,usr/lib,run/memacct,opt/memacct/bin,opt/memacct/lib}
cp "$BUSYBOX" "$ROOTFS/bin/busybox"
# In a chroot, so that the links name /bin/busybox of the rootfs.
chroot "$ROOTFS" /bin/busybox --install -s /bin
[[ -e $ROOTFS/bin/sh ]] || fail "busybox --install made /bin/sh"
# memacctctl is dynamically linked: the host's /usr/lib (and /usr/lib64,
# where the loader is) are bound read-only, /lib and /lib64 point there as
# on the host's merged /usr.
ln -s usr/lib "$ROOTFS/lib"
if [[ -d /usr/lib64 ]]; then
        mkdir -p "$ROOTFS/usr/lib64"
        ln -s usr/lib64 "$ROOTFS/lib64"
fi
# The directory of the libmemacct.so that MEMACCTCTL loads (the build's).
LIBDIR=$(ldd "$MEMACCTCTL" | sed -n 's|^\s*libmemacct\.so\.[0-9]* => \(.*\)/libmemacct\.so.*|\1|p')
check_match "ldd finds the libmemacct.so of memacctctl" "$LIBDIR" '^/'

# ---- config.json: runc spec, edited ----

(cd "$BUNDLE" && "$RUNC" spec)

# configure SCRIPT [HOOKS|PROBE]: process sh -c SCRIPT; but for PROBE, the
# bind mounts, the annotation, and with HOOKS the hooks of the hooks.d files.
configure() {
        "$PY" -I -S - "$BUNDLE/config.json" "$1" "${2:-}" "$MEMACCTCTL" "$LIBDIR" "$TMP/run" \
                "$OUTD" "$OCI_HOOKS_D" "$SOCK" <<'EOF'
import json, os, re, sys

config, script, hooks, ctl, libdir, rundir, out, hooks_d, sock = sys.argv[1:]
with open(config) as f:
    c = json.load(f)
c["process"]["terminal"] = False
c["process"]["args"] = ["sh", "-c", script]
c["process"]["env"] = ["PATH=/bin:/sbin:/usr/bin", "LD_LIBRARY_PATH=/opt/memacct/lib"]
if hooks == "probe":
    # Only what runc spec made: whether this host runs containers at all.
    with open(config, "w") as f:
        json.dump(c, f, indent=1)
    sys.exit(0)
binds = [(ctl, "/opt/memacct/bin/memacctctl", "ro"), (libdir, "/opt/memacct/lib", "ro"),
         ("/usr/lib", "/usr/lib", "ro"), (rundir, "/run/memacct", "ro"), (out, "/out", "rw")]
if os.path.isdir("/usr/lib64"):
    binds.append(("/usr/lib64", "/usr/lib64", "ro"))
for src, dst, mode in binds:
    c["mounts"].append({"destination": dst, "type": "bind", "source": src,
                        "options": ["rbind", mode]})
c["annotations"] = {"org.memacct.max": "16M"}
c.pop("hooks", None)
if hooks == "hooks":
    # What podman does with a hooks.d file: its "hook" under each of its
    # "stages", when its "when" matches the container's annotations.
    c["hooks"] = {}
    for name in sorted(n for n in os.listdir(hooks_d) if n.endswith(".json")):
        with open(os.path.join(hooks_d, name)) as f:
            h = json.load(f)
        assert h["version"] == "1.0.0", name
        when = h["when"]
        if not when.get("always") and not any(
                re.search(k, ak) and re.search(v, av)
                for k, v in when.get("annotations", {}).items()
                for ak, av in c["annotations"].items()):
            continue
        hook = dict(h["hook"])
        hook["path"] = ctl  # the build's, not the installed one
        hook["args"] = hook["args"] + ["--socket", sock]
        for stage in h["stages"]:
            c["hooks"].setdefault(stage, []).append(hook)
with open(config, "w") as f:
    json.dump(c, f, indent=1)
EOF
}

# ---- can this host run a container at all? ----

configure 'echo probe-ran' probe
if ! "$RUNC" --root "$RUNC_ROOT" run --bundle "$BUNDLE" "$ID-probe" \
        </dev/null >"$TMP/probe.log" 2>&1; then
        reason=$(grep -v '^\s*$' "$TMP/probe.log" | tail -n 3 | tr '\n' ' ')
        cleanup_container
        # Not ours: the runtime cannot run a container without any hook.
        skip_test "runc cannot run a container here: $reason"
fi
check_eq "a container without hooks runs" "$(cat "$TMP/probe.log")" probe-ran

# ---- the container with the hooks ----

check_start_daemon || exit 1
check_run "a group outside the container" 0 ctl create /other max=32M

CTL_IN='/opt/memacct/bin/memacctctl --socket /run/memacct/memacctd.sock'
configure "
$CTL_IN hold auto 10M >/out/hold.out 2>&1 &
i=0
until grep -q '^holding' /out/hold.out; do
        i=\$((i + 1)); [ \$i -lt 200 ] || { echo timeout >/out/hold.fail; exit 3; }
        sleep 0.05
done
# 10M held of the 16M max: 8M more must be refused. timeout ends it if not.
timeout 10 $CTL_IN hold auto 8M >/out/over.out 2>&1
echo \$? >/out/over.status
# What the container's root may do: each operation's exit status.
G=/containers/$ID
m() { name=\$1; shift; $CTL_IN \"\$@\" >>/out/matrix.log 2>&1; echo \"\$name \$?\" >>/out/matrix; }
m raise-own-max set \$G max=64G
m lower-own-max set \$G max=1M
m set-other-max set /other max=1
m create-outside create /evil
m create-inside create \$G/sub max=4M
m set-inside set \$G/sub max=2M
m charge-inside charge \$G/sub 4K
m uncharge-inside uncharge \$G/sub 4K
m charge-outside charge /other 4K
m force-max-inside set \$G/sub max=1 --force
m force-max-own set \$G max=1 --force
m give-owner set \$G/sub owner=4242
m remove-own remove \$G
m rule-add rule add / \$G
m rule-remove rule remove /
m import import-cgroups
m show-other show /other
m show-root show /
m show-own show \$G
m reset-own-peak reset-peak \$G
m remove-inside remove \$G/sub
echo done >>/out/matrix
# Until the test has looked; then out, the holder still holding (the
# runtime kills it with the container).
i=0
until [ -e /out/release ]; do
        i=\$((i + 1)); [ \$i -lt 600 ] || exit 4
        sleep 0.05
done
exit 0
" hooks
check_eq "the hooks.d files give a createRuntime and a poststop hook" \
        "$(jget '" ".join(sorted(d["hooks"]))' <"$BUNDLE/config.json")" "createRuntime poststop"

GROUP=/containers/$ID
if "$RUNC" --root "$RUNC_ROOT" run --detach --bundle "$BUNDLE" "$ID" </dev/null >"$TMP/run.log" 2>&1; then
        pass
else
        fail "runc run --detach $ID: $(cat "$TMP/run.log")"
        exit 1 # nothing after this can hold
fi
check_eq "the group has the annotation's max" "$(field "$GROUP" 'd["max"]')" $((16 * M))
check_eq "its placement rule is there, and confines" \
        "$(ctl --json rule list | jget '[[r["group"], r["confine"]] for r in d]')" "[[\"$GROUP\", true]]"

container_holds() {
        file_has "$OUTD/hold.out" '^holding'
}
if wait_for 20 container_holds; then
        pass
else
        fail "the container's hold auto 10M: $(cat "$OUTD/hold.out" "$OUTD/hold.fail" 2>&1)"
fi
wait_for 20 test -e "$OUTD/over.status" || true
# The container's matrix below charges and uncharges inside the group:
# its figures are looked at once it is done.
wait_for 30 file_has "$OUTD/matrix" '^done' || true
check_eq "the container's group holds its 10M" "$(current "$GROUP")" $((10 * M))
check_eq "and so does the prefix group" "$(current /containers)" $((10 * M))
check_eq "the over-max hold in the container exits 1 (its output: $(cat "$OUTD/over.out" 2>&1))" \
        "$(cat "$OUTD/over.status" 2>&1)" 1
check_match "the over-max hold was refused by the max" "$(cat "$OUTD/over.out" 2>&1)" \
        "hold refused: auto: limit exceeded \\(max of $GROUP\\)"
check_eq "the refused 8M left nothing behind" "$(current "$GROUP")" $((10 * M))

# ---- what the container's root may do: the confinement matrix ----

# operation, expected exit status (0 allowed, 1 refused)
EXPECTED='raise-own-max 1
lower-own-max 1
set-other-max 1
create-outside 1
create-inside 0
set-inside 0
charge-inside 0
uncharge-inside 0
charge-outside 1
force-max-inside 0
force-max-own 1
give-owner 1
remove-own 1
rule-add 1
rule-remove 1
import 1
show-other 1
show-root 1
show-own 0
reset-own-peak 0
remove-inside 0'
printf '%-16s %-8s %s\n' operation got expected
while read -r op want; do
        got=$(sed -n "s/^$op //p" "$OUTD/matrix")
        printf '%-16s %-8s %s\n' "$op" "${got:-?}" "$want"
        check_eq "inside the container, $op exits $want" "$got" "$want"
done <<<"$EXPECTED"
check_eq "the container could not raise its max" "$(field "$GROUP" 'd["max"]')" $((16 * M))
check_eq "nor touch /other" "$(field /other 'd["max"]')" $((32 * M))
check_eq "nor create outside" "$(ctl show /evil >/dev/null 2>&1 && echo yes || echo no)" no
check_eq "the rule is still the hook's alone" "$(ctl --json rule list | jget 'len(d)')" 1
check_match "a refusal names the group" "$(cat "$OUTD/matrix.log")" "$GROUP: permission denied"

# ---- the container exits: its session ends with it ----

: >"$OUTD/release"
stopped() {
        "$RUNC" --root "$RUNC_ROOT" state "$ID" 2>/dev/null | jget 'd["status"]' | grep -qx stopped
}
if wait_for 30 stopped; then pass; else fail "the container stops"; fi
check_current_soon "after the container exits its charge is gone" "$GROUP" 0
check_current_soon "and from the prefix group" /containers 0
check_exists() {
        if ctl show "$2" >/dev/null 2>&1; then pass; else fail "$1: $2 does not exist"; fi
}
check_exists "before poststop the group is still there" "$GROUP"

# ---- runc delete: the poststop hook removes the rule and the group ----

check_run "runc delete $ID" 0 "$RUNC" --root "$RUNC_ROOT" delete "$ID"
if ctl show "$GROUP" >/dev/null 2>&1; then
        fail "after poststop $GROUP is gone (daemon log: $(tail -n 5 "$DAEMON_LOG"))"
else
        pass
fi
check_eq "after poststop no rule is left" "$(ctl --json rule list | jget 'len(d)')" 0
check_eq "the prefix group stays, empty" "$(current /containers)" 0

check_stop_daemon
