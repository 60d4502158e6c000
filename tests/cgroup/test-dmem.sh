#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# The kernel's own dmem controller, mirrored, on the REAL host: where a
# cgroup2 hierarchy has dmem.capacity (Linux 6.14+ with a driver that
# registers regions), import-cgroups registers every region it lists with
# its capacity, and a mirrored cgroup's dmem.current shows beside our own
# usage. A host without the controller (this project's build machine:
# its cgroup2 offers only hugetlb) exits 77, a skip, with the reason; the
# mirror itself is tested on fake trees (tests/unit/cgroup,
# test-mirror-dmem.c).

set -u

# shellcheck source-path=SCRIPTDIR source=../lib.sh
source "$(dirname "$0")/../lib.sh"

[[ $(id -u) == 0 ]] || skip_test "the dmem check needs root (it reads and makes kernel cgroups)"
DMEM=
while read -r _ mnt type _; do
        if [[ $type == cgroup2 && -e $mnt/dmem.capacity ]]; then
                DMEM=$mnt
                break
        fi
done </proc/self/mounts
if [[ -z $DMEM ]]; then
        controllers=$(cat "$(awk '$3 == "cgroup2" { print $2; exit }' /proc/self/mounts)/cgroup.controllers" 2>/dev/null || true)
        skip_test "no dmem controller on this host (cgroup2 offers: ${controllers:-nothing})"
fi
if [[ ! -s $DMEM/dmem.capacity ]]; then
        skip_test "the dmem controller at $DMEM has no region (no driver registered one)"
fi

check_start_daemon || exit 1
check_run "import-cgroups" 0 ctl import-cgroups --from / --under /k
check_run "region list" 0 ctl --json region list
LIST=$OUT
while read -r name capacity; do
        [[ -n $name ]] || continue
        want=$capacity
        [[ $capacity == max ]] && want='"max"'
        check_eq "region $name mirrored with its capacity" \
                "$(jget "[r['capacity'] for r in d if r['name'] == '$name']" <<<"$LIST")" "[$want]"
done <"$DMEM/dmem.capacity"
finish
