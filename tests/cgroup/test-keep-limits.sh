#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# Limits a user set on a kernel cgroup mirror, through memacctctl on REAL
# kernel cgroups, as root (the daemon mirrors the host's hierarchy only):
# a max set on a mirror survives a re-import and a restart, the import
# says so, and import-cgroups --reset-limits gives it back to the kernel.
# The cgroup made is removed at the end, also on failure. Exits 77 (skip)
# with the reason when it cannot run.

set -u

# shellcheck source-path=SCRIPTDIR source=cgroup-lib.sh
source "$(dirname "$0")/cgroup-lib.sh" memacct-keep "the cgroup test"

# kernel_max CGROUP BYTES: the hierarchy's own max file.
kernel_max() {
        if ((VERSION == 1)); then
                echo "$2" >"$HIER/$NAME$1/memory.limit_in_bytes"
        else
                echo "$2" >"$HIER/$NAME$1/memory.max"
        fi
}

MiB=$((1024 * 1024))
write_config

rc=0
make_cgroup /x && kernel_max /x $((512 * MiB)) || rc=$?
check_eq "the test cgroup is made with max 512M" "$rc" 0

# A private system bus too, for ImportCgroupsKeepingLimits, when there is one.
try_bus

if start_memacctd; then pass; else fail "the daemon starts"; exit 1; fi
check_run "import-cgroups" 0 ctl import-cgroups --from "/$NAME"
check_eq "x's mirror has the kernel's max" "$(field "$MIRROR/x" 'd["max"]')" $((512 * MiB))
check_run "a user sets max on the mirror" 0 ctl set "$MIRROR/x" max=100M

check_run "import-cgroups again" 0 ctl import-cgroups --from "/$NAME"
check_eq "the user's max is kept" "$(field "$MIRROR/x" 'd["max"]')" $((100 * MiB))
check_match "the import says the kernel owns max" "$OUT" '^kernel owns: max'
check_match "the import says which limit it kept" "$OUT" \
        "^$MIRROR/x: kept max=100M \\(set by a user; the kernel has 512M\\)$"
check_match "the import counts the kept limit" "$OUT" '^kept: 1$'
check_run "import-cgroups --json" 0 ctl --json import-cgroups --from "/$NAME"
check_eq "--json: the kept limit, ours and the kernel's" \
        "$(jget '[d["kept"], d["kernel_owns"][0], d["kept_limits"][0]["group"], d["kept_limits"][0]["ours"]["max"], d["kept_limits"][0]["kernel"]["max"]]' <<<"$OUT")" \
        "[1, \"max\", \"$MIRROR/x\", $((100 * MiB)), $((512 * MiB))]"

if [[ -n $BUS_ADDR ]]; then
        check_run "import-cgroups on the bus" 0 "$MEMACCTCTL" --bus="$BUS_ADDR" import-cgroups --from "/$NAME"
        check_match "the bus says which limit it kept" "$OUT" \
                "^$MIRROR/x: kept max=100M \\(set by a user; the kernel has 512M\\)$"
        check_match "the bus says the kernel owns max" "$OUT" '^kernel owns: max'
else
        skip "no dbus-daemon for a private bus: the bus import is not checked"
fi

# A restart: the mark is saved with the group.
rc=0
stop_daemon || rc=$?
check_eq "the daemon exits 0 on SIGTERM" "$rc" 0
check_match "the state names the user's limit" "$(grep " $MIRROR/x " "$STATE/state" 2>&1)" 'user-limits=max'
if start_memacctd; then pass; else fail "the daemon starts again"; exit 1; fi
check_run "import-cgroups after a restart" 0 ctl import-cgroups --from "/$NAME"
check_eq "the user's max survives a restart and an import" "$(field "$MIRROR/x" 'd["max"]')" $((100 * MiB))

check_run "import-cgroups --reset-limits" 0 ctl import-cgroups --from "/$NAME" --reset-limits
check_eq "reset: the kernel's max is taken" "$(field "$MIRROR/x" 'd["max"]')" $((512 * MiB))
check_nomatch "reset: nothing is kept" "$OUT" 'kept max'
kernel_max /x $((256 * MiB))
check_run "import-cgroups after the reset" 0 ctl import-cgroups --from "/$NAME"
check_eq "given back: the kernel's max follows again" "$(field "$MIRROR/x" 'd["max"]')" $((256 * MiB))
check_run "--reset-limits is for import-cgroups only" 2 ctl show / --reset-limits

rc=0
stop_daemon || rc=$?
check_eq "the daemon exits 0 on SIGTERM" "$rc" 0
echo "$SKIPPED skipped"
