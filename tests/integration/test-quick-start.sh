#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# README.md's quick start, pasted into a fresh shell: its block, line by
# line, in bash with nothing but the checkout's directory and a daemon
# on ./memacctd.sock (as tools/run.sh runs it). Every line must succeed;
# the two that wait for Ctrl-C (hold, watch) get one after a second.

source "$(dirname "$0")/../lib.sh"

: "${MEMACCT_BUILD_ROOT:?MEMACCT_BUILD_ROOT must name the build directory}"
# A checkout whose build/ is this build, as after tools/run.sh.
CHECKOUT=$TMP/checkout
mkdir -p "$CHECKOUT"
ln -s "$MEMACCT_BUILD_ROOT" "$CHECKOUT/build"
SOCK=$CHECKOUT/memacctd.sock
CTL=("$MEMACCTCTL" --socket "$SOCK")
check_start_daemon || exit 1

block=$(awk '/^## Quick start/ { on = 1; next } on && /^## / { exit } on && /^    / { sub(/^    /, ""); print }' \
        "$MEMACCT_SOURCE_ROOT/README.md")
check_match "README.md has a quick start block" "$block" "^export PATH="
n=0
while IFS= read -r line; do
        [[ -n $line ]] || continue
        n=$((n + 1))
        # A fresh shell at the checkout: the block's own exports must do.
        if [[ $line =~ (hold|watch) ]]; then
                # Waits for Ctrl-C: SIGINT after a second, then exit 0 is
                # done. (Its comment would hide what follows it.)
                run env -i HOME="$TMP" PATH=/usr/bin:/bin bash -c \
                        "cd '$CHECKOUT'; $(head -n 1 <<<"$block"); (${line%%#*}) & pid=\$!; sleep 1; kill -INT \$pid; wait \$pid"
        else
                run env -i HOME="$TMP" PATH=/usr/bin:/bin bash -c "cd '$CHECKOUT'; $(head -n 1 <<<"$block"); $line"
        fi
        check_eq "quick start line $n: $line (stderr: $ERR)" "$RC" 0
done <<<"$block"
check_eq "every line ran" "$((n >= 8))" 1
check_stop_daemon
