#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# Device memory regions through kill -9, with the real daemon: the regions
# memacctd.conf declares are registered and saved; a group's limits and
# kept charges in a region (restored from a state written as the daemon
# writes it) survive kill -9, from a whole save and from a journal batch;
# a restart with a file that no longer declares a region keeps it with
# its groups' parts; a declared capacity that differs is taken only while
# nothing is charged to the region, on a reload too, and then drops the
# groups' limits in it. The regions are read back from the state the
# daemon saves: the requests that read them are not this test's.

source "$(dirname "$0")/../lib.sh"

GPU=gpu0
VRAM=drm/0000:03:00.0/vram0
G=$((1 << 30))

# write_state LINE...: $STATE/state of these lines, framed as the daemon
# frames it: header, lines, and the trailer with the group count and the
# FNV-1a hash of everything before it.
write_state() {
        mkdir -p "$STATE"
        "$PY" - "$STATE/state" "$@" <<'EOF'
import sys
text = "memacctd-state 2\n" + "".join(line + "\n" for line in sys.argv[2:])
h = 0xcbf29ce484222325
for b in text.encode():
    h = ((h ^ b) * 0x100000001b3) & 0xffffffffffffffff
groups = sum(1 for line in sys.argv[2:] if line.startswith("group "))
with open(sys.argv[1], "w") as f:
    f.write(text + "end %d fnv1a64=%016x\n" % (groups, h))
EOF
}

# state_line PATTERN: the line of the saved state that starts with PATTERN.
state_line() {
        grep -E -- "^$1( |\$)" "$STATE/state" || echo "(no line '$1')"
}

# kill9: the daemon is killed, as a crash would.
kill9() {
        kill -KILL "$DAEMON_PID"
        wait "$DAEMON_PID" 2>/dev/null || true
        DAEMON_PID=
}

# ---- a state with regions, and a file that declares one more ----

write_state "region $GPU capacity=$((8 * G))" \
        "region $VRAM capacity=max" \
        "group / owner=0 max=max high=max low=0 min=0 dmem:$GPU.high=$((7 * G))" \
        "group /a owner=0 max=max high=max low=0 min=0 dmem:$GPU.max=$((4 * G)) dmem:$GPU.kept=1048576" \
        "group /d owner=1000 max=max high=max low=0 min=0 dmem:$VRAM.kept=8192 dmem:$VRAM.kept-delegator=4096"
DAEMON_CONF=$'[regions]\nregion = gpu0 8G\nregion = nv0 1G\n'
check_start_daemon || exit 1
# An OK waits for a save that holds the change: the start's whole save
# (the restored state and the declared region) is on disk by then.
check_run "a group is created" 0 ctl create /x
check_eq "the declared region is saved" "$(state_line "region nv0")" "region nv0 capacity=$G"
check_eq "the restored one keeps its capacity" "$(state_line "region $GPU")" "region $GPU capacity=$((8 * G))"
check_eq "one the file does not name is there" "$(state_line "region $VRAM")" "region $VRAM capacity=max"
check_match "/a keeps its max in gpu0" "$(state_line "group /a")" " dmem:$GPU\\.max=$((4 * G))( |\$)"
check_match "/a keeps its kept charge in gpu0" "$(state_line "group /a")" " dmem:$GPU\\.kept=1048576( |\$)"
check_match "/d keeps its delegator's part" "$(state_line "group /d")" \
        " dmem:$VRAM\\.kept=8192 dmem:$VRAM\\.kept-delegator=4096( |\$)"
check_match "the root keeps its high in gpu0" "$(state_line "group /")" " dmem:$GPU\\.high=$((7 * G))( |\$)"
check_nomatch "and no max: its capacity is" "$(state_line "group /")" "dmem:$GPU\\.max="

# ---- a journal batch: a group line carries its region fields ----

check_run "a kept charge on /a" 0 ctl charge /a 64K
check_match "the batch names the regions" "$(<"$STATE/journal")" "^region $GPU capacity=$((8 * G))\$"
check_match "and /a with its part in gpu0" "$(<"$STATE/journal")" \
        "^set /a .*kept\\.anon=65536.* dmem:$GPU\\.max=$((4 * G)) dmem:$GPU\\.kept=1048576"
kill9

# ---- restart: nv0 no longer declared, gpu0 declared larger but charged ----

DAEMON_CONF=$'[regions]\nregion = gpu0 16G\n'
check_start_daemon || exit 1
check_run "a group after the restart" 0 ctl create /y
check_eq "the charge acknowledged before kill -9 is there" "$(field /a 'd["kept"]')" 65536
check_eq "nv0 stays though the file no longer names it" "$(state_line "region nv0")" "region nv0 capacity=$G"
check_eq "gpu0, charged, keeps its capacity" "$(state_line "region $GPU")" "region $GPU capacity=$((8 * G))"
check_match "saying why" "$(<"$DAEMON_LOG")" \
        "region $GPU: capacity $((16 * G)) declared, but 1048576 bytes are charged to it: it keeps its capacity"
check_match "/a's part in gpu0 came back from the journal" "$(state_line "group /a")" \
        "kept\\.anon=65536.* dmem:$GPU\\.max=$((4 * G)) dmem:$GPU\\.kept=1048576"
check_match "/d's too" "$(state_line "group /d")" " dmem:$VRAM\\.kept=8192 dmem:$VRAM\\.kept-delegator=4096"

# ---- empty, it takes the file's capacity on a reload, and loses its limits ----

# The kept charges go with the group: nothing is charged to gpu0 then.
check_run "/a removed with its kept charges" 0 ctl remove -r --force /a
kill -HUP "$DAEMON_PID"
if wait_for 10 grep -q "capacity changed from $((8 * G)) to $((16 * G))" "$DAEMON_LOG"; then
        pass
else
        fail "a reload re-registers the empty gpu0 with the file's capacity"
fi
check_run "a group after the reload" 0 ctl create /z
check_eq "the new capacity is saved" "$(state_line "region $GPU")" "region $GPU capacity=$((16 * G))"
check_nomatch "the root's high in gpu0 went with the old registration" "$(state_line "group /")" "dmem:$GPU\\."
check_eq "nv0 is still there" "$(state_line "region nv0")" "region nv0 capacity=$G"
kill9

# ---- a file without [regions]: every region is restored from the state ----

DAEMON_CONF=''
check_start_daemon || exit 1
check_run "a group on a file without regions" 0 ctl create /w
check_eq "gpu0 with its capacity" "$(state_line "region $GPU")" "region $GPU capacity=$((16 * G))"
check_eq "vram0" "$(state_line "region $VRAM")" "region $VRAM capacity=max"
check_eq "nv0" "$(state_line "region nv0")" "region nv0 capacity=$G"
check_match "/d's part in vram0" "$(state_line "group /d")" " dmem:$VRAM\\.kept=8192 dmem:$VRAM\\.kept-delegator=4096"
check_stop_daemon
