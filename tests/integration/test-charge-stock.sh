#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# [accounting] charge-stock = yes: each worker keeps a charge stock, as
# the kernel's per-CPU memcg_stock. A small charge takes a batch of 64
# pages and stocks the surplus (current shows it, as memory.current shows
# stocked pages), and an exact read (--exact) gives them back first; a
# charge a max refuses empties the stocks under it and is tried again; a
# new max and a removal give stocked bytes back. The
# same requests without the stock read exact byte counts (test-ctl.sh).

# shellcheck source-path=SCRIPTDIR source=../lib.sh
source "$(dirname "$0")/../lib.sh"

K=1024
BATCH=$((64 * 4096))

DAEMON_CONF=$'[accounting]\ncharge-stock = yes\n'
check_start_daemon || exit 1

check_run "a group with a max" 0 ctl create /s max=512K
check_run "a small kept charge" 0 ctl charge /s 4K
check_eq "it took a batch: current shows the stocked surplus" "$(field /s 'd["current"]')" $BATCH
check_eq "what the group keeps is exact" "$(field /s 'd["kept"]')" $((4 * K))
check_run "a charge the stock's surplus would refuse" 0 ctl charge /s 500K
check_eq "the stocks under /s were emptied and the charge tried again" \
        "$(field /s 'd["current"]')" $((504 * K))
check_eq "one refusal counted, no oom" "$(field /s '[d["failcnt"], d["events_local"]["oom"]]')" "[1, 0]"
check_run "release the large one" 0 ctl uncharge /s 500K
check_run "release the small one into the stock" 0 ctl uncharge /s 4K
check_eq "the stock keeps it" "$(field /s 'd["current"]')" $((4 * K))
check_run "a max below what is stocked is taken without --force" 0 ctl set /s max=2K
check_eq "the stock gave it back" "$(field /s 'd["current"]')" 0
check_run "charge again" 0 ctl charge /s 1K
check_run "and release" 0 ctl uncharge /s 1K
check_run "a max with room again" 0 ctl set /s max=1M
check_run "charge again" 0 ctl charge /s 8K
check_eq "the plain read shows the batch" "$(field /s 'd["current"]')" $BATCH
check_eq "an exact read folds the stocks in" "$(field /s 'd["current"]' --exact)" $((8 * K))
check_run "an exact tree too" 0 ctl --json tree --exact /
check_eq "the tree's /s" "$(jget '[g["current"] for g in d if g["path"] == "/s"]' <<<"$OUT")" "[$((8 * K))]"
check_run "release" 0 ctl uncharge /s 8K
check_run "remove /s with bytes stocked for it" 0 ctl remove /s
check_eq "nothing is left charged" "$(field / 'd["current"]')" 0
check_stop_daemon
finish
