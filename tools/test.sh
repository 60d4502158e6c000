#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# Install the dependencies, build, and run the whole test suite three
# ways: a plain optimised build; AddressSanitizer + UndefinedBehaviorSanitizer;
# ThreadSanitizer for the concurrency suite. Exits non-zero on any failure.
set -euo pipefail
cd "$(dirname "$0")/.."
tools/install-deps.sh

setup() {
        local dir=$1; shift
        rm -rf "$dir"
        meson setup "$dir" -Dwerror=true "$@" >"$dir.setup.log" 2>&1 || { cat "$dir.setup.log"; exit 1; }
        rm -f "$dir.setup.log"
}

echo "== plain build (gcc, -O2)"
setup build-ci --buildtype=debugoptimized
ninja -C build-ci
meson test -C build-ci --print-errorlogs --num-processes 2

echo "== AddressSanitizer + UndefinedBehaviorSanitizer"
setup build-asan --buildtype=debug -Db_sanitize=address,undefined -Db_lundef=false -Dbench=false
ninja -C build-asan
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
        meson test -C build-asan --print-errorlogs --num-processes 2 --timeout-multiplier 3

echo "== ThreadSanitizer (concurrency suite)"
CC=clang setup build-tsan --buildtype=debug -Db_sanitize=thread -Db_lundef=false -Dbench=false
ninja -C build-tsan
TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1 suppressions=$PWD/tests/tsan.supp" \
        meson test -C build-tsan --print-errorlogs --suite concurrency --timeout-multiplier 5
