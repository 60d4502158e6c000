#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# The bus side of what tests/integration/test-attach.sh checks on the
# socket: Attach returns the group the daemon chose for "auto" (a
# placement rule for this script's own kernel memory cgroup), memacctctl
# --bus hold prints it, memacct_attached_group() reads it on a bus
# handle; and $MEMACCT_BUS: a program that calls memacct_connect(NULL)
# under memacctctl run --bus reaches the daemon over that bus, attached to
# the transient group, where its charge lands.

# shellcheck source-path=SCRIPTDIR source=../lib.sh
source "$(dirname "$0")/../lib.sh"

: "${MEMACCT_RUN_HELPER:?MEMACCT_RUN_HELPER must name memacct-run-helper}"
H=$MEMACCT_RUN_HELPER
K=1024

CG=$(mem_cgroup self) || skip_test "no memory cgroup line in /proc/self/cgroup"
[[ $(id -u) == 0 ]] || skip_test "adding a placement rule needs root"

check_start_both || exit 1
ctl_sock create /containers
ctl_sock create /containers/abc
check_run "a rule for our own cgroup" 0 ctl_sock rule add "$CG" /containers/abc

# ---- Attach's reply ----

check_run "busctl: Attach returns the group it chose" 0 \
        busctl --address="$BUS" call org.memacct1 /org/memacct1 org.memacct1.Manager Attach s auto
check_eq "as one string" "$OUT" 's "/containers/abc"'

bg "$TMP/hold.out" "${CTL_BUS[@]}" hold auto 1M
hold=$BG_PID
wait_for 10 file_has "$TMP/hold.out" '^holding' || fail "hold auto starts: $(cat "$TMP/hold.out")"
check_eq "hold auto over the bus prints the rule's group" "$(cat "$TMP/hold.out")" \
        "attached to /containers/abc
holding 1M in /containers/abc"
check_current_soon "and the charge is there" /containers/abc $((1024 * K))
stop_bg "$hold" INT || fail "the hold exits 0"

# ---- $MEMACCT_BUS, memacct_attached_group() on a bus handle ----

OUT=$(env -u MEMACCT_SOCKET -u MEMACCT_GROUP MEMACCT_BUS="$BUS" "$H" server - group - attach auto group - 2>&1)
check_match "memacct_connect(NULL) with \$MEMACCT_BUS is a bus handle" "$OUT" '^server org\.memacct1 :'
check_match "no group before an attach" "$OUT" '^group: ENOTCONN$'
check_match "after attach auto, the rule's group" "$OUT" '^attached to /containers/abc$'
OUT=$(env MEMACCT_SOCKET="$SOCK" MEMACCT_BUS="$BUS" "$H" server - 2>&1)
check_match "\$MEMACCT_SOCKET wins over \$MEMACCT_BUS" "$OUT" '^server memacctd '

bg "$TMP/run.out" env -u MEMACCT_SOCKET "${CTL_BUS[@]}" run --name busjob max=256M -- \
        "$H" server - group - charge $((256 * K)) ready "$TMP/r1" wait "$TMP/g1"
run=$BG_PID
if wait_for 10 test -e "$TMP/r1"; then
        pass
else
        fail "run --bus starts its command: $(cat "$TMP/run.out")"
fi
check_match "the command under run --bus is on the bus" "$(cat "$TMP/run.out")" '^server org\.memacct1 :'
check_match "attached to its transient group" "$(cat "$TMP/run.out")" '^attached to /run\.slice/busjob$'
check_match "its charge succeeds" "$(cat "$TMP/run.out")" "^charged $((256 * K))\$"
check_current_soon "and lands in the transient group" /run.slice/busjob $((256 * K))
: >"$TMP/g1"
rc=0
wait "$run" || rc=$?
check_eq "run --bus exits with the command's status" "$rc" 0

ctl_sock rule remove "$CG"
rc=0
stop_daemon || rc=$?
check_eq "the daemon exits 0" "$rc" 0
exit 0
