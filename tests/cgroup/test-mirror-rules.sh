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

# shellcheck source-path=SCRIPTDIR source=cgroup-lib.sh
source "$(dirname "$0")/cgroup-lib.sh" memacct-mrules "the mirror rules test"

TAB=$'\t'

rc=0
make_cgroup /a || rc=$?
check_eq "the test cgroups are made" "$rc" 0

write_config "auto-create = no"
BUS_ARGS=(--bus none)
if start_memacctd; then pass; else fail "the daemon starts"; exit 1; fi

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
