#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# The OCI hook under podman, the runtime most users of a hooks.d file run:
# Debian's podman (runc, the cgroupfs manager, private storage, --rootfs
# from a busybox tree built here, no image registry) reads the hooks.d
# files of the build (data/oci) from --hooks-dir, each pointed at the
# build's memacctctl and a private memacctd. Podman, not the test, decides
# from the "when" annotations which hooks run. Inside, `memacctctl hold
# auto 10M` lands in /containers/<id> under the annotated 16M max, a
# further 8M is refused, and the container's root cannot raise its own
# max. From outside: the group and its figures while it runs, nothing
# left once it has exited (podman runs poststop at its cleanup).
#
# SKIP without podman, runc or busybox, as non-root, or where podman
# cannot run a trivial container at all (not ours); once one runs, every
# failure is a FAIL.
#
# Environment: MEMACCTD, MEMACCTCTL, OCI_HOOKS_D (the configured hooks.d
# files), PODMAN, RUNC and BUSYBOX (optional: from $PATH).

set -euo pipefail

skip() {
        echo "SKIP: $*"
        exit 77
}

PODMAN=${PODMAN:-$(command -v podman || true)}
RUNC=${RUNC:-$(command -v runc || true)}
BUSYBOX=${BUSYBOX:-$(command -v busybox || true)}
[[ -n $PODMAN ]] || skip "no podman (Debian: apt-get install podman)"
[[ -n $RUNC ]] || skip "no runc (Debian: apt-get install runc)"
[[ -n $BUSYBOX ]] || skip "no busybox (Debian: apt-get install busybox-static)"
[[ $(id -u) == 0 ]] || skip "not root: a rootful podman is what reads the system's hooks.d"
: "${OCI_HOOKS_D:?OCI_HOOKS_D must name the configured hooks.d files}"

# shellcheck source-path=SCRIPTDIR source=../lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

M=$((1024 * 1024))
ROOTFS=$TMP/rootfs
OUTD=$TMP/out
HOOKS=$TMP/hooks.d
mkdir -p "$ROOTFS" "$OUTD" "$HOOKS"
# Private storage and state: nothing of the host's podman is touched.
# The vfs driver mounts nothing, so nothing is left mounted under $TMP.
# File and process limits of 4096 (or the host's hard ones if lower):
# podman's defaults (2^20 files, 2^22 processes) cannot be set by a root
# without CAP_SYS_RESOURCE over the hard limits (in a container, say).
lim() { local h; h=$(ulimit "-H$1"); [[ $h == unlimited || $h -gt 4096 ]] && h=4096; echo "$h:$h"; }
LIMITS=(--ulimit "nofile=$(lim n)" --ulimit "nproc=$(lim u)")
PM=("$PODMAN" --root "$TMP/storage" --runroot "$TMP/runroot" --storage-driver vfs --runtime "$RUNC"
        --cgroup-manager cgroupfs --events-backend file --hooks-dir "$HOOKS")
pm() {
        "${PM[@]}" "$@"
}
CID=
cleanup_container() {
        [[ -z $CID ]] || pm rm --force "$CID" >/dev/null 2>&1 || true
        # Whatever podman still has mounted there, before $TMP goes.
        findmnt -rn -o TARGET | grep "^$TMP/" | sort -r | xargs -r umount -l 2>/dev/null || true
}
on_exit cleanup_container

# ---- the rootfs: busybox, the host's libraries for memacctctl ----

mkdir -p "$ROOTFS"/{bin,proc,sys,dev,tmp,out,usr/lib,run/memacct,opt/memacct/bin,opt/memacct/lib}
cp "$BUSYBOX" "$ROOTFS/bin/busybox"
chroot "$ROOTFS" /bin/busybox --install -s /bin
ln -s usr/lib "$ROOTFS/lib"
VOLUMES=(-v /usr/lib:/usr/lib:ro)
if [[ -d /usr/lib64 ]]; then
        mkdir -p "$ROOTFS/usr/lib64"
        ln -s usr/lib64 "$ROOTFS/lib64"
        VOLUMES+=(-v /usr/lib64:/usr/lib64:ro)
fi
LIBDIR=$(ldd "$MEMACCTCTL" | sed -n 's|^\s*libmemacct\.so\.[0-9]* => \(.*\)/libmemacct\.so.*|\1|p')
check_match "ldd finds the libmemacct.so of memacctctl" "$LIBDIR" '^/'
VOLUMES+=(-v "$MEMACCTCTL:/opt/memacct/bin/memacctctl:ro" -v "$LIBDIR:/opt/memacct/lib:ro"
        -v "$TMP/run:/run/memacct:ro" -v "$OUTD:/out")

# ---- can podman run a container here at all? ----

RC=0
pm run --rm --network none "${LIMITS[@]}" --rootfs "$ROOTFS" \
        sh -c 'echo probe-ran' </dev/null >"$TMP/probe.log" 2>&1 || RC=$?
if [[ $RC != 0 ]]; then
        skip_test "podman cannot run a container here: $(grep -v '^\s*$' "$TMP/probe.log" | tail -n 3 | tr '\n' ' ')"
fi
check_eq "a container without hooks runs" "$(cat "$TMP/probe.log")" probe-ran

# ---- the hooks.d files, as installed but for the binary and the socket ----

for f in "$OCI_HOOKS_D"/*.json; do
        "$PY" -I -S - "$f" "$HOOKS/$(basename "$f")" "$MEMACCTCTL" "$SOCK" <<'PYEOF'
import json, sys
src, dst, ctl, sock = sys.argv[1:]
h = json.load(open(src))
h["hook"]["path"] = ctl
h["hook"]["args"] += ["--socket", sock]
json.dump(h, open(dst, "w"), indent=1)
PYEOF
done
check_eq "two hooks.d files" "$(ls "$HOOKS" | wc -l)" 2

check_start_daemon || exit 1

CTL_IN='/opt/memacct/bin/memacctctl --socket /run/memacct/memacctd.sock'
SCRIPT="
$CTL_IN hold auto 10M >/out/hold.out 2>&1 &
i=0
until grep -q '^holding' /out/hold.out; do
        i=\$((i + 1)); [ \$i -lt 200 ] || { echo timeout >/out/hold.fail; exit 3; }
        sleep 0.05
done
timeout 10 $CTL_IN hold auto 8M >/out/over.out 2>&1
echo \$? >/out/over.status
G=\$(sed -n 's/^holding .* in //p' /out/hold.out)
$CTL_IN set \"\$G\" max=64G >/out/raise.out 2>&1
echo \$? >/out/raise.status
$CTL_IN show / >/dev/null 2>&1
echo \$? >/out/show-root.status
echo done >/out/done
i=0
until [ -e /out/release ]; do
        i=\$((i + 1)); [ \$i -lt 600 ] || exit 4
        sleep 0.05
done
"
RC=0
pm run --detach --cidfile "$TMP/cid" --network none "${LIMITS[@]}" \
        --annotation org.memacct.max=16M "${VOLUMES[@]}" \
        -e LD_LIBRARY_PATH=/opt/memacct/lib --rootfs "$ROOTFS" sh -c "$SCRIPT" \
        </dev/null >"$TMP/run.log" 2>&1 || RC=$?
check_eq "podman run --detach with the annotation ($(cat "$TMP/run.log"))" "$RC" 0
[[ $RC == 0 ]] || exit 1
CID=$(cat "$TMP/cid")
GROUP=/containers/$CID
check_eq "the createRuntime hook made the group with the annotation's max" \
        "$(field "$GROUP" 'd["max"]')" $((16 * M))
check_eq "and a confining placement rule for it" \
        "$(ctl --json rule list | jget '[[r["group"], r["confine"]] for r in d]')" "[[\"$GROUP\", true]]"

if wait_for 30 test -e "$OUTD/done"; then
        pass
else
        fail "the container's script ends: $(cat "$OUTD"/*.out "$OUTD/hold.fail" 2>&1)"
fi
check_match "the hold inside is placed in the container's group" "$(cat "$OUTD/hold.out" 2>&1)" \
        "^holding 10M in $GROUP\$"
check_eq "the container's group holds its 10M" "$(current "$GROUP")" $((10 * M))
check_eq "the over-max hold exits 1 ($(cat "$OUTD/over.out" 2>&1))" "$(cat "$OUTD/over.status" 2>&1)" 1
check_match "refused by the annotated max" "$(cat "$OUTD/over.out" 2>&1)" \
        "limit exceeded \\(max of $GROUP\\)"
check_eq "the container's root cannot raise its max ($(cat "$OUTD/raise.out" 2>&1))" \
        "$(cat "$OUTD/raise.status" 2>&1)" 1
check_eq "nor read outside its group" "$(cat "$OUTD/show-root.status" 2>&1)" 1
check_eq "the max is still the annotation's" "$(field "$GROUP" 'd["max"]')" $((16 * M))

# ---- the container exits: podman's cleanup runs poststop ----

: >"$OUTD/release"
RC=0
timeout 60 "${PM[@]}" wait "$CID" >"$TMP/wait.out" 2>&1 || RC=$?
check_eq "the container exits 0 ($(cat "$TMP/wait.out"))" "$RC:$(tail -n 1 "$TMP/wait.out")" 0:0
gone() { ! ctl show "$GROUP" >/dev/null 2>&1; }
if wait_for 20 gone; then pass; else fail "after poststop $GROUP is gone ($(tail -n 5 "$DAEMON_LOG"))"; fi
check_eq "and no rule is left" "$(ctl --json rule list | jget 'len(d)')" 0
check_eq "nor any charge in the prefix group" "$(current /containers)" 0
check_run "podman rm" 0 pm rm "$CID"
CID=

check_stop_daemon
