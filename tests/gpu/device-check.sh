#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# The interposer on a real GPU with the real driver, for a machine that
# has one (no test of the suite needs it: tests/cuda runs the same checks
# against the stand-in driver):
#
#   tests/gpu/device-check.sh [BUILDDIR]
#
# Builds a small CUDA driver API program with the machine's nvcc (the
# sources of tests/cuda/cuda-prog, against the toolkit's cuda.h and the
# driver's libcuda.so.1), starts its own memacctd, registers the GPUs with
# `memacctctl region probe` (NVML), and runs tests/cuda/test-interposer.py
# against them: the limit, the budget, the race, kill -9 mid-allocation,
# pools, VMM, placement. Prints PASS or FAIL for every check and a total;
# exits 77 with SKIP and the reason where there is no GPU, driver or nvcc.

set -u
cd "$(dirname "$0")/../.."
B=${1:-build}
case $B in /*) ;; *) B=$PWD/$B ;; esac
skip() { echo "SKIP: $*"; exit 77; }

command -v nvidia-smi >/dev/null 2>&1 || skip "no nvidia-smi: no NVIDIA driver on this machine"
nvidia-smi -L >/dev/null 2>&1 || skip "nvidia-smi finds no GPU"
/sbin/ldconfig -p | grep -q 'libcuda\.so\.1 ' || skip "no libcuda.so.1 on the loader's path"
NVCC=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
[ -x "$NVCC" ] || skip "no nvcc"
for f in "$B/daemon/memacctd" "$B/client/memacctctl" "$B/client/cuda/libmemacct-cuda.so"; do
        [ -e "$f" ] || skip "$f is not built (meson compile -C $B first)"
done

tmp=$(mktemp -d /tmp/memacct-gpu.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
nvidia-smi -L
# The toolkit's cuda.h first (MA_CHECK_WITH_CUDA_H): every declaration
# the program shares with the interposer is checked against it again.
"$NVCC" -O2 -DMA_CHECK_WITH_CUDA_H -D_GNU_SOURCE \
        -Iclient/cuda -Itests/cuda -Icommon \
        tests/cuda/cuda-prog.c tests/cuda/cuda-prog-kinds.c tests/cuda/cuda-prog-serve.c \
        common/parse-size.c -o "$tmp/gpu-prog" -lcuda -ldl || { echo "FAIL: nvcc cannot build the program"; exit 1; }

MEMACCT_CUDA_REAL=1 MEMACCTD=$B/daemon/memacctd MEMACCTCTL=$B/client/memacctctl \
        CUDA_PROG=$tmp/gpu-prog INTERPOSER=$B/client/cuda/libmemacct-cuda.so STANDIN_LD_LIBRARY_PATH= \
        /usr/bin/python3 tests/cuda/test-interposer.py 2>&1
