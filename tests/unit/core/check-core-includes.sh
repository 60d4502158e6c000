#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# The accounting core has no I/O and no transport types: it may include
# libc, atomics, pthreads, liburcu and its own headers only.
set -eu
dir=${1:?core directory}
bad=$(grep -Hn '^#include <' "$dir"/*.c "$dir"/*.h |
      grep -v -E '<(assert|errno|sched|stdatomic|stdbool|stddef|stdint|stdlib|string|pthread|sys/types)\.h>|<urcu/' || true)
if [ -n "$bad" ]; then
        echo "core includes outside its allowed set:" >&2
        echo "$bad" >&2
        exit 1
fi
n=$(ls "$dir"/*.c | wc -l)
echo "1 passed, 0 failed: $n core sources include only libc, pthreads and liburcu"
