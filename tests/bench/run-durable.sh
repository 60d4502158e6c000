#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# Saver changes: kept charges per second (Charge/Uncharge with keep of
# /bench/a, each a durable change whose OK waits for its save) with
# group commit and fsync ([daemon] sync = yes, the default) against the
# same daemon without fsync (sync = no), and, as the peer, redis-server
# with an append-only file fsync'ed before every reply (appendfsync
# always) and without (appendfsync no), all four started here with their
# files in one directory on the same file system ($BENCH_DIR, default
# a new directory under /var/tmp: a disk, not a tmpfs). For 1, 8 and 64
# connections at pipeline depth 1 and 16, BENCH_ROUNDS rounds (default 3),
# medians; every answer is checked by bench-sock.
#
# Usage: run-durable.sh [BUILDDIR]
#   BENCH_ROUNDS=3 BENCH_DURATION=2000 (ms per point) BENCH_WARMUP=300
#   BENCH_DIR=/var/tmp (where the state files go)
set -eu

build=${1:-build}
rounds=${BENCH_ROUNDS:-3}
duration=${BENCH_DURATION:-2000}
warmup=${BENCH_WARMUP:-300}
bench=$build/tests/bench/bench-sock
daemon=${MEMACCTD:-$build/daemon/memacctd}
for exe in "$bench" "$daemon"; do
        [ -x "$exe" ] || { echo "run-durable.sh: $exe not found (ninja -C $build)" >&2; exit 1; }
done
command -v redis-server >/dev/null || { echo "run-durable.sh: redis-server not found" >&2; exit 1; }

tmp=$(mktemp -d "${BENCH_DIR:-/var/tmp}/memacct-durable-XXXXXX")
pids=
cleanup() {
        for p in $pids; do kill "$p" 2>/dev/null || true; done
        for p in $pids; do wait "$p" 2>/dev/null || true; done
        rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP

start_memacctd() { # NAME SYNC
        mkdir "$tmp/$1"
        printf '[daemon]\nsync = %s\n' "$2" >"$tmp/$1.conf"
        "$daemon" --socket "$tmp/$1.sock" --state-dir "$tmp/$1" --config "$tmp/$1.conf" \
                >"$tmp/$1.log" 2>&1 &
        pids="$pids $!"
}
start_redis() { # NAME APPENDFSYNC
        mkdir "$tmp/$1"
        redis-server --port 0 --unixsocket "$tmp/$1.sock" --unixsocketperm 700 --save '' \
                --appendonly yes --appendfsync "$2" --dir "$tmp/$1" --logfile "$tmp/$1.log" &
        pids="$pids $!"
}
start_memacctd sync yes
start_memacctd nosync no
start_redis always always
start_redis nofsync no
for s in sync nosync always nofsync; do
        i=0
        while [ ! -S "$tmp/$s.sock" ]; do
                i=$((i + 1))
                [ "$i" -le 100 ] || { echo "run-durable.sh: $s did not start" >&2; cat "$tmp/$s.log" >&2; exit 1; }
                sleep 0.1
        done
done
echo "run-durable.sh: $(nproc) CPUs, state on $(df -T "$tmp" | awk 'NR == 2 { print $2 }')" \
     "($tmp), $rounds rounds of $duration ms" >&2

median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
point() { # NAME CONNS DEPTH: ops/s of one run
        case $1 in
        sync|nosync) set -- --system memacct --kept --socket "$tmp/$1.sock" --conns "$2" --depth "$3" ;;
        *) set -- --system redis --socket "$tmp/$1.sock" --conns "$2" --depth "$3" ;;
        esac
        line=$("$bench" "$@" --duration "$duration" --warmup "$warmup" --threads 2)
        case $line in
        *errors=0\ verify=ok*) echo "$line" | awk '{ print $4 }' ;;
        *) echo "run-durable.sh: a run failed: $line" >&2; echo 0 ;;
        esac
}

printf '%-6s %-5s %12s %12s %12s %12s %10s %10s\n' conns depth memacct-fsync memacct-nofsync \
        redis-always redis-no fsync/no memacct/redis
for conns in 1 8 64; do
        for depth in 1 16; do
                for s in sync nosync always nofsync; do
                        r=0
                        while [ "$r" -lt "$rounds" ]; do
                                point "$s" "$conns" "$depth"
                                r=$((r + 1))
                        done | median >"$tmp/$s.median"
                done
                a=$(cat "$tmp/sync.median") b=$(cat "$tmp/nosync.median")
                c=$(cat "$tmp/always.median") d=$(cat "$tmp/nofsync.median")
                printf '%-6s %-5s %12s %12s %12s %12s %10s %10s\n' "$conns" "$depth" "$a" "$b" "$c" "$d" \
                        "$(awk -v x="$a" -v y="$b" 'BEGIN { printf "%.3f", y ? x / y : 0 }')" \
                        "$(awk -v x="$a" -v y="$c" 'BEGIN { printf "%.2f", y ? x / y : 0 }')"
        done
done
