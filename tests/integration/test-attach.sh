#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# What a client learns over the socket of where it was attached and of who
# raised an event: the Attach reply names the group the daemon chose for
# "auto" (a placement rule for this script's own kernel memory cgroup),
# memacctctl hold prints it, memacct_attached_group() reads it (directly
# and under memacctctl run), and memacctctl watch ends each event a
# request raised with "by pid N uid U" of that request's process
# (--json: pid and uid). tests/dbus-client/test-dbus-attach.sh is the bus's.

# shellcheck source-path=SCRIPTDIR source=../lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

: "${MEMACCT_RUN_HELPER:?MEMACCT_RUN_HELPER must name memacct-run-helper}"
H=$MEMACCT_RUN_HELPER
K=1024

CG=$(mem_cgroup self) || skip_test "no memory cgroup line in /proc/self/cgroup"
[[ $(id -u) == 0 ]] || skip_test "adding a placement rule needs root"

check_start_daemon || exit 1
ctl create /containers
ctl create /containers/abc
ctl create /plain
check_run "a rule for our own cgroup" 0 ctl rule add "$CG" /containers/abc

# ---- memacctctl hold ----

bg "$TMP/hold.out" "${CTL[@]}" hold auto 1M
hold=$BG_PID
wait_for 10 file_has "$TMP/hold.out" '^holding' || fail "hold auto starts: $(cat "$TMP/hold.out")"
check_eq "hold auto prints the group the rule chose, then what it holds there" "$(cat "$TMP/hold.out")" \
        "attached to /containers/abc
holding 1M in /containers/abc"
check_current_soon "and the charge is there" /containers/abc $((1024 * K))
stop_bg "$hold" INT || fail "the hold exits 0"

bg "$TMP/hold2.out" "${CTL[@]}" hold /plain 64K
hold=$BG_PID
wait_for 10 file_has "$TMP/hold2.out" '^holding' || fail "hold /plain starts: $(cat "$TMP/hold2.out")"
check_eq "hold of a path prints that group" "$(cat "$TMP/hold2.out")" "attached to /plain
holding 64K in /plain"
stop_bg "$hold" INT || fail "the second hold exits 0"

# ---- memacct_attached_group() ----

OUT=$(env -u MEMACCT_GROUP -u MEMACCT_BUS MEMACCT_SOCKET="$SOCK" "$H" group - attach auto group - \
        attach /nowhere group - 2>&1)
check_eq "before an attach there is none; after, the group the daemon chose; a refused one changes nothing" \
        "$OUT" "group: ENOTCONN
attached to /containers/abc
attach refused: ENOENT
attached to /containers/abc"
OUT=$(env -u MEMACCT_BUS MEMACCT_SOCKET="$SOCK" MEMACCT_GROUP=/plain "$H" group - 2>&1)
check_eq "the attach of \$MEMACCT_GROUP at connect is read too" "$OUT" "attached to /plain"
check_run "under memacctctl run" 0 "${CTL[@]}" run --name attach-t -- "$H" group - charge $((8 * K))
check_eq "the command reads its transient group" "$OUT" "attached to /run.slice/attach-t
charged $((8 * K))"

# ---- memacctctl watch: who raised it ----

ctl create /w max=100K
bg "$TMP/watch.out" "${CTL[@]}" watch /w
watcher=$BG_PID
bg "$TMP/watchj.out" "${CTL[@]}" --json watch /w
watcherj=$BG_PID
sleep 1 # subscribed once watch waits
# A charger whose pid we know: the shell that execs memacctctl.
bash -c 'echo $$ >"$1"; exec "${@:2}"' _ "$TMP/charger.pid" "${CTL[@]}" charge /w 200K >/dev/null 2>&1 || true
charger=$(cat "$TMP/charger.pid")
wait_for 10 file_has "$TMP/watch.out" ' /w max ' || true
wait_for 10 file_has "$TMP/watchj.out" '"max"' || true
stop_bg "$watcher" INT || fail "watch exits 0"
stop_bg "$watcherj" INT || fail "watch --json exits 0"
check_match "watch ends the line with the charger's pid and uid" "$(cat "$TMP/watch.out")" \
        "^[^ ]+ /w max [0-9]+ by pid $charger uid 0\$"
check_eq "watch --json has them as pid and uid" \
        "$(grep -m1 '"max"' "$TMP/watchj.out" | jget '"%s %s" % (d["pid"], d["uid"])')" "$charger 0"

ctl rule remove "$CG"
check_stop_daemon
exit 0
