#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# Placement rules end to end: a rule for this script's own kernel memory
# cgroup (as /proc/self/cgroup names it: v1's memory line, else the
# unified one) sends `memacctctl hold auto` to the rule's group, the rule
# survives a restart in <state-dir>/rules, only root adds or removes, and
# with the rule gone auto falls back to the mirror. When the kernel lets
# us make a child cgroup, a process in it lands by its parent's rule too.

# shellcheck source-path=SCRIPTDIR source=../lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

K=1024
NOBODY=65534

CG=$(mem_cgroup self) || skip_test "no memory cgroup line in /proc/self/cgroup"
[[ $(id -u) == 0 ]] || skip_test "adding rules and switching to nobody need root"

check_start_daemon || exit 1
ctl create /containers
ctl create /containers/c1
ctl create /other

check_run "a group that does not exist is refused" 1 ctl rule add "$CG" /containers/none
check_run "a relative cgroup is a usage error" 2 ctl rule add relative /containers/c1
check_run "nobody may not add a rule" 1 setpriv --reuid=$NOBODY --regid=$NOBODY --clear-groups \
        "${CTL[@]}" rule add "$CG" /containers/c1
check_run "root adds the rule" 0 ctl rule add "$CG" /containers/c1
if [[ $CG != / ]]; then
        check_run "a shorter rule, which the longer one beats" 0 ctl rule add / /other
fi
check_match "the rule is listed" "$(ctl rule list)" "^$CG	/containers/c1\$"
check_eq "listed as JSON" "$(ctl --json rule list | jget '[r["group"] for r in d if r["cgroup"] == "'"$CG"'"][0]')" \
        /containers/c1

bg "$TMP/hold.out" "${CTL[@]}" hold auto 1M
hold=$BG_PID
wait_for 10 file_has "$TMP/hold.out" '^holding' || fail "hold auto starts: $(cat "$TMP/hold.out")"
check_current_soon "hold auto lands in the rule's group" /containers/c1 $((1024 * K))
check_eq "and not in the shorter rule's" "$(current /other)" 0
stop_bg "$hold" INT || fail "the hold exits 0"
check_current_soon "the hold released" /containers/c1 0

# ---- a restart ----

check_stop_daemon
check_match "the rule is on disk" "$(cat "$STATE/rules")" "^$CG	/containers/c1\$"
check_start_daemon || exit 1
check_match "the rule after a restart" "$(ctl rule list)" "^$CG	/containers/c1\$"
bg "$TMP/hold2.out" "${CTL[@]}" hold auto 512K
hold=$BG_PID
wait_for 10 file_has "$TMP/hold2.out" '^holding' || fail "hold auto starts after the restart"
check_current_soon "hold auto after the restart" /containers/c1 $((512 * K))
stop_bg "$hold" INT || fail "the second hold exits 0"

# ---- a child cgroup, where the kernel lets us make one ----

mnt=
for m in /sys/fs/cgroup/memory /sys/fs/cgroup; do
        if [[ -d $m$CG && -w $m$CG ]]; then
                mnt=$m
                break
        fi
done
if [[ -n $mnt ]] && mkdir "$mnt$CG/memacct-rules-$$" 2>/dev/null; then
        child=$mnt$CG/memacct-rules-$$
        bg "$TMP/hold3.out" bash -c 'echo $$ >"$1/cgroup.procs" && exec "${@:2}"' _ "$child" \
                "${CTL[@]}" hold auto 256K
        hold=$BG_PID
        if wait_for 10 file_has "$TMP/hold3.out" '^holding'; then
                check_current_soon "a process in a child cgroup lands by its parent's rule" /containers/c1 \
                        $((256 * K))
        else
                echo "note: could not run in $child: $(cat "$TMP/hold3.out")"
        fi
        stop_bg "$hold" INT || true
        echo $$ >"$mnt$CG/cgroup.procs" 2>/dev/null || true
        rmdir "$child" 2>/dev/null || true
else
        echo "note: no writable cgroup below $CG: the child cgroup case is not run"
fi

# ---- removal ----

check_run "nobody may not remove a rule" 1 setpriv --reuid=$NOBODY --regid=$NOBODY --clear-groups \
        "${CTL[@]}" rule remove "$CG"
check_run "root removes the rule" 0 ctl rule remove "$CG"
check_run "a second removal: no such rule" 1 ctl rule remove "$CG"
check_nomatch "the rule is gone" "$(ctl rule list)" "^$CG	"
if [[ $CG != / ]]; then
        ctl rule remove /
fi
bg "$TMP/hold4.out" "${CTL[@]}" hold auto 1K
hold=$BG_PID
wait_for 5 file_has "$TMP/hold4.out" '^holding|memacctctl:' || true
check_eq "without a rule, auto no longer lands in the rule's group" "$(current /containers/c1)" 0
stop_bg "$hold" INT || true
check_eq "the rules file is empty" "$(grep -c . "$STATE/rules")" 2
check_stop_daemon
exit 0
