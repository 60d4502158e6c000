#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# Device memory regions on org.memacct1, on a private bus, driven with
# busctl (its messages) and gdbus (the error names, and the signals a
# plain listener gets): AddRegion, RemoveRegion and ListRegions with
# their refusals, a non-root caller refused; kept and session charges in
# a region and their refusals at a group's max and at the capacity; the
# limits read back from the DeviceMemory* properties exactly as set;
# ResetRegionPeak, Transfer (a refusal changes nothing) and
# EvictValuable; RegionEvent signals that carry the region while Event
# stays memory's; and memory's own properties as they were.

# shellcheck source-path=SCRIPTDIR source=../lib.sh
source "$(dirname "$0")/../lib.sh"

need dbus-daemon busctl gdbus setpriv
need_root "the policy lets only root own org.memacct1"
K=1024
M=$((K * K))
NO_OWNER=4294967295
MAX=18446744073709551615
GPU=gpu0
CAP=$((64 * M))
VRAM=drm/0000:03:00.0/vram0

# gcall METHOD ARGS...: a Manager method through gdbus, which names the
# error of a refusal ("Error: GDBus.Error:NAME: MESSAGE").
gcall() {
        gdbus call --address "$BUS_ADDR" --dest org.memacct1 --object-path /org/memacct1 \
                --method "org.memacct1.Manager.$1" "${@:2}"
}

# check_refused WHAT NAME MESSAGE METHOD ARGS...: gdbus's call is refused
# with the error org.memacct1.Error.NAME and MESSAGE.
check_refused() {
        local what=$1 name=$2 message=$3

        shift 3
        run gcall "$@"
        check_eq "$what" "$RC:$ERR" "1:Error: GDBus.Error:org.memacct1.Error.$name: $message"
}

start_bus || exit 1
check_start_daemon --bus "$BUS_ADDR" || exit 1

# ---- the interface ----

run bctl introspect org.memacct1 /org/memacct1
for m in AddRegion RemoveRegion ListRegions ChargeRegion UnchargeRegion SetRegionLimits ResetRegionPeak \
        Transfer EvictValuable RegionEvent RegionEventBy; do
        check_match "the manager has $m" "$OUT" "^\.$m "
done
run bctl introspect org.memacct1 "$(objpath /)"
for p in DeviceMemoryCurrent DeviceMemoryPeak DeviceMemoryMax DeviceMemoryHigh DeviceMemoryLow DeviceMemoryMin \
        EffectiveDeviceMemoryMin EffectiveDeviceMemoryLow DeviceMemoryFailCount DeviceMemoryKept \
        DeviceMemoryCapacity; do
        check_match "a group has $p" "$OUT" "^\.$p +property +a\(st\) "
done
check_match "a group has DeviceMemoryEvents" "$OUT" '^\.DeviceMemoryEvents +property +a\(sa\{st\}\) '

# The signals as a plain listener gets them: gdbus monitor matches on
# the daemon's name, as any client does. A memory event on /mark, raised
# until the monitor shows one, says its match is in place.
bg "$TMP/monitor.out" gdbus monitor --address "$BUS_ADDR" --dest org.memacct1
check_run "CreateGroup /mark" 0 mcall CreateGroup 'sa{st}u' /mark 1 max 4096 $NO_OWNER
mark_seen() {
        mcall Charge stsb /mark 8192 "" true >/dev/null 2>&1 || true
        grep -q "Manager.Event ('/mark', 'max'" "$TMP/monitor.out"
}
if wait_for 20 mark_seen; then
        pass
else
        fail "the monitor sees memory's Event signals"
fi

# ---- AddRegion, ListRegions ----

check_eq "ListRegions before any: memory alone, in / and /mark" "$(mcall ListRegions)" \
        "a(stttu) 1 \"memory\" $MAX 0 0 2"
check_run "AddRegion" 0 mcall AddRegion st $GPU $CAP
check_run "AddRegion of the same region again" 0 mcall AddRegion st $GPU $CAP
check_refused "AddRegion with another capacity" Exists \
        "region $GPU is registered with another capacity; remove it first" AddRegion $GPU 1
check_refused "AddRegion of memory" InvalidArgument \
        "'memory' is not a region name: [A-Za-z0-9._:/@+-], not \"memory\"" AddRegion memory 1
check_refused "AddRegion of a name with a space" InvalidArgument \
        "'bad name' is not a region name: [A-Za-z0-9._:/@+-], not \"memory\"" AddRegion "'bad name'" 1
run mcall AddRegion st "$(printf 'r%.0s' {1..64})" 1
check_eq "AddRegion of a name past 63 bytes" "$ERR" "Call failed: a region name is at most 63 bytes"
check_run "AddRegion of an unlimited region" 0 mcall AddRegion st $VRAM $MAX
check_eq "ListRegions lists them, memory first" "$(mcall ListRegions)" \
        "a(stttu) 3 \"memory\" $MAX 0 0 2 \"$GPU\" $CAP 0 0 1 \"$VRAM\" $MAX 0 0 1"
run as_nobody busctl --address="$BUS_ADDR" call org.memacct1 /org/memacct1 org.memacct1.Manager \
        AddRegion st gpu9 1
check_eq "nobody may not add a region" "$ERR" "Call failed: only root registers regions"
run as_nobody busctl --address="$BUS_ADDR" call org.memacct1 /org/memacct1 org.memacct1.Manager \
        RemoveRegion s $VRAM
check_eq "nobody may not remove one" "$ERR" "Call failed: only root removes regions"
run as_nobody busctl --address="$BUS_ADDR" call org.memacct1 /org/memacct1 org.memacct1.Manager ListRegions
check_eq "nobody lists them while reads are open" "$RC:$OUT" "0:$(mcall ListRegions)"
check_eq "the root reads every region's capacity" "$(prop / DeviceMemoryCapacity)" \
        "a(st) 2 \"$GPU\" $CAP \"$VRAM\" $MAX"

# ---- charges ----

check_run "CreateGroup /a" 0 mcall CreateGroup 'sa{st}u' /a 0 $NO_OWNER
check_eq "a group that uses no region reads empty arrays" "$(prop /a DeviceMemoryCurrent)" "a(st) 0"
check_eq "and no region's events" "$(prop /a DeviceMemoryEvents)" "a(sa{st}) 0"
check_run "ChargeRegion kept" 0 mcall ChargeRegion sstb /a $GPU $((4 * K)) true
check_eq "ChargeRegion returns throttle_usec and over_high" "$OUT" "tt 0 0"
check_eq "DeviceMemoryCurrent: the region and the bytes" "$(prop /a DeviceMemoryCurrent)" \
        "a(st) 1 \"$GPU\" $((4 * K))"
check_eq "DeviceMemoryKept: the kept charge" "$(prop /a DeviceMemoryKept)" "a(st) 1 \"$GPU\" $((4 * K))"
check_eq "DeviceMemoryCapacity: the region's" "$(prop /a DeviceMemoryCapacity)" "a(st) 1 \"$GPU\" $CAP"
check_eq "no limit reads UINT64_MAX" "$(prop /a DeviceMemoryMax)" "a(st) 1 \"$GPU\" $MAX"
check_eq "the root counts it in its region" "$(prop / DeviceMemoryCurrent)" \
        "a(st) 2 \"$GPU\" $((4 * K)) \"$VRAM\" 0"
check_eq "memory's MemoryCurrent is untouched" "$(propv /a MemoryCurrent)" 0
check_eq "memory's MemoryKept too" "$(propv /a MemoryKept)" 0
check_eq "ListRegions counts the charge and the group" "$(mcall ListRegions)" \
        "a(stttu) 3 \"memory\" $MAX 0 0 3 \"$GPU\" $CAP $((4 * K)) $((4 * K)) 2 \"$VRAM\" $MAX 0 0 1"

# A session charge belongs to this busctl, which leaves the bus with its reply.
check_run "ChargeRegion to the session" 0 mcall ChargeRegion sstb /a $GPU $((8 * K)) false
if wait_for 10 test "$(prop /a DeviceMemoryCurrent)" = "a(st) 1 \"$GPU\" $((4 * K))"; then
        pass
else
        fail "a session's region charge ends with its caller (current $(prop /a DeviceMemoryCurrent))"
fi
check_eq "the kept charge stays" "$(prop /a DeviceMemoryKept)" "a(st) 1 \"$GPU\" $((4 * K))"
check_eq "the session's charge made the peak" "$(prop /a DeviceMemoryPeak)" "a(st) 1 \"$GPU\" $((12 * K))"
run mcall UnchargeRegion sstb /a $GPU 4096 false
check_eq "UnchargeRegion of what the session does not hold" "$ERR" \
        "Call failed: /a: uncharge of 4096 $GPU bytes is more than the session holds"
check_refused "UnchargeRegion of more than is kept" Underflow \
        "/a: uncharge of 8192 $GPU bytes is more than the group keeps" UnchargeRegion /a $GPU 8192 true
check_refused "ChargeRegion in an unknown region" NotFound "no region 'nope' (memacctctl region list)" \
        ChargeRegion /a nope 1 true
check_refused "ChargeRegion of a missing group" NotFound "/nope: no such group" ChargeRegion /nope $GPU 1 true
run as_nobody busctl --address="$BUS_ADDR" call org.memacct1 /org/memacct1 org.memacct1.Manager \
        ChargeRegion sstb /a $GPU 4096 true
check_eq "nobody may not charge root's group in a region" "$ERR" "Call failed: /a: permission denied"

# ---- SetRegionLimits and the DeviceMemory* properties ----

check_run "SetRegionLimits" 0 mcall SetRegionLimits 'ssa{st}' /a $GPU 4 max $((16 * K)) high $((12 * K)) \
        low $((2 * K)) min $K
check_eq "DeviceMemoryMax" "$(prop /a DeviceMemoryMax)" "a(st) 1 \"$GPU\" $((16 * K))"
check_eq "DeviceMemoryHigh" "$(prop /a DeviceMemoryHigh)" "a(st) 1 \"$GPU\" $((12 * K))"
check_eq "DeviceMemoryLow" "$(prop /a DeviceMemoryLow)" "a(st) 1 \"$GPU\" $((2 * K))"
check_eq "DeviceMemoryMin" "$(prop /a DeviceMemoryMin)" "a(st) 1 \"$GPU\" $K"
check_eq "memory's MemoryMax is untouched" "$(propv /a MemoryMax)" $MAX
check_eq "memory's MemoryLow too" "$(propv /a MemoryLow)" 0
check_run "SetRegionLimits of high max" 0 mcall SetRegionLimits 'ssa{st}' /a $GPU 1 high $MAX
check_eq "\"max\" reads back as UINT64_MAX" "$(prop /a DeviceMemoryHigh)" "a(st) 1 \"$GPU\" $MAX"
check_run "SetRegionLimits in a second region" 0 mcall SetRegionLimits 'ssa{st}' /a $VRAM 1 low $M
check_eq "a group's regions in region order" "$(prop /a DeviceMemoryLow)" \
        "a(st) 2 \"$GPU\" $((2 * K)) \"$VRAM\" $M"
check_eq "where only low was set, max is none" "$(prop /a DeviceMemoryMax)" \
        "a(st) 2 \"$GPU\" $((16 * K)) \"$VRAM\" $MAX"
check_run "SetRegionLimits of memory" 0 mcall SetRegionLimits 'ssa{st}' /a memory 1 low $M
check_eq "\"memory\" sets MemoryLow" "$(propv /a MemoryLow)" $M
check_eq "and no device region's" "$(prop /a DeviceMemoryLow)" "a(st) 2 \"$GPU\" $((2 * K)) \"$VRAM\" $M"
run mcall SetRegionLimits 'ssa{st}' /a $GPU 1 swap 1
check_eq "an unknown limit key" "$ERR" "Call failed: unknown limit 'swap' (max, high, low, min)"
check_refused "the root's max in a region is its capacity" InvalidArgument \
        "the root's max in region $GPU is its capacity (memacctctl region add)" \
        SetRegionLimits / $GPU "{'max': uint64 1}"
check_refused "SetRegionLimits in an unknown region" NotFound "no region 'nope' (memacctctl region list)" \
        SetRegionLimits /a nope "{'max': uint64 1}"

# ---- refusals at a max and at the capacity ----

check_run "CreateGroup /a/c" 0 mcall CreateGroup 'sa{st}u' /a/c 0 $NO_OWNER
check_refused "a region charge over the group's max" LimitExceeded \
        "/a: limit exceeded (max of /a in region $GPU)" ChargeRegion /a $GPU $((16 * K)) true
check_refused "over the parent's max, which is named" LimitExceeded \
        "/a/c: limit exceeded (max of /a in region $GPU)" ChargeRegion /a/c $GPU $((16 * K)) true
check_eq "a refusal charges nothing" "$(prop /a DeviceMemoryCurrent)" \
        "a(st) 2 \"$GPU\" $((4 * K)) \"$VRAM\" 0"
check_eq "DeviceMemoryFailCount counts both" "$(prop /a DeviceMemoryFailCount)" \
        "a(st) 2 \"$GPU\" 2 \"$VRAM\" 0"
# Both were refused by /a's max: both are /a's events.
check_eq "DeviceMemoryEventsLocal counts the max events" "$(prop /a DeviceMemoryEventsLocal)" \
        "a(sa{st}) 2 \"$GPU\" 4 \"low\" 0 \"high\" 0 \"max\" 2 \"oom\" 2 \"$VRAM\" 4 \"low\" 0 \"high\" 0 \"max\" 0 \"oom\" 0"
check_match "DeviceMemoryEvents of the subtree" "$(prop /a DeviceMemoryEvents)" \
        "^a\(sa\{st\}\) 2 \"$GPU\" 4 \"low\" 0 \"high\" 0 \"max\" 2 \"oom\" 2 "
check_eq "the child raised none itself" "$(prop /a/c DeviceMemoryEventsLocal)" \
        "a(sa{st}) 1 \"$GPU\" 4 \"low\" 0 \"high\" 0 \"max\" 0 \"oom\" 0"
check_eq "memory's FailCount is untouched" "$(propv /a FailCount)" 0
check_eq "memory's Events too" "$(prop /a Events)" 'a{st} 4 "low" 0 "high" 0 "max" 0 "oom" 0'
check_run "CreateGroup /big" 0 mcall CreateGroup 'sa{st}u' /big 0 $NO_OWNER
check_refused "a charge past the region's capacity" LimitExceeded "/big: region $GPU is at its capacity" \
        ChargeRegion /big $GPU $CAP true
check_run "a max below usage is taken" 0 mcall SetRegionLimits 'ssa{st}' /a $GPU 1 max $K
check_eq "DeviceMemoryMax below DeviceMemoryCurrent" "$(prop /a DeviceMemoryMax)" \
        "a(st) 2 \"$GPU\" $K \"$VRAM\" $MAX"
check_refused "and refuses what comes next" LimitExceeded "/a: limit exceeded (max of /a in region $GPU)" \
        ChargeRegion /a $GPU 1 true
check_run "SetRegionLimits back" 0 mcall SetRegionLimits 'ssa{st}' /a $GPU 1 max $((16 * K))

# ---- ResetRegionPeak ----

check_run "ResetRegionPeak" 0 mcall ResetRegionPeak ss /a $GPU
check_eq "the peak restarts from the usage" "$(prop /a DeviceMemoryPeak)" \
        "a(st) 2 \"$GPU\" $((4 * K)) \"$VRAM\" 0"
check_refused "ResetRegionPeak in an unknown region" NotFound "no region 'nope' (memacctctl region list)" \
        ResetRegionPeak /a nope

# ---- Transfer ----

check_run "CreateGroup /t" 0 mcall CreateGroup 'sa{st}u' /t 0 $NO_OWNER
check_run "with a max in the region" 0 mcall SetRegionLimits 'ssa{st}' /t $GPU 1 max $((4 * K))
check_run "Transfer" 0 mcall Transfer ssst /a /t $GPU $((4 * K))
check_eq "the source keeps nothing" "$(prop /a DeviceMemoryKept)" "a(st) 2 \"$GPU\" 0 \"$VRAM\" 0"
check_eq "the destination keeps it" "$(prop /t DeviceMemoryKept)" "a(st) 1 \"$GPU\" $((4 * K))"
check_eq "the root's usage is the same" "$(prop / DeviceMemoryCurrent)" \
        "a(st) 2 \"$GPU\" $((4 * K)) \"$VRAM\" 0"
check_run "ChargeRegion /a kept again" 0 mcall ChargeRegion sstb /a $GPU $((4 * K)) true
check_refused "a Transfer past the destination's max" LimitExceeded \
        "/t: limit exceeded (max of /t in region gpu0)" Transfer /a /t $GPU $((4 * K))
check_eq "changes nothing at the source" "$(prop /a DeviceMemoryKept)" \
        "a(st) 2 \"$GPU\" $((4 * K)) \"$VRAM\" 0"
check_eq "nor at the destination" "$(prop /t DeviceMemoryCurrent)" "a(st) 1 \"$GPU\" $((4 * K))"
check_refused "a Transfer of more than the source keeps" Underflow \
        "/t keeps fewer than 8192 bytes in region $GPU that the caller may release" Transfer /t /a $GPU $((8 * K))
check_eq "changes nothing at the destination" "$(prop /a DeviceMemoryCurrent)" \
        "a(st) 2 \"$GPU\" $((4 * K)) \"$VRAM\" 0"
check_eq "nor at the source" "$(prop /t DeviceMemoryKept)" "a(st) 1 \"$GPU\" $((4 * K))"
run as_nobody busctl --address="$BUS_ADDR" call org.memacct1 /org/memacct1 org.memacct1.Manager \
        Transfer ssst /t /a $GPU 1
check_eq "nobody may not transfer root's charges" "$ERR" "Call failed: /t: permission denied"
check_run "Charge /a memory kept" 0 mcall Charge stsb /a $((8 * K)) "" true
check_run "Transfer in memory" 0 mcall Transfer ssst /a /t memory $((8 * K))
check_eq "moves MemoryKept" "$(propv /a MemoryKept):$(propv /t MemoryKept)" "0:$((8 * K))"
check_eq "and no device region's" "$(prop /t DeviceMemoryKept)" "a(st) 1 \"$GPU\" $((4 * K))"
check_run "Uncharge /t memory" 0 mcall Uncharge stsb /t $((8 * K)) "" true

# ---- EvictValuable ----

check_run "CreateGroup /p" 0 mcall CreateGroup 'sa{st}u' /p 0 $NO_OWNER
check_run "CreateGroup /p/min" 0 mcall CreateGroup 'sa{st}u' /p/min 0 $NO_OWNER
check_run "CreateGroup /p/low" 0 mcall CreateGroup 'sa{st}u' /p/low 0 $NO_OWNER
check_run "min in the region" 0 mcall SetRegionLimits 'ssa{st}' /p/min $GPU 1 min $((4 * K))
check_run "low in the region" 0 mcall SetRegionLimits 'ssa{st}' /p/low $GPU 1 low $((4 * K))
check_run "charge /p/min" 0 mcall ChargeRegion sstb /p/min $GPU $((4 * K)) true
check_run "charge /p/low" 0 mcall ChargeRegion sstb /p/low $GPU $((4 * K)) true
check_eq "the root's limit evicts anything" "$(mcall EvictValuable sssb "" /p/min $GPU false)" 's "yes"'
check_eq "min protects under /p" "$(mcall EvictValuable sssb /p /p/min $GPU false)" 's "no"'
check_eq "low protects, and says so" "$(mcall EvictValuable sssb /p /p/low $GPU false)" 's "hit_low"'
check_eq "unless low is ignored" "$(mcall EvictValuable sssb /p /p/low $GPU true)" 's "yes"'
check_eq "a group outside the limit's subtree" "$(mcall EvictValuable sssb /p /a $GPU false)" 's "no"'
check_eq "the limit itself" "$(mcall EvictValuable sssb /p /p $GPU false)" 's "yes"'
check_run "charge /p/min in memory" 0 mcall Charge stsb /p/min $((4 * K)) "" true
check_eq "protection is the region's: memory has none here" \
        "$(mcall EvictValuable sssb /p /p/min memory false)" 's "yes"'
check_run "release /p/min's memory" 0 mcall Uncharge stsb /p/min $((4 * K)) "" true
check_refused "EvictValuable in an unknown region" NotFound "no region 'nope' (memacctctl region list)" \
        EvictValuable /p /p/min nope false
check_refused "EvictValuable of a missing group" NotFound "/nope: no such group" \
        EvictValuable /p /nope $GPU false

# ---- RemoveRegion ----

check_refused "RemoveRegion while charged" Busy "region $GPU is in use: something is charged to it" \
        RemoveRegion $GPU
check_refused "RemoveRegion of memory" InvalidArgument "memory is built in" RemoveRegion memory
check_refused "RemoveRegion of an unknown region" NotFound "no region 'nope'" RemoveRegion nope
check_run "RemoveRegion of one charged nothing" 0 mcall RemoveRegion s $VRAM
check_match "it is gone from ListRegions" "$(mcall ListRegions)" \
        "^a\(stttu\) 2 \"memory\" $MAX [0-9]+ [0-9]+ [0-9]+ \"$GPU\" $CAP [0-9]+ [0-9]+ [0-9]+$"
check_eq "and from the groups, with its limits" "$(prop /a DeviceMemoryLow)" "a(st) 1 \"$GPU\" $((2 * K))"

# ---- the signals ----

# Memory's own events on /a, after every region event: memory's Event
# must come for these and for nothing before.
check_run "SetLimits /a memory max" 0 mcall SetLimits 'sa{st}b' /a 1 max $((64 * K)) false
run mcall Charge stsb /a $((128 * K)) "" true
check_eq "a memory charge over max" "$RC" 1
if wait_for 10 grep -q "Manager.Event ('/a', 'max', uint64 1)" "$TMP/monitor.out"; then
        pass
else
        fail "memory's Event for /a arrives"
fi
mon=$(<"$TMP/monitor.out")
check_match "RegionEvent carries the region" "$mon" \
        "^/org/memacct1: org\.memacct1\.Manager\.RegionEvent \('/a', '$GPU', 'max', uint64 1\)$"
check_match "and the child's refusal is the parent's event" "$mon" \
        "Manager\.RegionEvent \('/a', '$GPU', 'max', uint64 2\)$"
check_match "RegionEventBy names who raised it" "$mon" \
        "Manager\.RegionEventBy \('/a', '$GPU', 'oom', uint64 1, uint32 [1-9][0-9]*, uint32 0\)$"
check_match "a refused Transfer raises the destination's" "$mon" \
        "Manager\.RegionEvent \('/t', '$GPU', 'max', uint64 1\)$"
check_eq "Event came for /a's memory events only" "$(grep -c "Manager\.Event ('/a'" <<<"$mon")" 2
check_nomatch "no Event names a device region's group" "$mon" "Manager\.Event(By)? \('/(a/c|t|big)'"
check_match "a region's limits announce DeviceMemoryMax" "$mon" \
        "_2fa: org\.freedesktop\.DBus\.Properties\.PropertiesChanged \('org\.memacct1\.Group', \{'DeviceMemoryMax': <\[\('$GPU', uint64 16384\)\]>, 'DeviceMemoryHigh': <\[\('$GPU', uint64 12288\)\]>, 'DeviceMemoryLow'"
check_match "memory's limits announce MemoryLow" "$mon" \
        "_2fa: org\.freedesktop\.DBus\.Properties\.PropertiesChanged \('org\.memacct1\.Group', \{'MemoryLow': <uint64 $M>\}"
check_eq "MemoryMax was announced once, for memory's max" \
        "$(grep "_2fa: .*PropertiesChanged" <<<"$mon" | grep -c "'MemoryMax'")" 1

# ---- memory, as it was ----

check_eq "GetManagedObjects' groups carry 34 properties" \
        "$(bctl call org.memacct1 /org/memacct1 org.freedesktop.DBus.ObjectManager GetManagedObjects |
                grep -Eo '"org.memacct1.Group" [0-9]+ "Path"' | sort -u)" '"org.memacct1.Group" 34 "Path"'
check_run "Charge in memory" 0 mcall Charge stsb /big $M file true
check_eq "MemoryCurrent" "$(propv /big MemoryCurrent)" $M
check_eq "MemoryKept" "$(propv /big MemoryKept)" $M
# /big has counters in the region since its refused charge there.
check_eq "no memory goes to a device region" "$(prop /big DeviceMemoryCurrent)" "a(st) 1 \"$GPU\" 0"
check_run "Uncharge in memory" 0 mcall Uncharge stsb /big $M file true
check_eq "ChargeRegion of memory is Charge of anon" "$(mcall ChargeRegion sstb /big memory $K true)" "tt 0 0"
check_eq "MemoryKept" "$(propv /big MemoryKept)" $K
check_run "UnchargeRegion of \"\" is Uncharge" 0 mcall UnchargeRegion sstb /big "" $K true
check_eq "MemoryKept after" "$(propv /big MemoryKept)" 0

# ---- GetManagedObjects, bounded as its reply grows with the regions ----

gmo() {
        bctl call org.memacct1 /org/memacct1 org.freedesktop.DBus.ObjectManager GetManagedObjects
}
{
        echo "create /many"
        for ((i = 0; i < 200; i++)); do
                echo "create /many/g$i"
        done
} >"$TMP/many.cmds"
check_run "200 groups more" 0 ctl -f "$TMP/many.cmds"
groups=$(mcall ListGroups sb / true | grep -Eo '^a\(so\) [0-9]+' | cut -d' ' -f2)
check_run "GetManagedObjects of $groups groups in memory and one region" 0 gmo
for ((i = 1; i <= 30; i++)); do
        mcall AddRegion st "r$i" $MAX >/dev/null || fail "AddRegion r$i"
done
run gmo
# 4096 groups shared among 32 regions, memory included.
check_eq "in 32 regions, refused past 128 groups" "$ERR" \
        "Call failed: GetManagedObjects: $groups groups are more than one reply carries here (at most 128): list them with ListGroupsPage"
for ((i = 1; i <= 30; i++)); do
        mcall RemoveRegion s "r$i" >/dev/null || fail "RemoveRegion r$i"
done
check_run "and answered once they are gone" 0 gmo
check_run "the 200 removed" 0 ctl remove -r /many

# ---- the end: every charge released, the region removed ----

check_run "release /a's" 0 mcall UnchargeRegion sstb /a $GPU $((4 * K)) true
check_run "release /t's" 0 mcall UnchargeRegion sstb /t $GPU $((4 * K)) true
check_run "release /p/min's" 0 mcall UnchargeRegion sstb /p/min $GPU $((4 * K)) true
check_run "release /p/low's" 0 mcall UnchargeRegion sstb /p/low $GPU $((4 * K)) true
check_run "RemoveRegion once nothing is charged" 0 mcall RemoveRegion s $GPU
check_match "ListRegions is memory again, with every group" "$(mcall ListRegions)" \
        "^a\(stttu\) 1 \"memory\" $MAX 0 [0-9]+ 9$"
check_eq "and the groups use no region" "$(prop /a DeviceMemoryMax)" "a(st) 0"
check_refused "a charge in the removed region" NotFound "no region '$GPU' (memacctctl region list)" \
        ChargeRegion /a $GPU 1 true

check_stop_daemon
check_nomatch "no error was logged" "$(<"$DAEMON_LOG")" "error:"
