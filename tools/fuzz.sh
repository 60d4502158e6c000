#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# Fuzz every target of tests/fuzz for a bounded time with libFuzzer, the
# code under test instrumented (-Dfuzz=true) and under ASan+UBSan, each
# starting from a copy of its corpus. Prints, per target, the executions,
# the coverage points and features reached; exits non-zero when a target
# crashes (its input is kept in BUILDDIR/fuzz-crashes/ and printed: make
# it a corpus file and a fix).
#
# Usage: tools/fuzz.sh [SECONDS] [BUILDDIR]   (default 20 s, build-fuzz)
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-20}
build=${2:-build-fuzz}

if [[ ! -f $build/build.ninja ]]; then
        CC=clang meson setup "$build" -Dwerror=true -Dfuzz=true -Db_sanitize=address,undefined \
                -Db_lundef=false -Dbench=false >"$build.setup.log" 2>&1 || { cat "$build.setup.log"; exit 1; }
        rm -f "$build.setup.log"
fi
ninja -C "$build"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$build/fuzz-crashes"
failed=0
printf '%-12s %10s %8s %8s\n' target execs cov ft
for src in tests/fuzz/fuzz-*.c; do
        name=$(basename "$src" .c)
        name=${name#fuzz-}
        [[ $name == main ]] && continue
        exe=$build/tests/fuzz/fuzz-$name
        mkdir -p "$work/$name"
        cp -r "tests/fuzz/corpus/$name/." "$work/$name/" 2>/dev/null || true
        rc=0
        ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
                "$exe" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
                -artifact_prefix="$build/fuzz-crashes/$name-" "$work/$name" >"$work/$name.log" 2>&1 || rc=$?
        done_line=$(grep -E '^#[0-9]+[[:space:]]+DONE' "$work/$name.log" | tail -n 1 || true)
        execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$work/$name.log" | tail -n 1)
        cov=$(sed -n 's/.* cov: \([0-9]*\).*/\1/p' <<<"$done_line")
        ft=$(sed -n 's/.* ft: \([0-9]*\).*/\1/p' <<<"$done_line")
        printf '%-12s %10s %8s %8s\n' "$name" "${execs:-?}" "${cov:-?}" "${ft:-?}"
        if ((rc != 0)); then
                failed=1
                echo "fuzz-$name failed (exit $rc):" >&2
                tail -n 40 "$work/$name.log" >&2
        fi
done
exit "$failed"
