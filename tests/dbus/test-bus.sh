#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# org.memacct1 on a private bus, driven with busctl: the name, the objects
# and their introspection (checked against proto/org.memacct1.xml), every
# Manager method and every Group property, the errors with the socket's
# messages, the bus policy (units/org.memacct1.conf) with a non-root
# caller; then the sd-bus client (test-bus-client.c) for signals, peer
# lifetime and socket-versus-bus equality.

# shellcheck source-path=SCRIPTDIR source=../lib.sh
source "$(dirname "$0")/../lib.sh"

: "${MEMACCT_BUS_CLIENT:?MEMACCT_BUS_CLIENT must name test-bus-client}"
need dbus-daemon busctl setpriv
need_root "the policy lets only root own org.memacct1"
K=1024
M=$((K * K))
NO_OWNER=4294967295

# tail_eq WHAT BUS-ERROR SOCKET-ERROR: the bus's "Call failed: MSG" and
# memacctctl's "memacctctl: OP refused|failed: MSG" end in the same MSG.
tail_eq() {
        local bus=${2#Call failed: }

        if [[ $3 == *": $bus" ]]; then
                pass
        else
                fail "$1: the bus says '$bus', the socket '$3'"
        fi
}

start_bus || exit 1
check_start_daemon --bus "$BUS_ADDR" || exit 1

# ---- the name and the objects ----

run bctl status org.memacct1
check_match "the daemon owns org.memacct1" "$OUT" "^PID=$DAEMON_PID\$"
run bctl introspect org.memacct1 /org/memacct1
for m in CreateGroup RemoveGroup SetLimits Charge Uncharge Attach GetGroup ListGroups ListGroupsPage MoveProcess \
        GetClient ResetPeak Event; do
        check_match "the manager has $m" "$OUT" "^\.$m "
done
check_match "the manager is an ObjectManager" "$OUT" '^org\.freedesktop\.DBus\.ObjectManager '
run bctl tree org.memacct1
check_match "the root group is an object" "$OUT" '/org/memacct1/group/_2f$'

"$MEMACCTD" --bus-introspect /org/memacct1 >"$TMP/manager.xml"
"$MEMACCTD" --bus-introspect /org/memacct1/group/_2f >"$TMP/group.xml"
bctl introspect --xml-interface org.memacct1 /org/memacct1 >"$TMP/live-manager.xml"
bctl introspect --xml-interface org.memacct1 "$(objpath /)" >"$TMP/live-group.xml"
check_run "the vtables match proto/org.memacct1.xml (--bus-introspect, and live)" 0 \
        "$PY" "$(dirname "$0")/check-introspect.py" "$MEMACCT_SOURCE_ROOT/proto/org.memacct1.xml" \
        "$TMP/manager.xml" "$TMP/group.xml" "$TMP/live-manager.xml" "$TMP/live-group.xml"
run "$MEMACCTD" --bus-introspect list
check_eq "--bus-introspect list" "$OUT" "/org/memacct1
/org/memacct1/group/_2f"

# ---- CreateGroup and every property ----

check_run "CreateGroup" 0 mcall CreateGroup 'sa{st}u' /a 2 max $((4 * M)) high $((2 * M)) $NO_OWNER
check_eq "CreateGroup returns the object path" "$OUT" "o \"$(objpath /a)\""
check_eq "sd_bus_path_encode escapes every non-alphanumeric byte" "$(objpath /a-b.c)" \
        /org/memacct1/group/_2fa_2db_2ec
run bctl tree org.memacct1
check_match "the new group is in the tree" "$OUT" "$(objpath /a)\$"
check_eq "Path" "$(prop /a Path)" 's "/a"'
check_eq "MemoryMax" "$(prop /a MemoryMax)" "t $((4 * M))"
check_eq "MemoryHigh" "$(prop /a MemoryHigh)" "t $((2 * M))"
check_eq "MemoryLow" "$(prop /a MemoryLow)" "t 0"
check_eq "MemoryMin" "$(prop /a MemoryMin)" "t 0"
check_eq "no max is UINT64_MAX" "$(prop / MemoryMax)" "t 18446744073709551615"
check_eq "MemoryCurrent" "$(prop /a MemoryCurrent)" "t 0"
check_eq "MemoryPeak" "$(prop /a MemoryPeak)" "t 0"
check_eq "FailCount" "$(prop /a FailCount)" "t 0"
check_eq "EffectiveMemoryMin" "$(prop /a EffectiveMemoryMin)" "t 0"
check_eq "EffectiveMemoryLow" "$(prop /a EffectiveMemoryLow)" "t 0"
check_eq "Events" "$(prop /a Events)" 'a{st} 4 "low" 0 "high" 0 "max" 0 "oom" 0'
check_eq "EventsLocal" "$(prop /a EventsLocal)" 'a{st} 4 "low" 0 "high" 0 "max" 0 "oom" 0'
check_eq "Stats" "$(prop /a Stats)" \
        'a{st} 8 "anon" 0 "file" 0 "shmem" 0 "kernel" 0 "sock" 0 "swap" 0 "device" 0 "other" 0'
check_eq "the socket sees the group the bus made" "$(field /a 'd["max"]')" $((4 * M))
run mcall CreateGroup 'sa{st}u' /a 0 $NO_OWNER
bus_err=$ERR
check_eq "CreateGroup of an existing group fails" "$bus_err" "Call failed: /a: group exists"
run ctl create /a
tail_eq "as over the socket" "$bus_err" "$ERR"
run mcall CreateGroup 'sa{st}u' /x 1 bogus 1 $NO_OWNER
check_eq "an unknown limit key is refused" "$ERR" "Call failed: unknown limit 'bogus' (max, high, low, min)"
run mcall CreateGroup 'sa{st}u' relative 0 $NO_OWNER
bus_err=$ERR
run ctl create relative
tail_eq "a relative path" "$bus_err" "$ERR"

# ---- SetLimits ----

check_run "SetLimits" 0 mcall SetLimits 'sa{st}b' /a 2 low $M min $((512 * K)) false
check_eq "MemoryLow after SetLimits" "$(prop /a MemoryLow)" "t $M"
check_eq "MemoryMin after SetLimits" "$(prop /a MemoryMin)" "t $((512 * K))"
check_eq "the socket sees the limits the bus set" "$(field /a 'd["low"], d["min"]')" "($M, $((512 * K)))"
check_eq "EffectiveMemoryLow as the socket computes it" "$(propv /a EffectiveMemoryLow)" \
        "$(field /a 'd["effective_low"]')"

# ---- Charge, Uncharge ----

check_run "Charge with keep" 0 mcall Charge stsb /a $M file true
check_eq "Charge returns throttle_usec and over_high" "$OUT" "tt 0 0"
check_eq "MemoryCurrent after a kept charge" "$(propv /a MemoryCurrent)" $M
check_eq "the socket counts it" "$(current /a)" $M
ctl show /a --exact >/dev/null
check_match "Stats after a flush" "$(prop /a Stats)" "\"file\" $M "
run mcall Charge stsb /a $((8 * M)) "" true
bus_err=$ERR
check_eq "a charge over max fails" "$RC" 1
check_eq "LimitExceeded names the refusing group" "$bus_err" "Call failed: /a: limit exceeded (max of /a)"
run ctl charge /a 8M
tail_eq "the same refusal over the socket" "$bus_err" "$ERR"
check_eq "FailCount counts both" "$(propv /a FailCount)" 2
check_match "EventsLocal counts the max events" "$(prop /a EventsLocal)" '"max" 2 '
check_eq "MemoryPeak" "$(propv /a MemoryPeak)" $M
run mcall Charge stsb /a 1 bogus true
bus_err=$ERR
check_eq "an unknown stat item" "$bus_err" "Call failed: unknown stat item 'bogus'"
check_run "Uncharge with keep" 0 mcall Uncharge stsb /a $M file true
check_eq "MemoryCurrent after Uncharge" "$(propv /a MemoryCurrent)" 0
run mcall Uncharge stsb /a 1 file true
bus_err=$ERR
check_eq "Uncharge of more than is kept" "$bus_err" \
        "Call failed: /a: uncharge of 1 file bytes is more than the group keeps"
run ctl uncharge /a 1 --stat file
tail_eq "the same over the socket" "$bus_err" "$ERR"

# A session charge belongs to the caller: this busctl leaves the bus as
# soon as it has its reply, and the charge goes with it.
check_run "Charge without keep" 0 mcall Charge stsb /a $((64 * K)) "" false
if wait_for 10 test "$(propv /a MemoryCurrent)" = 0; then
        pass
else
        fail "a session charge ends when its caller leaves the bus (current $(propv /a MemoryCurrent))"
fi
run mcall Charge stsb "" 4096 "" false
check_eq "a session charge without a path needs an attached session" "$ERR" \
        "Call failed: session not attached to a group"
run mcall Uncharge stsb /a 4096 "" false
check_eq "Uncharge of what the session does not hold" "$ERR" \
        "Call failed: /a: uncharge of 4096 anon bytes is more than the session holds"
check_run "Attach" 0 mcall Attach s /a
run mcall Attach s /nope
bus_err=$ERR
run ctl show /nope
tail_eq "Attach to a missing group" "$bus_err" "$ERR"

# ---- GetGroup, ListGroups ----

check_run "GetGroup" 0 mcall GetGroup s /a
check_eq "GetGroup returns the object path" "$OUT" "o \"$(objpath /a)\""
run mcall GetGroup s /nope
check_eq "GetGroup of a missing group" "$ERR" "Call failed: /nope: no such group"
check_run "CreateGroup below" 0 mcall CreateGroup 'sa{st}u' /a/b 0 $NO_OWNER
check_run "ListGroups" 0 mcall ListGroups sb /a false
check_eq "ListGroups lists the children" "$OUT" "a(so) 1 \"/a/b\" \"$(objpath /a/b)\""
check_run "ListGroups recursive" 0 mcall ListGroups sb "" true
check_eq "ListGroups '' recursive is the whole tree" "$OUT" \
        "a(so) 3 \"/\" \"$(objpath /)\" \"/a\" \"$(objpath /a)\" \"/a/b\" \"$(objpath /a/b)\""
check_eq "ListGroups '' is /'s children" "$(mcall ListGroups sb "" false)" "a(so) 1 \"/a\" \"$(objpath /a)\""
# The same list in pages of two: the cursor is the last group of a page.
check_run "ListGroupsPage, the first page" 0 mcall ListGroupsPage sbsu "" true "" 2
check_eq "the first page: two groups, more after /a" "$OUT" \
        "a(so)sbb 2 \"/\" \"$(objpath /)\" \"/a\" \"$(objpath /a)\" \"/a\" true false"
check_run "ListGroupsPage, the next page" 0 mcall ListGroupsPage sbsu "" true /a 2
check_eq "the last page: the rest, no cursor" "$OUT" "a(so)sbb 1 \"/a/b\" \"$(objpath /a/b)\" \"\" false false"
check_eq "ListGroupsPage without a limit is the whole list" "$(mcall ListGroupsPage sbsu /a true "" 0)" \
        "a(so)sbb 2 \"/a\" \"$(objpath /a)\" \"/a/b\" \"$(objpath /a/b)\" \"\" false false"
run mcall ListGroupsPage sbsu /a false / 0
check_match "a cursor outside the list is refused" "$ERR" "^Call failed: .*"
check_run "ListGroupsPage of a cursor's group that is gone" 0 mcall CreateGroup 'sa{st}u' /gone 0 $NO_OWNER
check_run "(removed)" 0 mcall RemoveGroup s /gone
check_eq "a removed cursor starts the list again, marked" "$(mcall ListGroupsPage sbsu "" false /gone 1)" \
        "a(so)sbb 1 \"/a\" \"$(objpath /a)\" \"\" false true"

# ---- MoveProcess, GetClient (a socket session of memacctctl hold) ----

bg "$TMP/hold.out" "$MEMACCTCTL" --socket "$SOCK" hold /a $((64 * K))
holder=$BG_PID
check_current_soon "memacctctl hold charges" /a $((64 * K))
check_run "MoveProcess" 0 mcall MoveProcess us "$holder" /a/b
check_eq "MoveProcess moves one session" "$OUT" "u 1"
check_eq "the hold moved with it" "$(propv /a/b MemoryCurrent)" $((64 * K))
check_run "GetClient" 0 mcall GetClient ub "$holder" true
check_eq "GetClient's counters" "$OUT" "a{st} 4 \"file\" 0 \"anon\" $((64 * K)) \"swap\" 0 \"shmem\" 0"
check_eq "the socket reads the same client" "$(ctl --json client "$holder" --exact | jget 'd["anon"]')" \
        $((64 * K))
run mcall GetClient ub 999999 false
check_eq "GetClient of a pid without a session" "$ERR" "Call failed: pid 999999 has no session"
run mcall MoveProcess us 999999 /a
check_eq "MoveProcess of a pid without a session" "$ERR" "Call failed: pid 999999 has no session"
run mcall MoveProcess us 0 /a
check_eq "MoveProcess of the caller's own unopened session" "$ERR" \
        "Call failed: /a: session not attached to a group"
stop_bg "$holder" INT || fail "memacctctl hold exits 0"

# ---- ResetPeak, RemoveGroup ----

check_eq "MemoryPeak before ResetPeak" "$(propv /a MemoryPeak)" $M
check_run "ResetPeak" 0 mcall ResetPeak s /a
check_eq "MemoryPeak after ResetPeak" "$(propv /a MemoryPeak)" "$(propv /a MemoryCurrent)"
run prop /a PressureSome
check_eq "PressureSome is (dddt), all 0 while no charge waited" "$OUT" '(dddt) 0 0 0 0'
run prop /a PressureFull
check_eq "PressureFull too" "$OUT" '(dddt) 0 0 0 0'
run mcall RemoveGroup s /a
bus_err=$ERR
check_eq "RemoveGroup of a group with children" "$bus_err" \
        "Call failed: /a: group has children or attached sessions"
run ctl remove /a
tail_eq "the same over the socket" "$bus_err" "$ERR"
check_run "RemoveGroup" 0 mcall RemoveGroup s /a/b
run bctl tree org.memacct1
check_nomatch "a removed group leaves the tree" "$OUT" "$(objpath /a/b)"
run prop /a/b Path
check_match "a removed group's object is gone" "$OUT" "Unknown object"
check_run "GetManagedObjects" 0 bctl call org.memacct1 /org/memacct1 \
        org.freedesktop.DBus.ObjectManager GetManagedObjects
check_match "GetManagedObjects has the groups and their properties" "$OUT" \
        "\"$(objpath /a)\" 4 .*\"org.memacct1.Group\" 34 \"Path\" s \"/a\""
run bctl set-property org.memacct1 "$(objpath /a)" org.memacct1.Group MemoryMax t 1
check_eq "properties are read-only" "$RC" 1

# ---- a non-root caller: allowed by the policy, authorised by memacctd ----

run as_nobody busctl --address="$BUS_ADDR" get-property org.memacct1 "$(objpath /a)" org.memacct1.Group Path
check_eq "anyone reads properties" "$OUT" 's "/a"'
run as_nobody busctl --address="$BUS_ADDR" call org.memacct1 /org/memacct1 org.memacct1.Manager \
        ListGroups sb / false
check_eq "anyone may call the Manager" "$RC" 0
# The bus as clients find it by default: the system bus, for every uid.
run as_nobody env DBUS_SYSTEM_BUS_ADDRESS="$BUS_ADDR" busctl --system call org.memacct1 \
        /org/memacct1 org.memacct1.Manager ListGroups sb / false
check_eq "nobody calls the Manager with busctl --system" "$RC" 0
run as_nobody env DBUS_SYSTEM_BUS_ADDRESS="$BUS_ADDR" DBUS_SESSION_BUS_ADDRESS=unix:path=/nonexistent \
        "$MEMACCTCTL" --bus --json tree /
check_eq "nobody's memacctctl --bus reaches the system bus" "$RC" 0
check_match "and reads the groups" "$OUT" '"path":"/a"'
run as_nobody busctl --address="$BUS_ADDR" call org.memacct1 /org/memacct1 org.memacct1.Manager \
        CreateGroup 'sa{st}u' /n 0 $NO_OWNER
bus_err=$ERR
check_eq "memacctd refuses nobody a group outside its delegation" "$bus_err" \
        "Call failed: /n: not delegated to uid 65534"
run as_nobody "$MEMACCTCTL" --socket "$SOCK" create /n
tail_eq "as the socket refuses it" "$bus_err" "$ERR"
run as_nobody busctl --address="$BUS_ADDR" call org.memacct1 /org/memacct1 org.memacct1.Manager \
        Charge stsb /a 4096 "" true
check_eq "nobody may not charge root's group" "$ERR" "Call failed: /a: permission denied"
run as_nobody busctl --address="$BUS_ADDR" call org.freedesktop.DBus /org/freedesktop/DBus \
        org.freedesktop.DBus RequestName su org.memacct1 0
check_match "the policy lets only root own org.memacct1" "$ERR" "Access denied|not allowed to own"
run as_nobody busctl --address="$BUS_ADDR" set-property org.memacct1 "$(objpath /a)" \
        org.memacct1.Group MemoryMax t 1
check_match "the policy refuses Properties.Set" "$ERR" "Access denied"

# ---- the sd-bus client ----

check_nomatch "no event was dropped so far" "$(<"$DAEMON_LOG")" "Dropped"
check_run "the sd-bus client's checks" 0 env MEMACCT_BUS_ADDRESS="$BUS_ADDR" MEMACCT_SOCKET="$SOCK" \
        MEMACCT_BUS_PID="$BUS_PID" "$MEMACCT_BUS_CLIENT"
if ((RC != 0)); then
        printf '%s\n%s\n' "$OUT" "$ERR" >&2
fi
# Its last test stops the bus daemon under a storm of events.
check_match "events the stopped bus could not take were dropped, not queued" "$(<"$DAEMON_LOG")" \
        "warning: Dropped [0-9]+ events"

check_stop_daemon
check_nomatch "no error was logged" "$(<"$DAEMON_LOG")" "error:"
stop_bus

# ---- losing the bus never stops the daemon ----

start_bus || exit 1
check_start_daemon --bus "${BUS_ADDR%%,guid=*}" || exit 1
stop_bus
if wait_for 10 grep -q "Lost the connection to the bus at" "$DAEMON_LOG"; then
        pass
else
        fail "the log says the bus was lost"
fi
check_eq "memacctd runs on without its bus" "$(kill -0 "$DAEMON_PID" 2>/dev/null && echo yes)" yes
check_run "and its socket answers" 0 ctl show /
rc=0
stop_daemon || rc=$?
check_eq "SIGTERM still ends it with status 0" "$rc" 0

# ---- no bus at start: the socket is served, the bus taken when it comes ----

rm -f "$TMP/bus.sock"
check_start_daemon --bus "unix:path=$TMP/bus.sock" || exit 1
check_run "without a bus the socket answers" 0 ctl show /
check_match "the log says it serves without the bus" "$(<"$DAEMON_LOG")" \
        "Serving the socket without the bus at unix:path=$TMP/bus.sock"
start_bus || exit 1
if wait_for 20 sh -c "busctl --address='$BUS_ADDR' status org.memacct1 2>/dev/null | grep -q '^PID=$DAEMON_PID\$'"; then
        pass
else
        fail "memacctd takes org.memacct1 once the bus is there"
fi
check_match "and says so" "$(<"$DAEMON_LOG")" "Connected to the bus at .*: org.memacct1 is ours"
check_eq "the bus serves it" "$(propv / MemoryMax)" 18446744073709551615
check_stop_daemon
stop_bus
