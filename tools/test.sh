#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# Install the dependencies, build, and run the whole test suite: a plain
# optimised build (gcc); the unit tests of a clang -O2 build; gcc -O1 and
# -O3 builds (warnings are errors at every level); AddressSanitizer +
# UndefinedBehaviorSanitizer; ThreadSanitizer for the concurrency suite;
# every fuzz target under libFuzzer for FUZZ_SECONDS (default 20) each.
# Exits non-zero on any failure.
set -euo pipefail
cd "$(dirname "$0")/.."
tools/install-deps.sh

passed=0
failed=0
skipped=0
# meson test's summary line "NAME: N" from LOG, 0 when absent.
count() {
        local n
        n=$(sed -n "s/^$1: *\([0-9][0-9]*\).*/\1/p" "$2" | tail -1)
        echo "${n:-0}"
}
# Run meson test, show its output, and add its counts to the totals.
run_tests() {
        local log rc
        log=$(mktemp)
        set +e
        "$@" 2>&1 | tee "$log"
        rc=${PIPESTATUS[0]}
        set -e
        passed=$((passed + $(count Ok "$log")))
        failed=$((failed + $(count Fail "$log") + $(count Timeout "$log")))
        skipped=$((skipped + $(count Skipped "$log")))
        rm -f "$log"
        if [ "$rc" -ne 0 ]; then
                echo "$passed passed, $((failed > 0 ? failed : 1)) failed, $skipped skipped"
                exit "$rc"
        fi
}

setup() {
        local dir=$1; shift
        rm -rf "$dir"
        meson setup "$dir" -Dwerror=true "$@" >"$dir.setup.log" 2>&1 || { cat "$dir.setup.log"; exit 1; }
        rm -f "$dir.setup.log"
}

echo "== plain build (gcc, -O2)"
setup build-ci --buildtype=debugoptimized
ninja -C build-ci
run_tests meson test -C build-ci --print-errorlogs --num-processes 2

echo "== clang -O2 (warnings are errors with either compiler), unit tests"
CC=clang setup build-clang --buildtype=debugoptimized -Dbench=false
ninja -C build-clang
run_tests meson test -C build-clang --print-errorlogs --num-processes 2 --suite unit

# gcc's warnings differ by optimisation level (format-truncation at -O1,
# maybe-uninitialized at -O3): the other levels are built too, tests
# included, warnings as errors.
for o in 1 3; do
        echo "== gcc -O$o (build only)"
        setup "build-O$o" -Doptimization=$o
        ninja -C "build-O$o"
done

# The system and package suites build their own binaries (meson install
# --prefix=/usr, dpkg-buildpackage), never the sanitized ones: they run
# once, in the plain build above.
echo "== AddressSanitizer + UndefinedBehaviorSanitizer"
setup build-asan --buildtype=debug -Db_sanitize=address,undefined -Db_lundef=false -Dbench=false
ninja -C build-asan
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
        run_tests meson test -C build-asan --print-errorlogs --num-processes 2 --timeout-multiplier 3 \
        --no-suite system --no-suite package

echo "== ThreadSanitizer (concurrency suite)"
CC=clang setup build-tsan --buildtype=debug -Db_sanitize=thread -Db_lundef=false -Dbench=false
ninja -C build-tsan
TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1 suppressions=$PWD/tests/tsan.supp" \
        run_tests meson test -C build-tsan --print-errorlogs --suite concurrency --timeout-multiplier 5

echo "== libFuzzer, the code under test instrumented, ${FUZZ_SECONDS:-20} s per target"
rm -rf build-fuzz
if tools/fuzz.sh "${FUZZ_SECONDS:-20}" build-fuzz; then
        passed=$((passed + 1))
else
        failed=$((failed + 1))
        echo "$passed passed, $failed failed, $skipped skipped"
        exit 1
fi

# A skipped test is not a passed one: the total says how many there were.
echo "$passed passed, $failed failed, $skipped skipped"
