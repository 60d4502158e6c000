#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# The kernel cgroup mirror on REAL kernel cgroups, as root: cgroups made
# under a unique prefix (memacct-test-<pid>) in the memory hierarchy are
# imported with their limits mapped, re-imported (unchanged, then updated
# after a kernel limit changes); a process put into a kernel cgroup
# attaches with `hold auto` and lands in its mirror; kernel_current
# follows a process that allocates 64 MiB in a cgroup. Every cgroup made
# is removed at the end, also on failure (processes moved out first,
# leaves first).
#
# What cannot run here is said on a "SKIP: ... (reason)" line and counted
# as skipped, never as passed; the whole test exits 77 (skip) only when
# none of it can run (not root, no memory controller at all, the kernel
# refuses to make a cgroup).

set -u

# shellcheck source-path=SCRIPTDIR source=cgroup-lib.sh
source "$(dirname "$0")/cgroup-lib.sh" memacct-test "the cgroup test"

current_is_soon() {
        local v

        v=$(field "$1" 'd["current"]')
        [[ $v == "$2" ]]
}

# set_limits CGROUP MAX LOW: in the hierarchy's own files.
set_limits() {
        if ((VERSION == 1)); then
                echo "$2" >"$HIER/$NAME$1/memory.limit_in_bytes" &&
                        echo "$3" >"$HIER/$NAME$1/memory.soft_limit_in_bytes"
        else
                echo "$2" >"$HIER/$NAME$1/memory.max" && echo "$3" >"$HIER/$NAME$1/memory.low"
        fi
}

MiB=$((1024 * 1024))

# ---- the cgroups: /NAME/a (max 512M, low 128M), /NAME/a/b (max 256M) ----

rc=0
make_cgroup /a && make_cgroup /a/b && make_cgroup /c || rc=$?
check_eq "the test cgroups are made" "$rc" 0
rc=0
set_limits /a $((512 * MiB)) $((128 * MiB)) && set_limits /a/b $((256 * MiB)) $((64 * MiB)) || rc=$?
check_eq "the kernel takes the limits" "$rc" 0

# A private system bus too, to check the D-Bus side, when there is one.
try_bus busctl

write_config "auto-create = no"
if start_memacctd; then pass; else fail "the daemon starts"; exit 1; fi

# ---- import ----

check_run "import-cgroups" 0 ctl --json import-cgroups --from "/$NAME"
check_eq "the first import creates the 4 mirrors" \
        "$(jget '[d["created"], d["updated"], d["unchanged"]]' <<<"$OUT")" "[4, 0, 0]"
check_eq "a's max is memory.limit_in_bytes" "$(field "$MIRROR/a" 'd["max"]')" $((512 * MiB))
check_eq "a's low is memory.soft_limit_in_bytes" "$(field "$MIRROR/a" 'd["low"]')" $((128 * MiB))
check_eq "b's max" "$(field "$MIRROR/a/b" 'd["max"]')" $((256 * MiB))
check_eq "b's low" "$(field "$MIRROR/a/b" 'd["low"]')" $((64 * MiB))
check_eq "c is unlimited: max" "$(field "$MIRROR/c" 'd["max"]')" max
check_eq "c has no soft limit: low 0" "$(field "$MIRROR/c" 'd["low"]')" 0
check_match "a mirror shows kernel_current" "$(field "$MIRROR/a" 'd["kernel_current"]')" '^[0-9]+$'
check_eq "a plain group has no kernel_current" "$(field /k '"kernel_current" in d')" False
run ctl show "$MIRROR/a"
check_match "show prints memory.kernel_current for a mirror" "$OUT" '^memory\.kernel_current: [0-9]+$'
run ctl show /k
check_nomatch "show prints no kernel_current for a plain group" "$OUT" 'kernel_current'
run ctl tree /k
check_match "tree has a KERNEL column when it holds mirrors" "$(head -n1 <<<"$OUT")" 'HIGH +OWNER +KERNEL$'

check_run "re-import" 0 ctl import-cgroups --from "/$NAME" --under /k
check_eq "a re-import changes nothing" "$(head -n 4 <<<"$OUT")" $'created: 0\nupdated: 0\nunchanged: 4\nkept: 0'

set_limits /a/b $((192 * MiB)) $((64 * MiB))
check_run "import after a kernel limit changed" 0 ctl --json import-cgroups --from "/$NAME/a"
check_eq "the changed cgroup is updated, the rest unchanged" \
        "$(jget '[d["created"], d["updated"], d["unchanged"]]' <<<"$OUT")" "[0, 1, 1]"
check_eq "b's new max" "$(field "$MIRROR/a/b" 'd["max"]')" $((192 * MiB))

check_run "import of a missing cgroup fails" 1 ctl import-cgroups --from "/$NAME/nope"
check_match "with the reason" "$ERR" "no such cgroup"

# ---- the same on D-Bus ----

if [[ -n $BUS_ADDR ]]; then
        run mcall ImportCgroups ss "/$NAME" /k
        check_eq "D-Bus ImportCgroups gives the same counts" "$OUT" "uuu 0 0 4"
        check_match "KernelMemoryCurrent of a mirror" "$(prop "$MIRROR/a" KernelMemoryCurrent)" '^t [0-9]+$'
        check_eq "KernelMemoryCurrent of a plain group" "$(prop /k KernelMemoryCurrent)" "t 18446744073709551615"
        bg "$TMP/bushold.out" bash -c 'echo $$ >"$1/cgroup.procs" || exit 99; shift; exec "$@"' _ \
                "$HIER/$NAME/a" "$MEMACCTCTL" --bus="$BUS_ADDR" hold auto 3M
        BUSHOLD=$BG_PID
        if wait_for 10 grep -q holding "$TMP/bushold.out"; then
                pass
        else
                fail "hold auto over D-Bus: $(cat "$TMP/bushold.out")"
        fi
        check_eq "D-Bus Attach auto lands in the mirror" "$(field "$MIRROR/a" 'd["current"]')" $((3 * MiB))
        stop_bg "$BUSHOLD" TERM >/dev/null 2>&1 || true
        if wait_for 10 current_is_soon "$MIRROR/a" 0; then pass; else fail "the bus session's charge goes"; fi
else
        skip "D-Bus ImportCgroups, KernelMemoryCurrent and Attach auto: no dbus-daemon or busctl here"
fi

# ---- cgroup2 beside v1 (hybrid host) ----

if ((VERSION == 1)); then
        if [[ -z $V2 ]]; then
                skip "cgroup2 import: no cgroup2 is mounted on this host"
        elif ! grep -qw memory "$V2/cgroup.controllers" 2>/dev/null; then
                skip "cgroup2 import: cgroup2 at $V2 has no memory controller" \
                        "(controllers: $(tr '\n' ' ' <"$V2/cgroup.controllers")) - memory is bound to v1 here"
        fi
fi

# ---- placement: a process in a kernel cgroup attaches with "auto" ----

# bash -c "$IN_CGROUP" _ DIR CMD...: CMD, moved into the kernel cgroup DIR
# first (the same process: exec).
IN_CGROUP='echo $$ >"$1/cgroup.procs" || exit 99; shift; exec "$@"'
in_cgroup() {
        local cg=$1

        shift
        bash -c "$IN_CGROUP" _ "$HIER/$NAME$cg" "$@"
}

bg "$TMP/hold.out" bash -c "$IN_CGROUP" _ "$HIER/$NAME/a/b" "$MEMACCTCTL" --socket "$SOCK" hold auto 1M
HOLD=$BG_PID
if wait_for 10 grep -q holding "$TMP/hold.out"; then pass; else fail "hold auto starts: $(cat "$TMP/hold.out")"; fi
check_match "hold auto prints the group it resolved to" "$(cat "$TMP/hold.out")" "^holding 1M in $MIRROR/a/b\$"
check_eq "the session lands in the mirror of its kernel cgroup" "$(field "$MIRROR/a/b" 'd["current"]')" "$MiB"
stop_bg "$HOLD" TERM >/dev/null 2>&1 || true
if wait_for 10 current_is_soon "$MIRROR/a/b" 0; then pass; else fail "the charge leaves with the session"; fi

# Without a mirror of its own and auto-create = no, the nearest mirrored
# ancestor takes the session; with no mirrored ancestor either, it fails.
ctl remove "$MIRROR/c" >/dev/null 2>&1 || true
bg "$TMP/hold1.out" bash -c "$IN_CGROUP" _ "$HIER/$NAME/c" "$MEMACCTCTL" --socket "$SOCK" hold auto 1M
HOLD=$BG_PID
if wait_for 10 grep -q holding "$TMP/hold1.out"; then pass; else fail "hold auto from /c: $(cat "$TMP/hold1.out")"; fi
check_match "no mirror of /c, auto-create = no: the nearest mirrored ancestor" "$(cat "$TMP/hold1.out")" \
        "^holding 1M in $MIRROR\$"
check_eq "and no mirror of /c was made" "$(ctl show "$MIRROR/c" >/dev/null 2>&1 && echo made || echo none)" none
stop_bg "$HOLD" TERM >/dev/null 2>&1 || true
if mkdir "$HIER/$NAME-out" 2>/dev/null; then
        MADE+=("$HIER/$NAME-out")
        check_run "auto without any mirrored ancestor, auto-create = no" 1 \
                in_cgroup -out "$MEMACCTCTL" --socket "$SOCK" hold auto 1M
        check_match "says why" "$ERR" "no mirror of kernel cgroup /$NAME-out.*auto-create"
else
        skip "a cgroup outside the mirrored tree: mkdir $HIER/$NAME-out refused"
fi

write_config "auto-create = yes"
kill -HUP "$DAEMON_PID"
wait_for 10 grep -q "Configuration reloaded" "$DAEMON_LOG" || fail "the daemon reloads its configuration"
bg "$TMP/hold2.out" bash -c "$IN_CGROUP" _ "$HIER/$NAME/c" "$MEMACCTCTL" --socket "$SOCK" hold auto 2M
HOLD=$BG_PID
if wait_for 10 grep -q holding "$TMP/hold2.out"; then pass; else fail "hold auto with auto-create: $(cat "$TMP/hold2.out")"; fi
check_match "hold auto prints the mirror it made" "$(cat "$TMP/hold2.out")" "^holding 2M in $MIRROR/c\$"
check_eq "auto-create made the mirror and placed the session" "$(field "$MIRROR/c" 'd["current"]')" $((2 * MiB))
check_match "the new mirror has kernel_current" "$(field "$MIRROR/c" 'd["kernel_current"]')" '^[0-9]+$'
stop_bg "$HOLD" TERM >/dev/null 2>&1 || true

# ---- a refused auto attach changes nothing, auto-create or not ----

# Another uid in a cgroup with no mirror: auto-create makes mirrors for
# root only, so its attach is refused, and before that nothing may be
# imported, taken over or saved. Root made a group where the mirror
# would go, with a limit of its own.
if make_cgroup /d && setpriv --help >/dev/null 2>&1; then
        check_run "root makes a group at the mirror's path" 0 ctl create "$MIRROR/d" max=3M
        # The tree (but kernel_current, which the sampler moves every
        # second) and the saved state, byte for byte.
        snapshot() {
                ctl --json tree / | jget '[{k: v for k, v in g.items() if k != "kernel_current"} for g in d]'
                cat "$STATE/state" "$STATE/journal" 2>/dev/null | sha256sum
        }
        before=$(snapshot)
        check_run "another uid's hold auto, auto-create = yes, is refused" 1 \
                in_cgroup /d setpriv --reuid=65534 --regid=65534 --clear-groups \
                "$MEMACCTCTL" --socket "$SOCK" hold auto 1M
        check_match "saying mirrors are made for root only" "$ERR" "auto-create makes one for root only|permission denied"
        sleep 0.3 # a save, were there one to make
        check_eq "the tree and the saved state are byte for byte as before" "$(snapshot)" "$before"
        check_eq "root's group keeps its limit" "$(field "$MIRROR/d" 'd["max"]')" $((3 * MiB))
        check_eq "and is no mirror (a mirror shows kernel_current)" \
                "$(field "$MIRROR/d" '"kernel_current" in d')" False
else
        echo "SKIP (the refused auto attach): cannot make $HIER/$NAME/d or no setpriv"
fi

# ---- kernel_current follows a process that allocates in the cgroup ----

kernel_current() {
        field "$MIRROR/a/b" 'd["kernel_current"]'
}
kernel_above() {
        local v

        v=$(kernel_current)
        [[ $v =~ ^[0-9]+$ ]] && ((v >= $1))
}
kernel_below() {
        local v

        v=$(kernel_current)
        [[ $v =~ ^[0-9]+$ ]] && ((v < $1))
}

BEFORE=$(kernel_current)
bg "$TMP/alloc.out" bash -c "$IN_CGROUP" _ "$HIER/$NAME/a/b" "$PY" -c '
import sys, time
b = b"\x01" * (64 << 20)   # written, so every page is charged
print("allocated", flush=True)
time.sleep(60)'
ALLOC=$BG_PID
if wait_for 10 grep -q allocated "$TMP/alloc.out"; then
        pass
        if wait_for 10 kernel_above $((64 * MiB)); then
                pass
        else
                fail "kernel_current reaches 64 MiB while the process holds it (before: $BEFORE, now: $(kernel_current))"
        fi
        stop_bg "$ALLOC" KILL >/dev/null 2>&1 || true
        if wait_for 10 kernel_below $((32 * MiB)); then
                pass
        else
                fail "kernel_current falls when the process is gone (now: $(kernel_current))"
        fi
else
        fail "the allocating process runs in the cgroup: $(cat "$TMP/alloc.out")"
fi
check_eq "memacctd's own current is apart from the kernel's" "$(field "$MIRROR/a/b" 'd["current"]')" 0

rc=0
stop_daemon || rc=$?
check_eq "the daemon exits 0 on SIGTERM" "$rc" 0
echo "$SKIPPED skipped"
