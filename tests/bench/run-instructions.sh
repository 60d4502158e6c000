#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# Instructions the daemon executes per request, counted by valgrind's
# callgrind: a figure that does not drift with the machine's load, for
# comparing two builds of the daemon (say, before and after a change)
# where wall-clock rates differ by less than their noise.
#
# For each depth (1 and 16 requests per write) it runs the daemon (one
# worker) under callgrind twice, with ir-client.py sending N and 3N
# charge/uncharge requests of 4 KiB on one connection, and prints the
# difference of the two totals divided by 2N: what one more request
# costs, with start-up, shutdown and set-up cancelled out. Every thread
# of the daemon is counted (the housekeeping timer too, which makes the
# last digit wobble); system calls count as the instructions of their
# user-space wrappers only.
#
# Usage: run-instructions.sh [BUILDDIR]
#   MEMACCTD=/path/to/memacctd (default BUILDDIR/daemon/memacctd)
#   MEMACCTD_PEER=/path/to/another/memacctd  also measured, and the ratio printed
#   BENCH_REQUESTS=2000 (N)
#   BENCH_REGION=NAME  also measured with the charges in device region NAME,
#                      on the same daemon, and the ratio to memory's printed
set -eu

build=${1:-build}
daemon=${MEMACCTD:-$build/daemon/memacctd}
peer=${MEMACCTD_PEER:-}
n=${BENCH_REQUESTS:-2000}
src=$(cd "$(dirname "$0")/../.." && pwd)

for prog in valgrind protoc /usr/bin/python3; do
        if ! command -v "$prog" >/dev/null 2>&1; then
                echo "run-instructions.sh: $prog not found" >&2
                exit 1
        fi
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
protoc --proto_path="$src/proto/memacct/v1" --python_out="$tmp" "$src/proto/memacct/v1/memacct.proto"

# total DAEMON REQUESTS DEPTH: the instructions of one run.
total() {
        d=$tmp/run
        rm -rf "$d"
        mkdir "$d"
        : >"$d/conf"
        valgrind --tool=callgrind --callgrind-out-file="$d/cg.out" "$1" --socket "$d/sock" \
                --state-dir "$d/state" --config "$d/conf" --workers 1 >"$d/log" 2>&1 &
        vpid=$!
        i=0
        while [ ! -S "$d/sock" ]; do
                i=$((i + 1))
                if [ "$i" -gt 600 ] || ! kill -0 "$vpid" 2>/dev/null; then
                        echo "run-instructions.sh: $1 did not start under valgrind" >&2
                        cat "$d/log" >&2
                        exit 1
                fi
                sleep 0.1
        done
        IR_PB=$tmp IR_REGION=${IR_REGION:-} /usr/bin/python3 "$src/tests/bench/ir-client.py" "$d/sock" "$2" "$3"
        kill -TERM "$vpid"
        wait "$vpid" || true
        sed -n 's/^\(summary\|totals\): *\([0-9]*\).*/\2/p' "$d/cg.out" | head -n 1
}

# per_request DAEMON DEPTH
per_request() {
        a=$(total "$1" "$n" "$2")
        b=$(total "$1" $((3 * n)) "$2")
        echo $(((b - a) / (2 * n)))
}

region=${BENCH_REGION:-}
printf '%-6s %14s' depth "instr/request"
[ -n "$peer" ] && printf ' %14s %8s' "peer" ratio
[ -n "$region" ] && printf ' %14s %8s' "region" ratio
printf '\n'
for depth in 1 16; do
        m=$(IR_REGION= per_request "$daemon" $depth)
        printf '%-6s %14s' "$depth" "$m"
        if [ -n "$peer" ]; then
                p=$(IR_REGION= per_request "$peer" $depth)
                printf ' %14s %8s' "$p" "$(echo "$m $p" | awk '{ printf "%.3f", $1 / $2 }')"
        fi
        if [ -n "$region" ]; then
                g=$(IR_REGION=$region per_request "$daemon" $depth)
                printf ' %14s %8s' "$g" "$(echo "$g $m" | awk '{ printf "%.3f", $1 / $2 }')"
        fi
        printf '\n'
done
echo "daemon: $daemon${peer:+; peer: $peer}; $n and $((3 * n)) requests per run, one connection, one worker"
