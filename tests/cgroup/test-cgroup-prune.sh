#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# Pruning the mirrors of vanished kernel cgroups, on REAL kernel cgroups,
# as root. Cgroups made under a unique prefix (memacct-prune-<pid>) are
# imported, then removed from the kernel (rmdir):
# - with [cgroup] prune = no, sampling every second leaves the mirrors;
#   `memacctctl prune` removes the free one and keeps the one a session
#   is attached to, saying why (text and --json), exit status 0;
# - over D-Bus (PruneMirrors, through libmemacct with --bus, and busctl),
#   once the session is gone, the kept one goes;
# - the removals survive a restart (they were saved);
# - with prune = yes, the sampler removes a vanished cgroup's mirror by
#   itself within a few samples.
# Every cgroup made is removed at the end, also on failure.
#
# Exits 77 (skip) when it cannot run: not root, no memory controller, the
# kernel refuses to make a cgroup. The D-Bus part says SKIP without a
# dbus-daemon or busctl.

set -u

# shellcheck source-path=SCRIPTDIR source=cgroup-lib.sh
source "$(dirname "$0")/cgroup-lib.sh" memacct-prune "the prune test"

exists() {
        ctl show "$1" >/dev/null 2>&1
}

gone() {
        ! exists "$1" && ctl show / >/dev/null 2>&1
}

# start_with_prune PRUNE: the daemon with [cgroup] prune = PRUNE; the test
# ends here when it does not start.
start_with_prune() {
        write_config "prune = $1"
        if start_memacctd; then pass; else fail "the daemon starts (prune = $1)"; exit 1; fi
}

try_bus busctl

rc=0
make_cgroup /free && make_cgroup /busy || rc=$?
check_eq "the test cgroups are made" "$rc" 0

# ---- prune = no: nothing goes by itself; memacctctl prune ----

start_with_prune no
check_run "import-cgroups" 0 ctl import-cgroups --from "/$NAME"
check_run "a prune with nothing vanished" 0 ctl prune
check_eq "a prune with nothing vanished prints nothing" "$OUT" ""

bg "$TMP/hold.out" "$MEMACCTCTL" --socket "$SOCK" hold "$MIRROR/busy" 1M
HOLD=$BG_PID
if wait_for 10 grep -q holding "$TMP/hold.out"; then pass; else fail "hold starts: $(cat "$TMP/hold.out")"; fi

rmdir "$HIER/$NAME/free" "$HIER/$NAME/busy"
check_eq "the kernel cgroups are gone" "$([[ -d $HIER/$NAME/free || -d $HIER/$NAME/busy ]] && echo yes || echo no)" no
# Three samples at 1 s: with prune = no, none removes anything.
sleep 3.5
if exists "$MIRROR/free"; then pass; else fail "prune = no: the sampler left the mirror of a vanished cgroup"; fi

check_run "memacctctl prune" 0 ctl prune
check_eq "prune removes the free mirror and keeps the busy one, saying why" "$OUT" \
        "$(printf 'removed\t%s\nkept\t%s\t%s' "$MIRROR/free" "$MIRROR/busy" "sessions are attached")"
if gone "$MIRROR/free"; then pass; else fail "the pruned mirror is gone"; fi
if exists "$MIRROR/busy"; then pass; else fail "the kept mirror stays"; fi

check_run "memacctctl --json prune" 0 ctl --json prune
check_eq "--json: nothing more removed, the busy one kept" \
        "$(jget '[d["removed"], d["kept"]]' <<<"$OUT")" \
        "[[], [{\"group\": \"$MIRROR/busy\", \"why\": \"sessions are attached\"}]]"

stop_bg "$HOLD" TERM >/dev/null 2>&1 || true

# ---- over D-Bus ----

if [[ -n $BUS_ADDR ]]; then
        check_run "busctl PruneMirrors" 0 mcall PruneMirrors ""
        check_eq "PruneMirrors removes the mirror once its session is gone" "$OUT" \
                "asa(ss) 1 \"$MIRROR/busy\" 0"
        check_run "memacctctl --bus prune (libmemacct over D-Bus)" 0 \
                "$MEMACCTCTL" --bus="$BUS_ADDR" --json prune
        check_eq "over D-Bus, a second prune has nothing to do" \
                "$(jget '[d["removed"], d["kept"]]' <<<"$OUT")" "[[], []]"
else
        skip "D-Bus PruneMirrors: no dbus-daemon or busctl here"
        check_run "memacctctl prune (no bus)" 0 ctl prune
        check_eq "the mirror goes once its session is gone" "$OUT" "$(printf 'removed\t%s' "$MIRROR/busy")"
fi
if gone "$MIRROR/busy"; then pass; else fail "the once-busy mirror is gone"; fi

# ---- saved: a restart does not bring them back ----

stop_daemon
check_eq "the daemon stops cleanly" "$?" 0
start_with_prune yes
if gone "$MIRROR/free" && gone "$MIRROR/busy"; then pass; else fail "pruned mirrors come back after a restart"; fi

# ---- prune = yes: the sampler prunes ----

make_cgroup /auto
check_run "import the new cgroup" 0 ctl import-cgroups --from "/$NAME"
if exists "$MIRROR/auto"; then pass; else fail "the new cgroup is mirrored"; fi
rmdir "$HIER/$NAME/auto"
if wait_for 10 gone "$MIRROR/auto"; then pass; else fail "prune = yes: the sampler removes the vanished mirror"; fi
if exists "$MIRROR"; then pass; else fail "the mirror of a cgroup still there stays"; fi

stop_daemon
start_with_prune yes
if gone "$MIRROR/auto"; then pass; else fail "the sampler's removal was saved"; fi
