#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# The CDI spec of `memacctctl cdi generate` under Debian's podman (4.3:
# CDI 0.5, spec directories /etc/cdi and /var/run/cdi only, no
# --cdi-spec-dir): a container run with --device memacct.io/gpu=all gets
# the interposer without a change to its image. The spec goes to
# /var/run/cdi under a name of this run's (that directory outranks
# /etc/cdi, so an installed spec does not interfere), and is removed at
# the end; a lock keeps two runs of this test from seeing each other's.
#
# The image is a directory assembled here (podman --rootfs): busybox, and
# the libraries that the stand-in CUDA driver and cuda-prog need, copied
# from the host as ldd finds them, never libmemacct or what it needs: the
# interposer, which only the spec brings, carries what it needs. Inside,
# the environment has LD_PRELOAD (and keeps the LD_LIBRARY_PATH that
# podman -e set), the interposer, its config and the daemon's socket are
# there, and the loader finds every library. Then, with the OCI hooks of the hooks.d files and the
# annotation org.memacct.<GPU 0's region>.max=1G, cuda-prog allocates on
# the stand-in GPU: 600M is charged to the container's group, 2G is
# refused with CUDA_ERROR_OUT_OF_MEMORY and counted as a max event there;
# the max lowered from outside (memacctctl set) while the container runs
# refuses the next allocation that no longer fits.
#
# SKIP without podman, runc or busybox, as non-root, where podman cannot
# run a trivial container, or where another spec of memacct.io/gpu sits
# in /var/run/cdi; the CUDA part alone is skipped for a build with
# sanitizers (their runtime must be preloaded first, and the spec's
# LD_PRELOAD replaces the container's). Once a container runs, every
# failure is a FAIL.
#
# Environment: MEMACCTD, MEMACCTCTL, OCI_HOOKS_D, INTERPOSER, CUDA_PROG,
# STANDIN_LIBCUDA (the stand-in's libcuda.so.1), PODMAN, RUNC and BUSYBOX
# (optional: from $PATH).

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
[[ $(id -u) == 0 ]] || skip "not root: only root writes /var/run/cdi, the spec directory podman 4.3 reads"
: "${OCI_HOOKS_D:?OCI_HOOKS_D must name the configured hooks.d files}"
: "${INTERPOSER:?INTERPOSER must name the libmemacct-cuda.so of the build}"
: "${CUDA_PROG:?CUDA_PROG must name cuda-prog}"
: "${STANDIN_LIBCUDA:?STANDIN_LIBCUDA must name the stand-in libcuda.so.1}"

# shellcheck source-path=SCRIPTDIR source=../lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

M=$((1024 * 1024))
GPU0=nvidia/0000:3b:00.0/vidmem
ROOTFS=$TMP/rootfs
OUTD=$TMP/out
HOOKS=$TMP/hooks.d
CDI_DIR=/var/run/cdi
SPEC=$CDI_DIR/memacct-test-$$.json
mkdir -p "$ROOTFS" "$OUTD" "$HOOKS" "$TMP/run" "$CDI_DIR"

# One run at a time: two specs of one device in one directory are a
# conflict that makes podman refuse both.
exec {LOCK_FD}>/run/lock/memacct-test-cdi-podman.lock
flock -w 120 "$LOCK_FD" || skip_test "another run of this test holds /run/lock/memacct-test-cdi-podman.lock"
for f in "$CDI_DIR"/*.json "$CDI_DIR"/*.yaml; do
        [[ -e $f ]] || continue
        if grep -q 'memacct\.io/gpu' "$f"; then
                skip_test "$f defines memacct.io/gpu already: a second spec in that directory conflicts"
        fi
done

lim() { local h; h=$(ulimit "-H$1"); [[ $h == unlimited || $h -gt 4096 ]] && h=4096; echo "$h:$h"; }
LIMITS=(--ulimit "nofile=$(lim n)" --ulimit "nproc=$(lim u)")
PM=("$PODMAN" --root "$TMP/storage" --runroot "$TMP/runroot" --storage-driver vfs --runtime "$RUNC"
        --cgroup-manager cgroupfs --events-backend file --hooks-dir "$HOOKS")
pm() {
        "${PM[@]}" "$@"
}
CID=
cleanup() {
        rm -f "$SPEC"
        [[ -z $CID ]] || pm rm --force "$CID" >/dev/null 2>&1 || true
        findmnt -rn -o TARGET | grep "^$TMP/" | sort -r | xargs -r umount -l 2>/dev/null || true
}
on_exit cleanup

# ---- the image: busybox, CUDA's stand-in, the libraries they need ----

mkdir -p "$ROOTFS"/{bin,proc,sys,dev,tmp,out,opt/cuda}
cp "$BUSYBOX" "$ROOTFS/bin/busybox"
chroot "$ROOTFS" /bin/busybox --install -s /bin
cp "$CUDA_PROG" "$ROOTFS/opt/cuda/cuda-prog"
cp -L "$STANDIN_LIBCUDA" "$ROOTFS/opt/cuda/libcuda.so.1"
# Every library at its host path (the loader's own included) that the
# program and the driver need: the interposer needs nothing more (it
# carries its libmemacct), which the image must not have.
for f in "$CUDA_PROG" "$STANDIN_LIBCUDA"; do
        LD_LIBRARY_PATH=$(dirname "$STANDIN_LIBCUDA") ldd "$f"
done | sed -n 's/^\s*\(\S* => \)\?\(\/\S*\) (0x.*/\2/p' | sort -u | while read -r lib; do
        [[ $(basename "$lib") == libmemacct.so.0 ]] || cp -L --parents "$lib" "$ROOTFS"
done
check_eq "the image has no libmemacct" "$(find "$ROOTFS" -name 'libmemacct*' | wc -l)" 0
# The loader lists what it would load, LD_PRELOAD included (busybox has no ldd).
LOADER=$(ldd "$CUDA_PROG" | sed -n 's/^\s*\(\/\S*ld-linux\S*\) (0x.*/\1/p')
check_match "the loader of the image" "$LOADER" '^/'
SANITIZED=$(ldd "$INTERPOSER" | grep -c 'lib[at]san\|libubsan' || true)

# ---- can podman run a container here at all? ----

RC=0
pm run --rm --network none "${LIMITS[@]}" --rootfs "$ROOTFS" \
        sh -c 'echo probe-ran' </dev/null >"$TMP/probe.log" 2>&1 || RC=$?
if [[ $RC != 0 ]]; then
        skip_test "podman cannot run a container here: $(grep -v '^\s*$' "$TMP/probe.log" | tail -n 3 | tr '\n' ' ')"
fi
check_eq "a container without the device runs" "$(cat "$TMP/probe.log")" probe-ran

# ---- the spec ----

CONF=$TMP/cuda.conf
printf '[interposer]\nsocket = %s\non-unreachable = deny\n' "$SOCK" >"$CONF"
chmod 0644 "$CONF"
check_run "cdi generate into $CDI_DIR" 0 "$MEMACCTCTL" cdi generate --interposer "$INTERPOSER" \
        --config "$CONF" --output "$SPEC"

check_start_daemon || exit 1
check_run "GPU 0's region, as the stand-in's capacity" 0 ctl region add "$GPU0" capacity=4G

# ---- what the container sees ----

RC=0
pm run --rm --network none "${LIMITS[@]}" --device memacct.io/gpu=all -e LD_LIBRARY_PATH=/opt/cuda \
        --rootfs "$ROOTFS" sh -c "
env | grep -E '^(LD_PRELOAD|LD_LIBRARY_PATH|MEMACCT_CUDA_CONFIG)=' | sort
ls /usr/lib/memacct
test -S $SOCK && echo socket-there
cat /etc/memacct/cuda.conf
ls -ln /etc/memacct/cuda.conf | awk '{ print \$1, \$3 }'
LD_LIBRARY_PATH=/opt/cuda $LOADER --list /opt/cuda/cuda-prog 2>&1 | grep -c 'not found'
LD_LIBRARY_PATH=/opt/cuda $LOADER --list /opt/cuda/cuda-prog 2>&1 | grep -E 'libmemacct|libcuda' | sed 's/ (0x.*//;s/^\\s*//'
" </dev/null >"$TMP/look.log" 2>&1 || RC=$?
check_eq "a container with --device memacct.io/gpu=all runs ($(cat "$TMP/look.log"))" "$RC" 0
check_eq "inside: the environment" "$(sed -n 1,3p "$TMP/look.log")" \
        "LD_LIBRARY_PATH=/opt/cuda
LD_PRELOAD=/usr/lib/memacct/libmemacct-cuda.so
MEMACCT_CUDA_CONFIG=/etc/memacct/cuda.conf"
check_eq "inside: the interposer alone" "$(sed -n 4p "$TMP/look.log")" libmemacct-cuda.so
check_eq "inside: the daemon's socket" "$(sed -n 5p "$TMP/look.log")" socket-there
check_eq "inside: the config, root's" "$(sed -n 6,9p "$TMP/look.log")" "$(cat "$CONF")
-rw-r--r-- 0"
check_eq "inside: the loader takes the preloaded interposer and the image's libcuda" \
        "$(sed -n '11,$p' "$TMP/look.log" | sort)" \
        "/usr/lib/memacct/libmemacct-cuda.so
libcuda.so.1 => /opt/cuda/libcuda.so.1"
check_eq "inside: no library the loader cannot find" "$(sed -n 10p "$TMP/look.log")" 0

# ---- GPU memory accounted in the container's group ----

# cuda_part: the container's allocations, charged, refused and limited.
cuda_part() {
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

        P=/opt/cuda/cuda-prog
        SCRIPT="
$P alloc 600M --hold 0 >/out/fit.out 2>&1; echo \$? >/out/fit.status
$P alloc 2G >/out/over.out 2>&1; echo \$? >/out/over.status
$P alloc 100M --hold 600 >/out/hold.out 2>&1 &
i=0
until grep -q '^allocated' /out/hold.out; do
        i=\$((i + 1)); [ \$i -lt 400 ] || { echo timeout >/out/hold.fail; exit 3; }
        sleep 0.05
done
echo ready >/out/ready
until [ -e /out/lowered ]; do sleep 0.05; done
$P alloc 200M >/out/after.out 2>&1; echo \$? >/out/after.status
$P alloc 100M >/out/small.out 2>&1; echo \$? >/out/small.status
echo done >/out/done
until [ -e /out/release ]; do sleep 0.05; done
"
        RC=0
        pm run --detach --cidfile "$TMP/cid" --network none "${LIMITS[@]}" --device memacct.io/gpu=all \
                --annotation "org.memacct.$GPU0.max=1G" -e LD_LIBRARY_PATH=/opt/cuda -v "$OUTD:/out" \
                --rootfs "$ROOTFS" sh -c "$SCRIPT" </dev/null >"$TMP/run.log" 2>&1 || RC=$?
        check_eq "podman run --detach with the device and the annotation ($(cat "$TMP/run.log"))" "$RC" 0
        [[ $RC == 0 ]] || exit 1
        CID=$(cat "$TMP/cid")
        GROUP=/containers/$CID
        # rfield KEY: KEY of the container's group in GPU 0's region.
        rfield() {
                field "$GROUP" "[r[\"$1\"] for r in d.get(\"regions\", []) if r[\"name\"] == \"$GPU0\"][0]"
        }
        check_eq "the hook set the annotation's max in GPU 0's region" "$(rfield max)" $((1024 * M))

        if wait_for 60 test -e "$OUTD/ready"; then
                pass
        else
                fail "the container's allocations: $(cat "$OUTD"/*.out "$OUTD/hold.fail" 2>&1)"
        fi
        check_eq "600M fits under 1G ($(cat "$OUTD/fit.out" 2>&1))" "$(cat "$OUTD/fit.status" 2>&1)" 0
        check_eq "2G is refused ($(cat "$OUTD/over.out" 2>&1))" "$(cat "$OUTD/over.status" 2>&1)" 1
        check_match "with CUDA_ERROR_OUT_OF_MEMORY" "$(cat "$OUTD/over.out" 2>&1)" \
                '^refused CUDA_ERROR_OUT_OF_MEMORY step='
        check_eq "the container's group counts the max event" "$(rfield events | jget 'd["max"] >= 1')" True
        # At least what is held, less than the 600M freed (the charge stock may
        # hold a little ahead).
        check_eq "the held 100M is charged to the container's group ($(rfield current))" \
                "$(rfield current | jget "$((100 * M)) <= d < $((600 * M))")" True
        check_eq "and its peak saw the 600M ($(rfield peak))" "$(rfield peak | jget "d >= $((600 * M))")" True

        # The group's limits are the daemon's: lowered while the container runs,
        # the next allocation meets the new max.
        check_run "lower the max from outside" 0 ctl set "$GROUP" "$GPU0.max=256M"
        : >"$OUTD/lowered"
        if wait_for 60 test -e "$OUTD/done"; then pass; else fail "the allocations after the change end"; fi
        check_eq "200M more no longer fits under 256M ($(cat "$OUTD/after.out" 2>&1))" \
                "$(cat "$OUTD/after.status" 2>&1)" 1
        check_match "refused the same way" "$(cat "$OUTD/after.out" 2>&1)" '^refused CUDA_ERROR_OUT_OF_MEMORY'
        check_eq "100M still does ($(cat "$OUTD/small.out" 2>&1))" "$(cat "$OUTD/small.status" 2>&1)" 0

        : >"$OUTD/release"
        RC=0
        timeout 60 "${PM[@]}" wait "$CID" >"$TMP/wait.out" 2>&1 || RC=$?
        check_eq "the container exits 0 ($(cat "$TMP/wait.out"))" "$RC:$(tail -n 1 "$TMP/wait.out")" 0:0
        gone() { ! ctl show "$GROUP" >/dev/null 2>&1; }
        if wait_for 20 gone; then pass; else fail "after poststop $GROUP is gone ($(tail -n 5 "$DAEMON_LOG"))"; fi
        check_run "podman rm" 0 pm rm "$CID"
        CID=
}

if [[ $SANITIZED == 0 ]]; then
        cuda_part
else
        echo "SKIP (the CUDA part): the interposer is built with sanitizers, whose runtime must be preloaded first"
fi

check_stop_daemon
