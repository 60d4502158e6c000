#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# Reclaim through memacctctl and libmemacct: hold --reclaimable is a cache
# that gives back what the daemon asks for (memacct_set_reclaimable(),
# answered from memacct_next_event()). A charge a max would refuse takes
# room from it instead, in memory and in a device region; protection (min)
# keeps what it covers; sessions shows what it was asked and gave; a plain
# hold is never asked; --reclaimable is for hold only.

# shellcheck source-path=SCRIPTDIR source=../lib.sh
source "$(dirname "$0")/../lib.sh"

M=$((1024 * 1024))

check_start_daemon || exit 1

session_field() { # PATH KEY: KEY of the one session at or below PATH
        ctl --json sessions "$1" | jget "d[0][\"$2\"]" 2>/dev/null || echo none
}

# ---- memory ----
check_run "a budget" 0 ctl create /r max=10M
ctl create /r/cache
ctl create /r/plain
ctl create /r/app
bg "$TMP/cache.out" "${CTL[@]}" hold /r/cache 6M --reclaimable
cache=$BG_PID
if wait_for 10 file_has "$TMP/cache.out" '^reclaimable$'; then pass; else fail "hold --reclaimable says so: $(<"$TMP/cache.out")"; fi
bg "$TMP/plain.out" "${CTL[@]}" hold /r/plain 2M
plain=$BG_PID
wait_for 10 file_has "$TMP/plain.out" '^holding 2M in /r/plain$' || fail "a plain hold: $(<"$TMP/plain.out")"

check_run "a charge past max takes room from the cache" 0 ctl charge /r/app 4M
check_match "the cache says what it gave back" "$(<"$TMP/cache.out")" '^gave back [0-9]+ bytes, holding [0-9]+$'
check_eq "the plain hold was not asked" "$(current /r/plain)" $((2 * M))
gave=$((6 * M - $(current /r/cache)))
if [ "$gave" -ge $((2 * M)) ] && [ "$gave" -le $((6 * M)) ]; then pass; else fail "the cache gave 2M or a little more: $gave"; fi
check_eq "sessions shows what the cache was asked for" "$(session_field /r/cache reclaim_asked)" "$gave"
check_eq "and what it gave back" "$(session_field /r/cache reclaim_released)" "$gave"
check_eq "and that it was never late" "$(session_field /r/cache reclaim_late)" 0
check_eq "no oom where reclaim made room" "$(field /r 'd["events_local"]["oom"]')" 0

check_run "with nothing left to take, the charge is refused" 1 ctl charge /r/app 8M
check_match "naming the refusing group" "$ERR" '\(max of /r\)'
check_eq "an oom is counted then" "$(field /r 'd["events_local"]["oom"]')" 1

# ---- min keeps what it covers ----
stop_bg "$cache" TERM || fail "hold --reclaimable exits 0"
ctl uncharge /r/app 4M
check_run "protect 1M of the cache's group" 0 ctl set /r/cache min=1M
bg "$TMP/cache.out" "${CTL[@]}" hold /r/cache 6M --reclaimable
cache=$BG_PID
wait_for 10 file_has "$TMP/cache.out" '^reclaimable$' || fail "a new cache: $(<"$TMP/cache.out")"
check_run "a charge that would need more than min leaves" 1 ctl charge /r/app 7680K
check_eq "min kept its 1M" "$(current /r/cache)" $M
stop_bg "$cache" TERM || fail "hold --reclaimable exits 0"
stop_bg "$plain" TERM || fail "hold exits 0"

# ---- a device region ----
check_run "a region" 0 ctl region add gpu0 capacity=64M
ctl create /g
check_run "its budget" 0 ctl set /g gpu0.max=16M
ctl create /g/cache
ctl create /g/app
bg "$TMP/gcache.out" "${CTL[@]}" hold /g/cache 12M --region gpu0 --reclaimable
gcache=$BG_PID
wait_for 10 file_has "$TMP/gcache.out" '^reclaimable$' || fail "hold --region --reclaimable: $(<"$TMP/gcache.out")"
check_run "a region charge past its max takes room from the region's cache" 0 ctl charge /g/app 8M --region gpu0
check_eq "the region is at most its max" "$(($(field /g 'd["regions"][0]["current"]') <= 16 * M))" 1
check_eq "memory was not touched" "$(current /g/cache)" 0
stop_bg "$gcache" TERM || fail "hold --region --reclaimable exits 0"

# ---- proactive reclaim, as memory.reclaim ----
check_run "a protected target" 0 ctl create /p min=8M
ctl create /p/cache
bg "$TMP/pcache.out" "${CTL[@]}" hold /p/cache 6M --reclaimable
pcache=$BG_PID
wait_for 10 file_has "$TMP/pcache.out" '^reclaimable$' || fail "a cache under it: $(<"$TMP/pcache.out")"
check_run "reclaim ignores the target's own protection" 0 ctl reclaim /p 2M
check_match "and says what came back" "$OUT" '^released [0-9]+$'
released=${OUT#released }
if [ "$released" -ge $((2 * M)) ] && [ "$released" -le $((3 * M)) ]; then pass; else fail "2M or a little more came back: $released"; fi
check_eq "the cache holds that much less" "$(current /p/cache)" $((6 * M - released))
check_run "a child's protection holds" 0 ctl set /p/cache min=3M
check_run "reclaim of more than is unprotected" 0 ctl --json reclaim /p 4M
check_eq "only down to the child's min" "$(current /p/cache)" $((3 * M))
check_eq "JSON says what came back" "$(jget 'd["released"]' <<<"$OUT")" $((6 * M - released - 3 * M))
check_run "reclaim of a missing group" 1 ctl reclaim /nope 1M
stop_bg "$pcache" TERM || fail "hold --reclaimable exits 0"

# ---- a max below usage asks for the difference ----
ctl create /m
ctl create /m/cache
bg "$TMP/mcache.out" "${CTL[@]}" hold /m/cache 8M --reclaimable
mcache=$BG_PID
wait_for 10 file_has "$TMP/mcache.out" '^reclaimable$' || fail "a cache: $(<"$TMP/mcache.out")"
check_run "--no-wait: a max below usage is refused, nobody asked" 1 ctl set /m max=6M --no-wait
check_eq "the cache was not asked" "$(current /m/cache)" $((8 * M))
check_run "without force, the cache gives back and the max then fits" 0 ctl set /m max=6M
if [ "$(current /m)" -le $((6 * M)) ]; then pass; else fail "usage fits the max: $(current /m)"; fi
check_eq "the max is set" "$(field /m 'd["max"]')" $((6 * M))
check_run "forced: taken at once, then the difference asked for" 0 ctl set /m max=2M --force
if [ "$(current /m)" -le $((2 * M)) ]; then pass; else fail "usage came down under the forced max: $(current /m)"; fi
check_run "forced and --no-wait: taken, nobody asked" 0 ctl set /m max=1M --force --no-wait
check_eq "usage stays where it was" "$(($(current /m) > M))" 1
check_eq "a forced max below usage counts oom at once" "$(($(field /m 'd["events_local"]["oom"]') >= 1))" 1
stop_bg "$mcache" TERM || fail "hold --reclaimable exits 0"

# ---- high means reclaim: the charge stands, the overage is asked for ----
ctl create /hi high=4M
ctl create /hi/cache
ctl create /hi/app
bg "$TMP/hcache.out" "${CTL[@]}" hold /hi/cache 3M --reclaimable
hcache=$BG_PID
wait_for 10 file_has "$TMP/hcache.out" '^reclaimable$' || fail "a cache: $(<"$TMP/hcache.out")"
check_run "a charge past high succeeds" 0 ctl charge /hi/app 3M
check_eq "and counts high" "$(($(field /hi 'd["events_local"]["high"]') >= 1))" 1
if wait_for 10 file_has "$TMP/hcache.out" '^gave back'; then pass; else fail "the cache was asked for the overage: $(<"$TMP/hcache.out")"; fi
if wait_for 10 eval '[ "$(current /hi)" -le $((4 * M)) ]'; then pass; else fail "usage came back under high: $(current /hi)"; fi
check_eq "what the app charged stands" "$(current /hi/app)" $((3 * M))
stop_bg "$hcache" TERM || fail "hold --reclaimable exits 0"

check_run "--reclaimable is for hold only" 2 ctl charge /r/app 1K --reclaimable

finish
