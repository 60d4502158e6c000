#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# The stand-in CUDA driver and NVML, as the interposer's tests will use
# them: the API tests of both (test-standin-driver, test-standin-lookup),
# then cuda-prog, linked with -lcuda, found through LD_LIBRARY_PATH, with
# the capacity set by $MEMACCT_STANDIN_CUDA_BYTES: the refusal past it,
# the pool's reserved bytes and trim, the VMM steps, an array's bytes,
# NVML's figures against the driver's, the barrier, and a forked and an
# exec'd child. Expected figures are computed here from the models.
#
# Environment (meson sets it): CUDA_PROG, STANDIN_DRIVER_TEST,
# STANDIN_LOOKUP_TEST, STANDIN_CUDA_DIR, STANDIN_NVML_DIR.

source "$(dirname "$0")/../lib.sh"

: "${CUDA_PROG:?}" "${STANDIN_DRIVER_TEST:?}" "${STANDIN_LOOKUP_TEST:?}"
: "${STANDIN_CUDA_DIR:?}" "${STANDIN_NVML_DIR:?}"
export LD_LIBRARY_PATH=$STANDIN_CUDA_DIR:$STANDIN_NVML_DIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
unset MEMACCT_STANDIN_CUDA_BYTES

MIB=$((1024 * 1024))
GIB=$((1024 * MIB))
GRANULE=$((2 * MIB))
round_up() { echo $(((($1) + $2 - 1) / $2 * $2)); }

# prog WHAT RC ARGS...: cuda-prog ARGS exits RC (OUT, ERR set).
prog() {
        local what=$1 rc=$2

        shift 2
        check_run "$what" "$rc" "$CUDA_PROG" "$@"
}

# ---- the API tests ----
check_run "the driver API test" 0 "$STANDIN_DRIVER_TEST"
((RC == 0)) || printf '%s\n%s\n' "$OUT" "$ERR" >&2
check_run "the lookup and NVML test" 0 "$STANDIN_LOOKUP_TEST"
((RC == 0)) || printf '%s\n%s\n' "$OUT" "$ERR" >&2

# ---- linked as a CUDA program is ----
check_match "cuda-prog needs libcuda.so.1" "$(readelf -d "$CUDA_PROG")" 'NEEDED.*\[libcuda\.so\.1\]'
check_nomatch "cuda-prog has no run path to the stand-in" "$(readelf -d "$CUDA_PROG")" 'R(UN)?PATH.*libcuda'
check_match "libcuda.so.1 is the stand-in's, by LD_LIBRARY_PATH" "$(ldd "$CUDA_PROG")" \
        "libcuda\.so\.1 => $STANDIN_CUDA_DIR/libcuda\.so\.1"
# (Where a real driver is installed the loader finds it instead.)
system_has() { /sbin/ldconfig -p 2>/dev/null | grep -q "$1"; }
if ! system_has libcuda.so.1; then
        check_run "without the stand-in's folder, no libcuda.so.1" 127 env LD_LIBRARY_PATH= "$CUDA_PROG" info
fi

# ---- capacity ----
prog "info at the default capacity" 0 info
check_eq "4 GiB free of 4 GiB" "$OUT" "free=$((4 * GIB)) total=$((4 * GIB))"

export MEMACCT_STANDIN_CUDA_BYTES=1G
prog "600M fit in 1G" 0 alloc 600M
check_match "600M allocated" "$OUT" "^allocated bytes=$((600 * MIB)) device=0 pid=[0-9]+$"
prog "all of 1G fits" 0 alloc 1G
prog "1G + 1M does not fit" 1 alloc 1025M
check_eq "the driver's refusal" "$OUT" "refused CUDA_ERROR_OUT_OF_MEMORY step=cuMemAlloc_v2"
prog "through cuGetProcAddress: the same refusal" 1 alloc 1025M --via-proc-address
check_eq "refused through cuGetProcAddress" "$OUT" \
        "refused CUDA_ERROR_OUT_OF_MEMORY step=cuGetProcAddress_v2(cuMemAlloc)"
prog "through cuGetProcAddress: 600M fit" 0 alloc 600M --via-proc-address
prog "device 1" 0 alloc 1G --device 1 --hold 0.01
check_match "on device 1" "$OUT" "device=1"
prog "no device 2" 1 alloc 1M --device 2
check_eq "device 2 refused" "$OUT" "refused CUDA_ERROR_INVALID_DEVICE step=cuDevicePrimaryCtxRetain"
MEMACCT_STANDIN_CUDA_BYTES=12x prog "a capacity that is not a size" 1 info
check_eq "cuInit refuses it" "$OUT" "refused CUDA_ERROR_INVALID_VALUE step=cuInit"
check_match "and says why" "$ERR" 'MEMACCT_STANDIN_CUDA_BYTES="12x" is not a byte count'

# ---- NVML agrees ----
export MEMACCT_STANDIN_CUDA_BYTES=3G
for dev in 0 1; do
        prog "info, device $dev" 0 info --device "$dev"
        info=$OUT
        check_eq "device $dev: 3 GiB" "$info" "free=$((3 * GIB)) total=$((3 * GIB))"
        prog "nvml-info, device $dev" 0 nvml-info --device "$dev"
        check_eq "device $dev: NVML says what the driver says" "$OUT" "$info"
done
if ! system_has libnvidia-ml.so.1; then
        check_run "no NVML without its folder" 1 env LD_LIBRARY_PATH="$STANDIN_CUDA_DIR" "$CUDA_PROG" nvml-info
        check_eq "dlopen refused" "$OUT" "refused dlopen step=libnvidia-ml.so.1"
fi

# ---- pools: reserved in granules, kept after the free until trimmed (or synchronised below the threshold) ----
for size in 1 $((3 * MIB)) $((4 * MIB)) $((5 * MIB + 1)); do
        prog "pool $size" 0 pool "$size"
        check_eq "pool $size keeps its granules" "$OUT" "reserved=$(round_up "$size" "$GRANULE")"
        prog "pool $size --trim" 0 pool "$size" --trim
        check_eq "pool $size trimmed to nothing" "$OUT" "reserved=$(round_up "$size" "$GRANULE") trimmed=0"
        prog "pool $size --release" 0 pool "$size" --release
        check_eq "pool $size at the default threshold: given back at the synchronisation" "$OUT" "reserved=0"
done
MEMACCT_STANDIN_CUDA_BYTES=3M prog "a pool past the capacity" 1 pool 3M
check_eq "pool refused: 4M of granules in 3M" "$OUT" "refused CUDA_ERROR_OUT_OF_MEMORY step=cuMemAllocAsync"

# ---- VMM: the handle holds the memory, mapped or not, until released ----
cap=$((3 * GIB))
vmm_bytes=$(round_up $((3 * MIB)) "$GRANULE")
prog "vmm 3M" 0 vmm 3M
want="bytes=$vmm_bytes granularity=$GRANULE
step=cuMemCreate free=$((cap - vmm_bytes))
step=cuMemAddressReserve free=$((cap - vmm_bytes))
step=cuMemMap free=$((cap - vmm_bytes))
step=cuMemSetAccess free=$((cap - vmm_bytes))
step=cuMemUnmap free=$((cap - vmm_bytes))
step=cuMemAddressFree free=$((cap - vmm_bytes))
step=cuMemRelease free=$cap"
check_eq "the VMM steps" "$OUT" "$want"
MEMACCT_STANDIN_CUDA_BYTES=2M prog "vmm past the capacity" 1 vmm 3M
check_match "cuMemCreate refused" "$OUT" "refused CUDA_ERROR_OUT_OF_MEMORY step=cuMemCreate$"

# ---- arrays: width x max(height,1) x max(depth,1) x channels x element size ----
prog "array 64x32x2" 0 array 64 32 2
check_eq "64x32x2 floats" "$OUT" "bytes=$((64 * 32 * 2 * 4))"
prog "array 100x0x0" 0 array 100 0 0
check_eq "a 1D array of 100 floats" "$OUT" "bytes=$((100 * 4))"
MEMACCT_STANDIN_CUDA_BYTES=1M prog "an array past the capacity" 1 array 1024 257 1
check_eq "array refused" "$OUT" "refused CUDA_ERROR_OUT_OF_MEMORY step=cuArray3DCreate_v2"

# ---- loop ----
prog "loop 1000 x 1M" 0 loop 1000 1M
check_match "1000 pairs, timed" "$OUT" '^count=1000 ns_per_pair=[0-9]+$'
MEMACCT_STANDIN_CUDA_BYTES=1M prog "loop past the capacity" 1 loop 5 2M
check_eq "refused at the first" "$OUT" "count=0 refused CUDA_ERROR_OUT_OF_MEMORY step=cuMemAlloc_v2"

# ---- the barrier holds the allocation back ----
"$CUDA_PROG" alloc 1M --barrier "$TMP/go" >"$TMP/barrier.out" &
barrier_pid=$!
BG_PIDS+=("$barrier_pid")
sleep 0.3
check_eq "nothing allocated before the barrier" "$(<"$TMP/barrier.out")" ""
touch "$TMP/go"
rc=0
wait "$barrier_pid" || rc=$?
check_eq "allocated after the barrier" "$rc $(cut -d' ' -f1-2 "$TMP/barrier.out")" "0 allocated bytes=$MIB"

# ---- children ----
prog "fork-child 10M" 0 fork-child 10M
check_match "fork-child: parent, child, parent" "$(tr '\n' ' ' <<<"$OUT")" \
        "^parent allocated bytes=$((10 * MIB)) pid=[0-9]+ child pid=[0-9]+ allocated bytes=$((10 * MIB)) device=0 pid=[0-9]+ child exited status=0 parent freed $"
# Each process has devices of its own: 10M + 10M in 15M.
MEMACCT_STANDIN_CUDA_BYTES=15M prog "fork-child: the child's own capacity" 0 fork-child 10M
prog "exec-child 10M" 0 exec-child 10M
check_match "exec-child: parent, child, parent" "$(tr '\n' ' ' <<<"$OUT")" \
        "^parent allocated bytes=$((10 * MIB)) pid=[0-9]+ allocated bytes=$((10 * MIB)) device=0 pid=[0-9]+ child exited status=0 parent freed $"
MEMACCT_STANDIN_CUDA_BYTES=15M prog "exec-child: the child's own capacity" 0 exec-child 10M

# ---- usage ----
prog "no subcommand" 2
prog "alloc without a size" 2 alloc
prog "alloc with an unknown option" 2 alloc 1M --bogus
prog "an unknown subcommand" 2 frobnicate

finish
