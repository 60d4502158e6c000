#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# memacctctl oci-hook against a real memacctd: the state JSON that runc and
# crun pass to createRuntime and poststop hooks (tests/oci/fixtures, @PID@
# replaced by a live process), the group and limits it makes, the move of
# the container's pid, the placement rule createRuntime adds (the pid's
# kernel memory cgroup -> its group, which `hold auto` then lands in) and
# poststop removes, delete releasing kept charges, and every malformed
# state refused with a clear message and no group left behind.
#
# The annotations org.memacct.owner (the group delegated),
# org.memacct.fail-open (an unreachable daemon is exit 0) and
# org.memacct.<region>.max and its kin (device limits, good and bad) are
# checked on states made here.
#
# Each "container" process runs in a kernel memory cgroup of its own,
# made by the test (a box), as a runtime would start it: the hook adds a
# confining rule only for a cgroup it vouches for, never for pid 1, its
# own process tree, its own cgroup or elsewhere than the bundle's
# cgroupsPath, each of which is tried. Without a writable memory cgroup
# hierarchy the test is skipped.
#
# Environment: MEMACCTD, MEMACCTCTL, OCI_FIXTURES, MEMACCT_TEST_HELPER
# (tests/oci/meson.build).

set -euo pipefail

# shellcheck source-path=SCRIPTDIR source=../lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

: "${OCI_FIXTURES:?OCI_FIXTURES must name tests/oci/fixtures}"
: "${MEMACCT_TEST_HELPER:?MEMACCT_TEST_HELPER must name memacct-test-helper}"

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

# rules_to GROUP: the cgroups of the placement rules naming GROUP, one a line.
rules_to() {
        ctl --json rule list | jget '"\n".join(r["cgroup"] for r in d if r["group"] == "'"$1"'")'
}

# start_holder SIZE: a "container" process, in the box holder-SIZE, with a
# memacctd session holding SIZE in /; its pid in HOLDER.
start_holder() {
        in_box "holder-$1" "$TMP/holder.$1.out" "$MEMACCTCTL" --socket "$SOCK" hold / "$1"
        HOLDER=$BG_PID
        if wait_for 10 file_has "$TMP/holder.$1.out" '^holding'; then
                pass
        else
                fail "the holder of $1 starts: $(cat "$TMP/holder.$1.out")"
        fi
}

# ---- boxes: a memory cgroup of its own for each "container" ----

if [[ -w /sys/fs/cgroup/memory/cgroup.procs ]]; then
        CGMOUNT=/sys/fs/cgroup/memory
elif [[ -r /sys/fs/cgroup/cgroup.controllers && -w /sys/fs/cgroup/cgroup.procs ]]; then
        CGMOUNT=/sys/fs/cgroup
else
        skip_test "no writable memory cgroup hierarchy to start a container's process in"
fi
CGBASE=/memacct-oci-$$
mkdir "$CGMOUNT$CGBASE" || skip_test "cannot make a memory cgroup under $CGMOUNT"
remove_boxes() {
        local d pid

        for d in "$CGMOUNT$CGBASE"/*/ "$CGMOUNT$CGBASE/"; do
                [[ -d $d ]] || continue
                while read -r pid; do kill -KILL "$pid" 2>/dev/null || true; done <"$d/cgroup.procs"
        done
        sleep 0.1
        rmdir "$CGMOUNT$CGBASE"/*/ "$CGMOUNT$CGBASE" 2>/dev/null || true
}
on_exit remove_boxes

# in_box NAME OUT CMD...: CMD in the background in the box NAME (made if
# need be), its output in OUT; its pid in BG_PID.
in_box() {
        local dir=$CGMOUNT$CGBASE/$1 out=$2

        shift 2
        mkdir -p "$dir"
        bg "$out" sh -c 'echo $$ >"$1/cgroup.procs" && shift && exec "$@"' sh "$dir" "$@"
        wait_for 10 grep -qx "$BG_PID" "$dir/cgroup.procs" || fail "pid $BG_PID is in box $1"
}

check_start_daemon

# A live pid, in a box of its own, for the fixtures that must fail before it matters.
in_box sleeper "$TMP/sleep.out" sleep 300
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
# Every process of the container that attaches "auto" must land there too.
CG=$(mem_cgroup "$container" || true)
check_eq "create web-1: the placement rule, the container's cgroup -> web-1" \
        "$(rules_to /containers/web-1)" "$CG"
check_match "create web-1: the rule is listed as text too, confining" "$(ctl rule list)" \
        "^$CG	/containers/web-1	confine\$"
# Another process of the container: in its cgroup.
in_box holder-4K "$TMP/auto.out" "$MEMACCTCTL" --socket "$SOCK" hold auto 8K
auto=$BG_PID
wait_for 10 file_has "$TMP/auto.out" '^holding' || true
check_match "a process of the container that attaches auto lands in web-1" "$(cat "$TMP/auto.out")" \
        '^attached to /containers/web-1$'
stop_bg "$auto" INT >/dev/null || true

# The same id again: refused, the running container's group untouched.
hook create "$file"
check_eq "create web-1 again: exit status" "$RC" 1
check_match "create web-1 again: message" "$ERR" 'create /containers/web-1: the group exists already'
check_eq "web-1 still holds the container's bytes" "$(current /containers/web-1)" 4096
check_eq "web-1 keeps its max" "$(field /containers/web-1 'd["max"]')" $((64 * 1024 * 1024))
check_eq "web-1 keeps its rule" "$(rules_to /containers/web-1)" "$CG"

# The malformed states again, now that the prefix exists.
malformed

# ---- a rule only for a cgroup the runtime vouches for ----

# vouch NAME PID ERE [BUNDLE]: create refused, ERE on stderr, no group, no rule.
vouch() {
        local file=$GEN/vouch-$1.json before

        /usr/bin/python3 -I -S -c '
import json, sys
s = {"ociVersion": "1.0.2", "id": sys.argv[1], "status": "created", "pid": int(sys.argv[2])}
if sys.argv[3]:
    s["bundle"] = sys.argv[3]
json.dump(s, sys.stdout)' "$1" "$2" "${4:-}" >"$file"
        before=$(paths)
        hook create "$file"
        check_eq "vouch $1: exit status (stderr: $ERR)" "$RC" 1
        check_match "vouch $1: message" "$ERR" "$3"
        check_eq "vouch $1: no group left behind" "$(paths)" "$before"
        check_eq "vouch $1: no rule to it" "$(rules_to "/containers/$1")" ""
}
vouch init 1 'no placement rule: pid 1 is the host.s init'
vouch self $$ "no placement rule: pid $$ is this hook or one of its ancestors"
bg "$TMP/plain.out" sleep 300
plain=$BG_PID
vouch own-cgroup "$plain" "no placement rule: pid $plain is in the hook's own cgroup"
stop_bg "$plain" TERM >/dev/null || true
# The bundle's config.json names the container's cgroup: another is foreign.
mkdir -p "$TMP/bundle-foreign" "$TMP/bundle-own" "$TMP/bundle-systemd"
echo '{"linux": {"cgroupsPath": "/elsewhere/foreign"}}' >"$TMP/bundle-foreign/config.json"
vouch foreign "$SLEEPER" "no placement rule: pid $SLEEPER is in $CGBASE/sleeper, not in the bundle's cgroupsPath /elsewhere/foreign" \
        "$TMP/bundle-foreign"
echo '{"linux": {"cgroupsPath": "system.slice:runc:other"}}' >"$TMP/bundle-systemd/config.json"
vouch systemd "$SLEEPER" "not in the bundle's cgroupsPath system.slice:runc:other" "$TMP/bundle-systemd"
echo "{\"linux\": {\"cgroupsPath\": \"$CGBASE/sleeper\"}}" >"$TMP/bundle-own/config.json"
file=$GEN/vouch-own.json
echo "{\"ociVersion\": \"1.0.2\", \"id\": \"own\", \"pid\": $SLEEPER, \"bundle\": \"$TMP/bundle-own\"}" >"$file"
hook create "$file"
check_eq "the bundle's own cgroupsPath: create exits 0 (stderr: $ERR)" "$RC" 0
check_eq "and its rule is there" "$(rules_to /containers/own)" "$CGBASE/sleeper"
hook delete "$file"
check_gone "delete own" /containers/own
# The daemon's own checks, whoever asks: never /, one rule per cgroup.
check_run "a confining rule of / is refused" 1 ctl rule add --confine / /containers
check_match "with why" "$ERR" 'a confining rule of / would confine every process'
check_run "a second rule for web-1's cgroup is refused" 1 ctl rule add "$CG" /containers
check_match "naming the rule there" "$ERR" "has a placement rule already, to /containers/web-1, confining"

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
check_eq "create tight: no rule to it left behind" "$(rules_to /containers/tight)" ""
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
check_eq "create under --prefix: the rule, the pid's cgroup -> its group" \
        "$(rules_to "/k8s/pods/db_2:x@y")" "$(mem_cgroup "$SLEEPER")"
hook delete "$file" --prefix /k8s/pods
check_eq "delete under --prefix /k8s/pods: exit status" "$RC" 0
check_gone "delete under --prefix /k8s/pods" "/k8s/pods/db_2:x@y"
check_eq "poststop removes the rule with the group" "$(rules_to "/k8s/pods/db_2:x@y")" ""
check_nomatch "no rule names the group in the text list either" "$(ctl rule list)" '/k8s/pods/db_2:x@y'
check_exists "the prefix groups stay" /k8s/pods

hook create "$file" --prefix /
check_eq "create under --prefix /: exit status (stderr: $ERR)" "$RC" 0
check_exists "create under --prefix /" "/db_2:x@y"
hook delete "$file" --prefix /
check_gone "delete under --prefix /" "/db_2:x@y"

# state ID ANNOTATIONS-JSON: a createRuntime state for $SLEEPER, as a file.
state() {
        /usr/bin/python3 -I -S -c '
import json, sys
json.dump({"ociVersion": "1.0.2", "id": sys.argv[1], "status": "created",
           "pid": int(sys.argv[3]), "annotations": json.loads(sys.argv[2])}, sys.stdout)' \
                "$1" "$2" "$SLEEPER" >"$GEN/$1.json"
        echo "$GEN/$1.json"
}

owner() {
        "$MEMACCT_TEST_HELPER" "$SOCK" owner "$1" 2>&1
}

# bad_state ID ANNOTATIONS ERE [RUNNER...]: create refused, ERE on stderr, nothing made.
bad_state() {
        local file before id=$1 ann=$2 ere=$3

        shift 3
        file=$(state "$id" "$ann")
        before=$(paths)
        run "$@" "$MEMACCTCTL" --socket "$SOCK" oci-hook create <"$file"
        check_eq "$id: exit status (stderr: $ERR)" "$RC" 1
        check_match "$id: message" "$ERR" "$ere"
        check_eq "$id: no group left behind" "$(paths)" "$before"
}

# ---- org.memacct.<region>.max|high|low|min: device limits ----

G0=nvidia/0000:3b:00.0/vidmem
check_run "a GPU's region, 8G" 0 ctl region add "$G0" capacity=8G
check_run "a region without a capacity" 0 ctl region add gpu0
# rfield PATH REGION KEY: KEY of PATH's counters in REGION.
rfield() {
        field "$1" "[r[\"$3\"] for r in d.get(\"regions\", []) if r[\"name\"] == \"$2\"]"
}
file=$(state dev-1 '{"org.memacct.'"$G0"'.max": "2G", "org.memacct.'"$G0"'.high": "50%",
        "org.memacct.'"$G0"'.low": "max", "org.memacct.gpu0.min": "1M", "org.memacct.max": "64M"}')
hook create "$file"
check_eq "create dev-1 with device limits: exit status (stderr: $ERR)" "$RC" 0
check_eq "dev-1: the GPU's max" "$(rfield /containers/dev-1 "$G0" max)" "[$((2 << 30))]"
check_eq "dev-1: its high, half the capacity" "$(rfield /containers/dev-1 "$G0" high)" "[$((4 << 30))]"
check_eq "dev-1: its low, max" "$(rfield /containers/dev-1 "$G0" low)" '["max"]'
check_eq "dev-1: gpu0's min" "$(rfield /containers/dev-1 gpu0 min)" "[$((1 << 20))]"
check_eq "dev-1: memory's max beside them" "$(field /containers/dev-1 'd["max"]')" $((64 << 20))
check_eq "dev-1: the rule is there as ever" "$(rules_to /containers/dev-1)" "$(mem_cgroup "$SLEEPER")"
# Limits are the group's: memacctctl set changes them while it runs.
check_run "set dev-1's GPU max while it runs" 0 ctl set /containers/dev-1 "$G0.max=1G"
check_eq "dev-1: the new max" "$(rfield /containers/dev-1 "$G0" max)" "[$((1 << 30))]"
hook delete "$file"
check_eq "delete dev-1: exit status (stderr: $ERR)" "$RC" 0
check_gone "delete dev-1" /containers/dev-1

bad_state dev-bad-value '{"org.memacct.gpu0.max": "lots"}' \
        "annotation org\.memacct\.gpu0\.max: invalid value 'lots' \(bytes with an optional K/M/G/T suffix, max, or a share"
bad_state dev-bad-share '{"org.memacct.gpu0.high": "101%"}' "annotation org\.memacct\.gpu0\.high: invalid value '101%'"
bad_state dev-bad-key '{"org.memacct.gpu0.maximum": "1G"}' \
        'annotation org\.memacct\.gpu0\.maximum: unknown \(known: .*org\.memacct\.REGION\.max'
bad_state dev-bad-name '{"org.memacct.gp u.max": "1G"}' \
        'annotation org\.memacct\.gp u\.max: not a region name'
bad_state dev-long-name "{\"org.memacct.$(printf 'r%.0s' {1..64}).max\": \"1G\"}" \
        'a region name is at most 63 bytes'
bad_state dev-memory '{"org.memacct.memory.max": "1G"}' \
        "annotation org\.memacct\.memory\.max: memory's limits are org\.memacct\.max"
bad_state dev-type '{"org.memacct.gpu0.low": 5}' 'annotation org\.memacct\.gpu0\.low: an integer, not a string of a size'
# Known only to the daemon: refused before anything is made.
bad_state dev-unknown '{"org.memacct.gpu9.max": "1G", "org.memacct.max": "1G"}' \
        "annotation org\.memacct\.gpu9\.max: memacctd has no region 'gpu9' \(memacctctl region list\)"
bad_state dev-share-nocap '{"org.memacct.gpu0.max": "50%"}' \
        'annotation org\.memacct\.gpu0\.max: region gpu0 has no capacity: a share of it means nothing'
# poststop does not judge them: the group goes whatever they say.
file=$(state dev-2 '{"org.memacct.gpu0.max": "1M"}')
hook create "$file"
check_eq "create dev-2: exit status (stderr: $ERR)" "$RC" 0
file=$(state dev-2 '{"org.memacct.gpu0.max": "lots"}')
hook delete "$file"
check_eq "delete dev-2 with a bad device limit: exit status (stderr: $ERR)" "$RC" 0
check_gone "delete dev-2" /containers/dev-2

# ---- org.memacct.owner: the group delegated to a uid or a user ----

bad_state own-bad-uid '{"org.memacct.owner": "4294967295"}' "owner: '4294967295' is not a valid uid"
bad_state own-bad-num '{"org.memacct.owner": "12ab"}' "owner: '12ab' is not a valid uid"
bad_state own-bad-name '{"org.memacct.owner": "a:b"}' "owner: 'a:b' is neither a uid nor a user name"
bad_state own-empty '{"org.memacct.owner": ""}' "owner: '' is neither a uid nor a user name"
bad_state own-no-user '{"org.memacct.owner": "no-such-user-memacct"}' \
        "owner: no user 'no-such-user-memacct'"
bad_state own-type '{"org.memacct.owner": 5}' 'owner: an integer, not a string$'
# Delegating, and other uids, need root.
if [[ $(id -u) == 0 ]]; then
        file=$(state own-1 '{"org.memacct.owner": "4321", "org.memacct.max": "1M"}')
        hook create "$file"
        check_eq "create own-1 owned by 4321: exit status (stderr: $ERR)" "$RC" 0
        check_eq "own-1 is delegated to 4321" "$(owner /containers/own-1)" 4321
        check_eq "own-1 has its max too" "$(field /containers/own-1 'd["max"]')" $((1024 * 1024))
        check_run "the owner creates inside own-1" 0 \
                setpriv --reuid=4321 --regid=4321 --clear-groups "$MEMACCTCTL" --socket "$SOCK" \
                create /containers/own-1/sub
        check_run "another uid may not" 1 \
                setpriv --reuid=4322 --regid=4322 --clear-groups "$MEMACCTCTL" --socket "$SOCK" \
                create /containers/own-1/sub2
        ctl remove /containers/own-1/sub
        hook delete "$file"
        check_eq "delete own-1: exit status (stderr: $ERR)" "$RC" 0
        check_gone "delete own-1" /containers/own-1

        file=$(state own-2 '{"org.memacct.owner": "nobody"}')
        hook create "$file"
        check_eq "create own-2 owned by nobody: exit status (stderr: $ERR)" "$RC" 0
        check_eq "own-2 is delegated to nobody's uid" "$(owner /containers/own-2)" "$(id -u nobody)"
        hook delete "$file"
        check_gone "delete own-2" /containers/own-2

        # A hook that is not root may not delegate: refused before the daemon is asked.
        bad_state own-nonroot '{"org.memacct.owner": "4321"}' \
                'only a hook running as root may delegate a group \(this one runs as uid 4321\)' \
                setpriv --reuid=4321 --regid=4321 --clear-groups
else
        echo "SKIP (owner delegation only): not root, cannot switch uids"
fi

# ---- org.memacct.fail-open: an unreachable daemon ----

bad_state fo-bad '{"org.memacct.fail-open": "yes"}' "fail-open: 'yes' is neither true nor false"
file=$(state fo-1 '{"org.memacct.fail-open": "true", "org.memacct.max": "1M"}')
run "$MEMACCTCTL" --socket "$TMP/nowhere.sock" oci-hook create <"$file"
check_eq "fail-open, no daemon: create exits 0 (stderr: $ERR)" "$RC" 0
check_match "fail-open, no daemon: the cause" "$ERR" 'cannot connect to memacctd'
check_match "fail-open, no daemon: the note" "$ERR" \
        'fail-open=true: /containers/fo-1 not created, the container runs unaccounted'
run "$MEMACCTCTL" --socket "$TMP/nowhere.sock" oci-hook delete <"$file"
check_eq "fail-open, no daemon: delete exits 0 (stderr: $ERR)" "$RC" 0
check_match "fail-open, no daemon: delete's note" "$ERR" 'fail-open=true: /containers/fo-1 not removed'
file=$(state fo-2 '{"org.memacct.fail-open": "false"}')
run "$MEMACCTCTL" --socket "$TMP/nowhere.sock" oci-hook create <"$file"
check_eq "fail-open=false, no daemon: create fails closed" "$RC" 1
file=$(state fo-3 '{}')
run "$MEMACCTCTL" --socket "$TMP/nowhere.sock" oci-hook create <"$file"
check_eq "no annotation, no daemon: create fails closed" "$RC" 1
check_match "no annotation, no daemon: the cause" "$ERR" 'cannot connect to memacctd'
run "$MEMACCTCTL" --socket "$TMP/nowhere.sock" oci-hook delete <"$file"
check_eq "no annotation, no daemon: delete fails too" "$RC" 1
# With the daemon there, fail-open changes nothing: a refusal still fails.
file=$(state fo-4 '{"org.memacct.fail-open": "true"}')
hook create "$file"
check_eq "fail-open, daemon up: create works (stderr: $ERR)" "$RC" 0
hook create "$file"
check_eq "fail-open, daemon up: a refused create still fails" "$RC" 1
hook delete "$file"
check_gone "fail-open, daemon up: delete" /containers/fo-4

stop_bg "$SLEEPER" TERM >/dev/null || true
check_stop_daemon
