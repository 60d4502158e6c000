#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# Delegation from the command line: `create PATH owner=USER` gives a
# subtree to another uid (by name or by number), which then works in it
# through setpriv; `set PATH owner=...` gives it to someone else or takes
# it back; show, tree and --json print the owner; the owner outlives a
# restart. A delegate may take a group below its subtree back for itself
# and give it to nobody else.

# shellcheck source-path=SCRIPTDIR source=../lib.sh
source "$(dirname "$0")/../lib.sh"

if [[ $(id -u) != 0 ]]; then
        echo "SKIP: not root: cannot switch uids"
        exit 77
fi
NOBODY=65534
STRANGER=65533
NOBODY_NAME=$(getent passwd $NOBODY | cut -d: -f1)
if [[ -z $NOBODY_NAME ]]; then
        echo "SKIP: uid $NOBODY has no name here"
        exit 77
fi
as_uid() {
        local uid=$1

        shift
        setpriv --reuid="$uid" --regid="$uid" --clear-groups "$MEMACCTCTL" --socket "$SOCK" "$@"
}

check_start_daemon || exit 1

# ---- create ... owner= ----
check_run "create owner=NAME" 0 ctl create /deleg max=8M owner="$NOBODY_NAME"
check_eq "the group is the user's" "$(field /deleg 'd["owner"]')" $NOBODY
check_eq "--json names the owner" "$(field /deleg 'd["owner_name"]')" "$NOBODY_NAME"
check_eq "and the limits are set in the same step" "$(field /deleg 'd["max"]')" $((8 * 1024 * 1024))
check_run "show" 0 ctl show /deleg
check_eq "show prints the owner" "$(grep '^owner:' <<<"$OUT")" "owner: $NOBODY ($NOBODY_NAME)"
check_run "create owner=UID without a name" 0 ctl create /byuid owner=$STRANGER
check_eq "a uid as it is" "$(field /byuid 'd["owner"]')" $STRANGER
check_eq "--json owner_name is null for a uid without a name" "$(field /byuid 'd["owner_name"]')" None
check_run "tree" 0 ctl tree /
check_match "tree has an OWNER column" "$(head -n1 <<<"$OUT")" ' OWNER$'
check_match "tree names the owner" "$(grep -E '^  deleg ' <<<"$OUT")" " $NOBODY_NAME\$"
check_match "tree gives a nameless owner's uid" "$(grep -E '^  byuid ' <<<"$OUT")" " $STRANGER\$"
check_match "a root group's owner is -" "$(grep -E '^/ ' <<<"$OUT")" ' -$'

check_run "an unknown user is a usage error" 2 ctl create /x owner=no-such-user-here
check_match "which says so" "$ERR" "unknown user or invalid uid in 'owner=no-such-user-here'"
check_run "owner= twice is a usage error" 2 ctl create /x owner=1 owner=2
check_run "an unknown key names owner among the keys" 2 ctl create /x own=1
check_match "the keys" "$ERR" 'keys: max high low min owner'

# ---- the delegate works in it ----
check_run "the delegate creates below" 0 as_uid $NOBODY create /deleg/job max=1M
check_run "and charges there" 0 as_uid $NOBODY charge /deleg/job 4096
check_run "a delegate cannot give a group to another uid" 1 as_uid $NOBODY set /deleg/job owner=$STRANGER
check_match "refused: only root delegates" "$ERR" 'only root delegates to another uid'
check_run "nor take its own delegated group" 1 as_uid $NOBODY set /deleg owner=$NOBODY
check_run "another uid may not set the owner" 1 as_uid $STRANGER set /deleg owner=$STRANGER

# ---- set ... owner= ----
check_run "root gives /deleg/job to the stranger" 0 ctl set /deleg/job owner=$STRANGER
check_eq "the owner changed" "$(field /deleg/job 'd["owner"]')" $STRANGER
check_run "the stranger now creates below it" 0 as_uid $STRANGER create /deleg/job/s
check_run "the delegate above takes it back" 0 as_uid $NOBODY set /deleg/job owner=$NOBODY_NAME
check_eq "back to the delegate" "$(field /deleg/job 'd["owner"]')" $NOBODY
check_run "set limits and owner in one command" 0 ctl set /byuid max=2M owner=0
check_eq "the limits" "$(field /byuid 'd["max"]')" $((2 * 1024 * 1024))
check_eq "the owner: root's again" "$(field /byuid 'd["owner"]')" 0
check_run "the old owner may no longer create there" 1 as_uid $STRANGER create /byuid/s
check_run "the root's owner is refused" 1 ctl set / owner=$NOBODY
check_match "with the reason" "$ERR" 'the root is root'"'"'s'

# ---- saved ----
check_stop_daemon
check_start_daemon || exit 1
check_eq "the owner given by set survives a restart" "$(field /deleg/job 'd["owner"]')" $NOBODY
check_eq "the owner given by create survives a restart" "$(field /deleg 'd["owner"]')" $NOBODY
check_eq "the owner taken back survives a restart" "$(field /byuid 'd["owner"]')" 0
check_run "the delegate still works in it" 0 as_uid $NOBODY create /deleg/job2

check_stop_daemon
exit 0
