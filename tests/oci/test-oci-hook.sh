#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# memacctctl oci-hook against a real memacctd: the state JSON that runc and
# crun pass to createRuntime and poststop hooks (tests/oci/fixtures, @PID@
# replaced by a live process), the group and limits it makes, the move of
# the container's pid, delete releasing kept charges, and every malformed
# state refused with a clear message and no group left behind.
#
# Environment: MEMACCTD, MEMACCTCTL, OCI_FIXTURES (tests/oci/meson.build).

set -euo pipefail

# shellcheck source-path=SCRIPTDIR source=../integration/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../integration/lib.sh"

: "${OCI_FIXTURES:?OCI_FIXTURES must name tests/oci/fixtures}"

# fixture NAME PID: the fixture with @PID@ replaced, as a file; prints its path.
fixture() {
        local out=$TMP/$1
        sed "s/@PID@/$2/g" "$OCI_FIXTURES/$1" >"$out"
        echo "$out"
}

# hook ACTION FILE [OPTIONS...]: the hook with FILE on stdin (RC, OUT, ERR).
hook() {
        local action=$1 file=$2

        shift 2
        run "$MEMACCTCTL" --socket "$SOCK" "$@" oci-hook "$action" <"$file"
}

# paths: every group path, in order.
paths() {
        ctl --json tree / | jget '" ".join(g["path"] for g in d)'
}

exists() {
        ctl show "$1" >/dev/null 2>&1
}

check_exists() {
        if exists "$2"; then pass; else fail "$1: $2 does not exist"; fi
}

check_gone() {
        if exists "$2"; then fail "$1: $2 still exists"; else pass; fi
}

# start_holder SIZE: a "container" process with a memacctd session holding
# SIZE in /; its pid in HOLDER.
start_holder() {
        bg "$TMP/holder.$1.out" "$MEMACCTCTL" --socket "$SOCK" hold / "$1"
        HOLDER=$BG_PID
        if wait_for 10 file_has "$TMP/holder.$1.out" '^holding'; then
                pass
        else
                fail "the holder of $1 starts: $(cat "$TMP/holder.$1.out")"
        fi
}

check_start_daemon

# A live pid for the fixtures that must fail before it matters.
bg "$TMP/sleep.out" sleep 300
SLEEPER=$BG_PID

# ---- malformed states: exit 1, a message naming the field, no group ----

# bad FIXTURE ACTION ERE: refused, ERE on stderr, the tree unchanged.
bad() {
        local file before

        file=$(fixture "$1" "$SLEEPER")
        before=$(paths)
        hook "$2" "$file"
        check_eq "$1 ($2): exit status (stderr: $ERR)" "$RC" 1
        check_match "$1 ($2): message" "$ERR" "$3"
        check_eq "$1 ($2): no group left behind" "$(paths)" "$before"
}

malformed() {
        bad bad-not-json.json create '^memacctctl: oci-hook: state JSON: not JSON'
        bad bad-not-json.json delete '^memacctctl: oci-hook: state JSON: not JSON'
        bad bad-truncated.json create 'state JSON: truncated'
        bad bad-trailing.json create 'state JSON: not JSON: unexpected character at byte [0-9]+'
        bad bad-not-object.json create 'state JSON: an array, not an object'
        bad bad-id-missing.json create 'state JSON: "id" missing'
        bad bad-id-missing.json delete 'state JSON: "id" missing'
        bad bad-id-slash.json create "\"id\" 'evil/\.\./\.\./x' is not a valid group name"
        bad bad-id-slash.json delete "\"id\" 'evil/\.\./\.\./x' is not a valid group name"
        bad bad-id-dotdot.json create "\"id\" '\.\.' is not a valid group name: '\.' and '\.\.'"
        bad bad-id-dotdot.json delete "\"id\" '\.\.' is not a valid group name"
        bad bad-id-empty.json create "\"id\" '' is not a valid group name: empty"
        bad bad-id-number.json create '"id" is an integer, not a string'
        bad bad-pid-missing.json create '"pid" missing'
        bad bad-pid-negative.json create '"pid" -5 is not a positive pid'
        bad bad-pid-zero.json create '"pid" 0 is not a positive pid'
        bad bad-pid-string.json create '"pid" is a string, not an integer'
        bad bad-annotation-size.json create "annotation org\.memacct\.high: invalid size 'lots'"
        bad bad-annotation-unknown.json create 'annotation org\.memacct\.maximum: unknown'
        bad bad-annotation-type.json create 'annotation org\.memacct\.low: an integer, not a string'
        bad bad-deep-nesting.json create 'state JSON: nested deeper than'
        bad empty.json create 'state JSON: empty input'
        bad huge.json create 'state JSON: larger than 1048576 bytes'
        bad huge.json delete 'state JSON: larger than 1048576 bytes'
}

# Generated here, not kept in the tree: empty input, and a state that is
# valid but for its size (a bundle path past the 1 MiB bound).
GEN=$TMP/gen
mkdir -p "$GEN"
: >"$GEN/empty.json"
/usr/bin/python3 -I -S -c '
import json, sys
json.dump({"ociVersion": "1.0.2", "id": "huge", "status": "created", "pid": 1,
           "bundle": "/" + "b" * (1024 * 1024)}, sys.stdout)' >"$GEN/huge.json"
cp "$OCI_FIXTURES"/*.json "$GEN/"
OCI_FIXTURES=$GEN

# On a fresh daemon (no prefix group yet: it must not be made either) ...
check_eq "a fresh daemon has only /" "$(paths)" "/"
malformed
check_eq "after the malformed states: still only /" "$(paths)" "/"

# ---- usage errors: exit 2, before reading stdin ----

check_run "oci-hook without an action" 2 ctl oci-hook </dev/null
check_match "oci-hook without an action: message" "$ERR" 'missing action'
check_run "oci-hook frobnicate" 2 ctl oci-hook frobnicate </dev/null
check_match "oci-hook frobnicate: message" "$ERR" "unknown action 'frobnicate'"
check_run "oci-hook create extra" 2 ctl oci-hook create extra </dev/null
check_run "--prefix relative" 2 ctl oci-hook create --prefix containers </dev/null
check_match "--prefix relative: message" "$ERR" "--prefix 'containers'"
check_run "--prefix with ..'" 2 ctl oci-hook create --prefix /a/../b </dev/null
check_run "--prefix for show" 2 ctl show / --prefix /x
check_eq "after the usage errors: still only /" "$(paths)" "/"

# ---- create: limits from the annotations, the pid's session moved ----

start_holder 4K
container=$HOLDER
file=$(fixture create-annotations.json "$container")
hook create "$file"
check_eq "create web-1: exit status (stderr: $ERR)" "$RC" 0
check_match "create web-1: says the session moved" "$OUT" 'created /containers/web-1; pid [0-9]+: 1 session moved'
check_exists "the prefix group" /containers
check_eq "web-1 max" "$(field /containers/web-1 'd["max"]')" $((64 * 1024 * 1024))
check_eq "web-1 high" "$(field /containers/web-1 'd["high"]')" $((48 * 1024 * 1024))
check_eq "web-1 low" "$(field /containers/web-1 'd["low"]')" $((8 * 1024 * 1024))
check_eq "web-1 min" "$(field /containers/web-1 'd["min"]')" 4096
check_eq "the prefix group has no limits" "$(field /containers 'd["max"]')" max
# The holder's 4K came along with its session.
check_eq "web-1 holds the container's bytes" "$(current /containers/web-1)" 4096
check_eq "web-1 has the container's session" \
        "$(ctl --json tree /containers | jget '[g["path"] for g in d if g["current"] == 4096]')" \
        '["/containers", "/containers/web-1"]'

# The same id again: refused, the running container's group untouched.
hook create "$file"
check_eq "create web-1 again: exit status" "$RC" 1
check_match "create web-1 again: message" "$ERR" 'create /containers/web-1: the group exists already'
check_eq "web-1 still holds the container's bytes" "$(current /containers/web-1)" 4096
check_eq "web-1 keeps its max" "$(field /containers/web-1 'd["max"]')" $((64 * 1024 * 1024))

# The malformed states again, now that the prefix exists.
malformed

# ---- create for a pid without a session: the group is made, a note ----

file=$(fixture create-plain.json "$SLEEPER")
hook create "$file"
check_eq "create db (no session): exit status (stderr: $ERR)" "$RC" 0
check_match "create db (no session): the note" "$ERR" "pid $SLEEPER has no memacctd session yet"
check_exists "create db (no session)" "/containers/db_2:x@y"
check_eq "db has no max" "$(field '/containers/db_2:x@y' 'd["max"]')" max

# ---- a move the destination refuses: the group is removed again ----

start_holder 16K
refused_holder=$HOLDER
before=$(paths)
file=$(fixture create-max-only.json "$refused_holder")
hook create "$file"
check_eq "create tight (8K max, 16K held): exit status" "$RC" 1
check_match "create tight: message" "$ERR" 'move of the container.s pid to /containers/tight'
check_gone "create tight: no half-created group" /containers/tight
check_eq "create tight: the tree as before" "$(paths)" "$before"
stop_bg "$refused_holder" TERM >/dev/null || true

# ---- delete: kept charges released, idempotent ----

ctl charge /containers/web-1 1M
check_eq "web-1 with a kept charge" "$(current /containers/web-1)" $((1024 * 1024 + 4096))
file=$(fixture delete-nopid.json 0)

# While the container's session lives, the group is busy (after ~2 s).
hook delete "$file"
check_eq "delete web-1 with a live session: exit status" "$RC" 1
check_exists "delete web-1 with a live session: still there" /containers/web-1

stop_bg "$container" TERM >/dev/null || true
hook delete "$file"
check_eq "delete web-1: exit status (stderr: $ERR)" "$RC" 0
check_match "delete web-1: says so" "$OUT" 'removed /containers/web-1'
check_gone "delete web-1" /containers/web-1
check_current_soon "the kept charge is released" /containers 0
check_current_soon "and from /" / 0

hook delete "$file"
check_eq "delete web-1 again: exit status" "$RC" 0
check_match "delete web-1 again: a note" "$ERR" '/containers/web-1 is already gone'

# The createRuntime state works for poststop too (pid is ignored there).
file=$(fixture create-plain.json "$SLEEPER")
hook delete "$file"
check_eq "delete db: exit status (stderr: $ERR)" "$RC" 0
check_gone "delete db" "/containers/db_2:x@y"

# ---- --prefix ----

hook create "$file" --prefix /k8s/pods
check_eq "create under --prefix /k8s/pods: exit status (stderr: $ERR)" "$RC" 0
check_exists "create under --prefix /k8s/pods" "/k8s/pods/db_2:x@y"
hook delete "$file" --prefix /k8s/pods
check_eq "delete under --prefix /k8s/pods: exit status" "$RC" 0
check_gone "delete under --prefix /k8s/pods" "/k8s/pods/db_2:x@y"
check_exists "the prefix groups stay" /k8s/pods

hook create "$file" --prefix /
check_eq "create under --prefix /: exit status (stderr: $ERR)" "$RC" 0
check_exists "create under --prefix /" "/db_2:x@y"
hook delete "$file" --prefix /
check_gone "delete under --prefix /" "/db_2:x@y"

stop_bg "$SLEEPER" TERM >/dev/null || true
check_stop_daemon
