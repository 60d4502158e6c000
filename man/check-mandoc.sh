#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# Lint every man page with mandoc: any message at warning level or above
# fails the page. Usage: check-mandoc.sh MANDOC PAGE...
set -u
mandoc=${1:?mandoc program}
shift
passed=0
failed=0
for page in "$@"; do
        out=$("$mandoc" -T lint -W warning "$page" 2>&1)
        rc=$?
        if [ -n "$out" ] || [ "$rc" -ne 0 ]; then
                printf '%s\n' "$out" >&2
                echo "FAIL: $page (mandoc exit status $rc)" >&2
                failed=$((failed + 1))
        else
                passed=$((passed + 1))
        fi
done
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
