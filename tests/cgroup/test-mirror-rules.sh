#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# The kernel cgroup mirrors as placement rules, through memacctctl on real
# kernel cgroups: after import-cgroups, `rule list` shows each mirror as a
# rule of kind mirror (a third column, "mirror": true in --json) beside the
# explicit rules (two columns, as scripts read them); `rule remove` of a
# mirrored cgroup is refused with what to do instead; and `hold auto` from
# a process in a cgroup made after the import, with auto-create = no,
# lands in the mirror of its nearest mirrored ancestor.
#
# What cannot run here says SKIP with the reason and exits 77: not root,
# no memory controller, the kernel refuses to make a cgroup.

set -u

if [[ $(id -u) != 0 ]]; then
        echo "SKIP: the mirror rules test needs root (it makes kernel cgroups)"
        exit 77
fi

V1=/sys/fs/cgroup/memory
V2=
while read -r _ mnt type _; do
        if [[ $type == cgroup2 ]]; then
                V2=$mnt
                break
        fi
done </proc/self/mounts
if [[ -e $V1/memory.limit_in_bytes ]]; then
        HIER=$V1
elif [[ -n $V2 ]] && grep -qw memory "$V2/cgroup.controllers" 2>/dev/null; then
        HIER=$V2
else
        echo "SKIP: no memory cgroup controller on this host (neither v1 at $V1 nor in cgroup2${V2:+ at $V2})"
        exit 77
fi
NAME=memacct-mrules-$$
if ! mkdir "$HIER/$NAME" 2>/dev/null; then
        echo "SKIP: the kernel refuses to make a cgroup in $HIER: $(mkdir "$HIER/$NAME" 2>&1)"
        exit 77
fi
MADE=("$HIER/$NAME") # parents first

# shellcheck source=../lib.sh
source "$(dirname "$0")/../lib.sh"
SOCK=$TMP/memacctd.sock

# Every process of our cgroups back to the root, then the cgroups, leaves first.
cleanup_cgroups() {
        local i d tries

        for ((i = ${#MADE[@]} - 1; i >= 0; i--)); do
                d=${MADE[i]}
                [[ -d $d ]] || continue
                for tries in 1 2 3 4 5 6 7 8 9 10; do
                        while read -r pid; do
                                [[ -n $pid ]] && echo "$pid" >"$HIER/cgroup.procs" 2>/dev/null
                        done <"$d/cgroup.procs"
                        rmdir "$d" 2>/dev/null && break
                        sleep 0.2
                done
                [[ -d $d ]] && echo "WARNING: cannot remove cgroup $d" >&2
        done
        return 0
}
trap 'rc=$?; cleanup_cgroups; (exit $rc); finish' EXIT

ctl() {
        "$MEMACCTCTL" --socket "$SOCK" "$@"
}

make_cgroup() {
        mkdir "$HIER/$NAME$1" && MADE+=("$HIER/$NAME$1")
}

TAB=$'\t'
MIRROR=/k/$NAME

rc=0
make_cgroup /a || rc=$?
check_eq "the test cgroups are made" "$rc" 0

cat >"$TMP/memacctd.conf" <<EOF
[cgroup]
prefix = /k
auto-create = no
EOF
"$MEMACCTD" --socket "$SOCK" --state-dir "$STATE" --workers 2 --config "$TMP/memacctd.conf" \
        --bus none >>"$DAEMON_LOG" 2>&1 &
DAEMON_PID=$!
if await_daemon "$SOCK" ctl show /; then pass; else fail "the daemon starts"; exit 1; fi

check_run "import-cgroups" 0 ctl import-cgroups --from "/$NAME"
check_run "an explicit rule" 0 ctl rule add "/$NAME/elsewhere" /k

# ---- listing ----
check_run "rule list" 0 ctl rule list
check_match "a mirror is a rule of kind mirror" "$OUT" "^/$NAME${TAB}$MIRROR${TAB}mirror\$"
check_match "every mirror is" "$OUT" "^/$NAME/a${TAB}$MIRROR/a${TAB}mirror\$"
check_match "an explicit rule keeps two columns" "$OUT" "^/$NAME/elsewhere${TAB}/k\$"
check_eq "sorted by cgroup" "$(grep "^/$NAME" <<<"$OUT" | cut -f1 | tr '\n' ' ')" \
        "/$NAME /$NAME/a /$NAME/elsewhere "
check_run "rule list --json" 0 ctl --json rule list
check_eq "--json: mirror true for a mirror" \
        "$(jget "[r['mirror'] for r in d if r['cgroup'] == '/$NAME/a'][0]" <<<"$OUT")" "True"
check_eq "--json: mirror false for an explicit rule" \
        "$(jget "[r['mirror'] for r in d if r['cgroup'] == '/$NAME/elsewhere'][0]" <<<"$OUT")" "False"

# ---- removing ----
check_run "rule remove of a mirror is refused" 1 ctl rule remove "/$NAME/a"
check_match "and says what to do" "$ERR" \
        "cgroup /$NAME/a is mirrored by group $MIRROR/a: remove the group, or let prune remove it"
check_run "the mirror is still listed" 0 ctl rule list
check_match "as a mirror" "$OUT" "^/$NAME/a${TAB}$MIRROR/a${TAB}mirror\$"
check_run "rule remove of an explicit rule" 0 ctl rule remove "/$NAME/elsewhere"

# ---- placement: the nearest mirrored ancestor ----
rc=0
make_cgroup /a/new || rc=$?
check_eq "a cgroup made after the import" "$rc" 0
IN_CGROUP='echo $$ >"$1/cgroup.procs" || exit 99; shift; exec "$@"'
bg "$TMP/hold.out" bash -c "$IN_CGROUP" _ "$HIER/$NAME/a/new" "$MEMACCTCTL" --socket "$SOCK" hold auto 1M
HOLD=$BG_PID
if wait_for 10 grep -q holding "$TMP/hold.out"; then pass; else fail "hold auto starts: $(cat "$TMP/hold.out")"; fi
check_match "hold auto lands in the parent's mirror (auto-create = no)" "$(cat "$TMP/hold.out")" \
        "^holding 1M in $MIRROR/a\$"
check_run "no mirror was made for the new cgroup" 1 ctl show "$MIRROR/a/new"
stop_bg "$HOLD" TERM >/dev/null 2>&1 || true
