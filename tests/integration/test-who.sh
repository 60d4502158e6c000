#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# memacctctl sessions: who holds what. Sessions of root and of a second
# uid (through setpriv, in a group delegated to it by create ... owner=)
# hold charges; root's listing shows every session with its pid, uid,
# comm, transport, group and bytes; the second uid sees its own and those
# attached in its subtree, not root's elsewhere; PATH narrows the list to
# a subtree. The listing is printed, as a terminal shows it.

# shellcheck source-path=SCRIPTDIR source=../lib.sh
source "$(dirname "$0")/../lib.sh"

if [[ $(id -u) != 0 ]]; then
        echo "SKIP: not root: cannot switch uids"
        exit 77
fi
K=1024
NOBODY=65534
as_nobody() {
        setpriv --reuid=$NOBODY --regid=$NOBODY --clear-groups "$@"
}
nctl() {
        as_nobody "$MEMACCTCTL" --socket "$SOCK" "$@"
}
# count_is N ARGS...: `sessions ARGS` lists N sessions.
count_is() {
        local n=$1

        shift
        [[ $(ctl --json sessions "$@" | jget 'len(d)') == "$n" ]]
}

check_start_daemon || exit 1
ctl create /srv max=64M
ctl create /srv/web
ctl create /deleg owner=$NOBODY

bg "$TMP/h1.out" "$MEMACCTCTL" --socket "$SOCK" hold /srv/web $((64 * K))
ROOT_HOLD=$BG_PID
bg "$TMP/h2.out" setpriv --reuid=$NOBODY --regid=$NOBODY --clear-groups \
        "$MEMACCTCTL" --socket "$SOCK" hold /deleg $((16 * K))
NOBODY_HOLD=$BG_PID
# Root's hold in the delegated subtree: nobody answers for it.
bg "$TMP/h3.out" "$MEMACCTCTL" --socket "$SOCK" hold /deleg $((8 * K))
ROOT_IN_DELEG=$BG_PID
# The two holds and the listing's own session.
check_run "three holds are listed" 0 wait_for 10 count_is 4

check_run "sessions" 0 ctl sessions
echo "--- memacctctl sessions (as root):"
echo "$OUT"
echo "---"
line_of() { # the line of a pid; the hold's pid is memacctctl's own (setpriv execs it)
        grep -E "^pid=$1 " <<<"$OUT"
}
check_match "root's hold: pid, uid, comm, transport, group, bytes" "$(line_of $ROOT_HOLD)" \
        "^pid=$ROOT_HOLD uid=0 comm=memacctctl transport=socket group=/srv/web bytes=$((64 * K)) stock=0\$"
check_match "nobody's hold" "$(line_of $NOBODY_HOLD)" \
        "^pid=$NOBODY_HOLD uid=$NOBODY comm=memacctctl transport=socket group=/deleg bytes=$((16 * K)) stock=0\$"
check_match "the listing's own session is not attached" "$OUT" "uid=0 comm=memacctctl transport=socket group= bytes=0 stock=0"
check_eq "every line is key=value fields" "$(grep -cvE '^pid=[0-9]+ uid=[0-9]+ comm=[^ ]* transport=(socket|bus) group=[^ ]* bytes=[0-9]+ stock=[0-9]+$' <<<"$OUT")" 0

check_run "sessions --json" 0 ctl --json sessions /srv
check_eq "--json, a subtree: root's web hold alone" \
        "$(jget '[[s["pid"], s["uid"], s["comm"], s["transport"], s["group"], s["bytes"], s["stock"]] for s in d]' <<<"$OUT")" \
        "[[$ROOT_HOLD, 0, \"memacctctl\", \"socket\", \"/srv/web\", $((64 * K)), 0]]"

check_run "sessions as the delegate" 0 nctl sessions
echo "--- memacctctl sessions (as uid $NOBODY):"
echo "$OUT"
echo "---"
check_eq "it sees its hold, root's in its subtree and its own listing" "$(wc -l <<<"$OUT")" 3
check_match "root's hold in /deleg is there" "$OUT" "^pid=$ROOT_IN_DELEG uid=0 .* group=/deleg bytes=$((8 * K)) "
check_nomatch "root's hold elsewhere is not" "$OUT" "group=/srv"
check_run "a group that does not exist" 1 ctl sessions /nope
check_run "a relative path is a usage error" 2 ctl sessions srv

stop_bg "$ROOT_IN_DELEG" INT
stop_bg "$NOBODY_HOLD" INT
stop_bg "$ROOT_HOLD" INT
check_run "the holds are gone" 0 wait_for 10 count_is 1
check_stop_daemon
exit 0
