#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Install the dependencies, build, and run memacctd in the foreground on a
# socket in the current directory (./memacctd.sock, state in ./state):
# in another shell, `build/client/memacctctl --socket ./memacctd.sock tree`.
set -euo pipefail
cd "$(dirname "$0")/.."
tools/install-deps.sh
[ -d build ] || meson setup build --buildtype=debugoptimized >/dev/null
# What it runs and what the quick start uses, not every test and benchmark.
ninja -C build daemon/memacctd client/memacctctl
exec build/daemon/memacctd --socket "$PWD/memacctd.sock" --state-dir "$PWD/state" -v "$@"
