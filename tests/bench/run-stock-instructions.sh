#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# Instructions per stocked charge+uncharge pair in libmemacct, memory's
# stat item against a device region's stock item, counted by valgrind's
# callgrind in memacct_charge_stocked() and memacct_uncharge_stocked()
# alone (--toggle-collect), over bench-stock --mode pair against the
# build's daemon (one worker). The count includes the refills and
# returns the pairs amortise, and does not drift with the machine's load.
#
# Usage: run-stock-instructions.sh [BUILDDIR]
#   MEMACCTD=/path/to/memacctd (default BUILDDIR/daemon/memacctd)
#   BENCH_DURATION=300 (ms of pairs per run, under valgrind)
set -eu

build=${1:-build}
daemon=${MEMACCTD:-$build/daemon/memacctd}
bench=$build/tests/bench/bench-stock
duration=${BENCH_DURATION:-300}

for prog in valgrind callgrind_annotate; do
        if ! command -v "$prog" >/dev/null 2>&1; then
                echo "run-stock-instructions.sh: $prog not found" >&2
                exit 1
        fi
done
tmp=$(mktemp -d)
: >"$tmp/conf"
"$daemon" --socket "$tmp/sock" --state-dir "$tmp/state" --config "$tmp/conf" --workers 1 >"$tmp/log" 2>&1 &
dpid=$!
trap 'kill "$dpid" 2>/dev/null; wait "$dpid" 2>/dev/null; rm -rf "$tmp"' EXIT
i=0
while [ ! -S "$tmp/sock" ]; do
        i=$((i + 1))
        if [ "$i" -gt 100 ] || ! kill -0 "$dpid" 2>/dev/null; then
                echo "run-stock-instructions.sh: $daemon did not start" >&2
                cat "$tmp/log" >&2
                exit 1
        fi
        sleep 0.1
done
export LD_LIBRARY_PATH="$build/client${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"

# pairs NAME [--region R]: instructions per pair, printed and kept in $tmp/NAME.
pairs() {
        name=$1
        shift
        out=$(valgrind --tool=callgrind --callgrind-out-file="$tmp/cg.$name" \
                --toggle-collect=memacct_charge_stocked --toggle-collect=memacct_uncharge_stocked \
                "$bench" --socket "$tmp/sock" --mode pair --duration "$duration" --no-pin "$@" 2>"$tmp/vg.$name")
        case $out in
        *verify=ok*) ;;
        *)
                echo "run-stock-instructions.sh: bench-stock failed: $out" >&2
                exit 1
                ;;
        esac
        ops=$(echo "$out" | sed -n 's/.* ops=\([0-9]*\).*/\1/p')
        ir=$(callgrind_annotate "$tmp/cg.$name" 2>/dev/null | awk '/PROGRAM TOTALS/ { gsub(",", "", $1); print $1 }')
        awk -v ir="$ir" -v ops="$ops" 'BEGIN { printf "%.1f\n", ir / ops }' >"$tmp/$name"
        echo "stock_pair_ir $name $(cat "$tmp/$name") pairs=$ops"
}

pairs memory
pairs region --region bench-gpu0
awk -v m="$(cat "$tmp/memory")" -v r="$(cat "$tmp/region")" \
        'BEGIN { printf "stock_pair_ir region/memory %.3f\n", r / m }'
