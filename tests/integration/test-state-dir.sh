#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# The state directory goes away under a running daemon: removed (rm -rf,
# as tmpfiles or an admin might) or renamed. write(2) and fdatasync(2) on
# the journal still succeed, into a file no restart will find, so the
# daemon must know: from the first save after, every durable change is
# refused as for a full disk, and nothing it acknowledged is lost: after
# kill -9 and a restart on the directory, every change answered OK is
# there. Once the directory is back the state is written anew and
# changes are accepted again, under load of kept charges throughout.

source "$(dirname "$0")/../lib.sh"

check_start_daemon || exit 1

# ok_groups: the groups created with an OK so far (recorded by make).
OK_GROUPS=()
make() {
        if "$MEMACCTCTL" --socket "$SOCK" create "$1" >/dev/null 2>"$TMP/make.err"; then
                OK_GROUPS+=("$1")
                return 0
        fi
        return 1
}

check_run "a group while the directory is there" 0 ctl create /before
OK_GROUPS+=(/before)
for i in 1 2 3; do make "/early$i" || fail "create /early$i: $(cat "$TMP/make.err")"; done

# ---- removed ----

rm -rf "$STATE"
refused=0
for i in $(seq 1 20); do
        if make "/gone$i"; then
                :
        else
                refused=$((refused + 1))
        fi
done
# The first save after the removal may be the one that finds it out; from
# then on every durable change is refused.
check_run "a create once the directory is gone is refused" 1 ctl create /gone-last
check_match "saying the state cannot be saved" "$ERR" "cannot be saved"
check_eq "most creates after the removal were refused" "$((refused >= 19))" 1
check_match "the log says why" "$(<"$DAEMON_LOG")" "find the journal: the directory is gone or replaced"
check_run "reads still work" 0 ctl show /before

# ---- kill -9: nothing acknowledged is lost ----

kill -KILL "$DAEMON_PID"
wait "$DAEMON_PID" 2>/dev/null || true
DAEMON_PID=
# The directory as it was before the removal is gone with it: what was
# acknowledged before the removal was saved there; put it back to see.
check_eq "the state directory is not there" "$([[ -e $STATE ]] && echo yes || echo no)" no
mkdir -p "$STATE"
check_start_daemon || exit 1
# The OKs given after the removal were for changes the daemon knew were
# not saved only if it said OK: none may be missing now that it restarted
# on an empty directory, so there must be none.
lost=()
for g in "${OK_GROUPS[@]}"; do
        case $g in /gone*) ctl show "$g" >/dev/null 2>&1 || lost+=("$g") ;; esac
done
check_eq "no create acknowledged after the removal is lost" "${lost[*]:-}" ""

# ---- renamed, then back ----

check_run "a group on the new directory" 0 ctl create /fresh
bg "$TMP/hold.out" "$MEMACCTCTL" --socket "$SOCK" hold /fresh 1M
mv "$STATE" "$STATE.moved"
for i in $(seq 1 10); do make "/moved$i" || true; done
check_run "after a rename, a create is refused" 1 ctl create /moved-last
check_match "saying so" "$ERR" "cannot be saved"
mv "$STATE.moved" "$STATE"
if wait_for 10 ctl create /back; then pass; else fail "changes are accepted again once the directory is back"; fi
check_match "the log says so" "$(<"$DAEMON_LOG")" "State saved again to"
kill -KILL "$DAEMON_PID"
wait "$DAEMON_PID" 2>/dev/null || true
DAEMON_PID=
check_start_daemon || exit 1
lost=()
for g in /fresh /back "${OK_GROUPS[@]}"; do
        case $g in /fresh | /back | /moved*) ctl show "$g" >/dev/null 2>&1 || lost+=("$g") ;; esac
done
check_eq "after kill -9, every create acknowledged around the rename is there" "${lost[*]:-}" ""
check_stop_daemon
