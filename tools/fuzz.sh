#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# Fuzz every target of tests/fuzz for a bounded time with libFuzzer, the
# code under test instrumented (-Dfuzz=true) and under ASan+UBSan, each
# starting from a copy of its corpus. Prints a table: per target, the
# executions, executions per second, and the coverage points (cov) and
# features (ft) reached; exits non-zero when a target crashes (its input
# is kept in BUILDDIR/fuzz-crashes/ and printed: make it a corpus file and
# a fix).
#
# Usage: tools/fuzz.sh [SECONDS] [BUILDDIR]
#   SECONDS per target: the argument, else $FUZZ_SECONDS, else 20 (CI);
#   BUILDDIR: build-fuzz, set up here when it is not yet.
# The corpus replay of every target also runs in the plain and ASan+UBSan
# builds' meson suite (suite 'fuzz', tests/fuzz/meson.build).
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-${FUZZ_SECONDS:-20}}
build=${2:-build-fuzz}

# The targets, one a line: tests/fuzz/fuzz-NAME.c with its corpus in
# tests/fuzz/corpus/NAME/, as in tests/fuzz/meson.build.
targets=(
        bus
        config
        dmem
        frame
        journal
        metrics
        parse-size
        path
        request
        rules
        state
        wire-hot
)

# A target not listed would silently go unfuzzed: refuse.
for src in tests/fuzz/fuzz-*.c; do
        name=$(basename "$src" .c)
        name=${name#fuzz-}
        [[ $name == main || $name == rcu ]] && continue
        if [[ " ${targets[*]} " != *" $name "* ]]; then
                echo "tools/fuzz.sh: $src is not in the list of targets" >&2
                exit 1
        fi
done

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
# The last value of libFuzzer's "NAME N" in LOG (its -print_final_stats
# lines, or the fields of its last status line), ? when there is none.
stat() {
        local v
        v=$(sed -n "s/.*$1 *\([0-9][0-9]*\).*/\1/p" "$2" | tail -n 1)
        echo "${v:-?}"
}
echo "libFuzzer, ${seconds} s per target:"
printf '%-12s %10s %8s %8s %8s\n' target execs exec/s cov ft
for name in "${targets[@]}"; do
        exe=$build/tests/fuzz/fuzz-$name
        log=$work/$name.log
        mkdir -p "$work/$name"
        cp -r "tests/fuzz/corpus/$name/." "$work/$name/"
        dict=()
        # A target's dictionary, when it has one: tests/fuzz/NAME.dict.
        [[ -f tests/fuzz/$name.dict ]] && dict=(-dict="tests/fuzz/$name.dict")
        rc=0
        ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
                "$exe" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
                -artifact_prefix="$build/fuzz-crashes/$name-" "${dict[@]}" "$work/$name" >"$log" 2>&1 || rc=$?
        # cov and ft from the last status line (DONE, or the last before a crash).
        grep -E '^#[0-9]+[[:space:]]' "$log" | tail -n 1 >"$log.last" || true
        printf '%-12s %10s %8s %8s %8s\n' "$name" "$(stat 'stat::number_of_executed_units:' "$log")" \
                "$(stat 'stat::average_exec_per_sec:' "$log")" "$(stat 'cov:' "$log.last")" \
                "$(stat 'ft:' "$log.last")"
        if ((rc != 0)); then
                failed=1
                echo "fuzz-$name failed (exit $rc):" >&2
                tail -n 40 "$log" >&2
        fi
done
exit "$failed"
