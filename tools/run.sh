#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Install the dependencies, build, and run. Until the daemon lands this
# runs the core benchmark (the accounting engine against its pre-patch
# fast paths) in the foreground.
set -euo pipefail
cd "$(dirname "$0")/.."
tools/install-deps.sh
[ -d build ] || meson setup build --buildtype=debugoptimized >/dev/null
ninja -C build
exec tests/bench/run-core.sh build
