#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# Device memory regions through memacctctl, over the socket and over
# D-Bus alike (each block runs once per transport): region add, list and
# remove; charges in a region and their refusals (a group's max, the
# capacity at the root, which the message names); set in the kernel's
# dmem grammar (stripping, tab, max, suffixes, two regions in one write,
# an unknown region, a bad size) and as REGION.max= and shares of the
# capacity; show's dmem.* lines as the kernel's files read; per-region
# events and protection; tree and top --region; transfer, also under
# concurrent charges; evict-valuable against dmem's rule; and the
# regions, limits and kept charges after kill -9.

# shellcheck source-path=SCRIPTDIR source=../lib.sh
source "$(dirname "$0")/../lib.sh"

M=$((1024 * 1024))
G=$((1024 * M))
VRAM=drm/0000:03:00.0/vram0
VID=nvidia/0000:3b:00.0/vidmem

check_start_both || exit 1

# rfield PATH REGION KEY: KEY of PATH's counters in REGION, from show --json.
rfield() {
        field "$1" "[r[\"$3\"] for r in d.get(\"regions\", []) if r[\"name\"] == \"$2\"]"
}

for t in sock bus; do
        c=ctl_$t
        P=/$t # each transport its own tree, so that the blocks do not meet
        R=$t-gpu0

        # ---- the registry ----

        check_run "$t: region add" 0 $c region add "$R" capacity=1G
        check_run "$t: the same again is a success" 0 $c region add "$R" capacity=1G
        check_run "$t: another capacity is refused" 1 $c region add "$R" capacity=2G
        check_match "$t: saying so" "$ERR" "capacity"
        check_run "$t: a space is not in a region name" 1 $c region add "bad name" capacity=1G
        check_run "$t: memory is built in" 1 $c region add memory capacity=1G
        check_run "$t: a region with the kernel's kind of name" 0 $c region add "$t/0000:3b:00.0/vidmem"
        check_run "$t: region list" 0 $c --json region list
        check_eq "$t: memory first, then the regions" \
                "$(jget '[r["name"] for r in d][0]' <<<"$OUT")" memory
        check_eq "$t: the capacity listed" \
                "$(jget "[r['capacity'] for r in d if r['name'] == '$R']" <<<"$OUT")" "[$G]"
        check_eq "$t: no capacity reads max" \
                "$(jget "[r['capacity'] for r in d if r['name'] == '$t/0000:3b:00.0/vidmem']" <<<"$OUT")" '["max"]'
        check_run "$t: a non-root uid may not add a region" 1 as_nobody "${CTL_SOCK[@]}" region add "$t-x"

        # ---- charges, limits, the capacity ----

        check_run "$t: create $P/a/b" 0 $c create -p "$P/a/b"
        check_run "$t: charge in the region" 0 $c charge --region "$R" "$P/a/b" 100M
        check_eq "$t: the region's current" "$(rfield "$P/a/b" "$R" current)" "[$((100 * M))]"
        check_eq "$t: the parent's too" "$(rfield "$P/a" "$R" current)" "[$((100 * M))]"
        check_eq "$t: memory is another counter" "$(field "$P/a/b" 'd["current"]')" 0
        check_run "$t: --stat and --region exclude each other" 2 $c charge --region "$R" --stat anon "$P/a/b" 1M
        check_run "$t: an unknown region is refused" 1 $c charge --region nosuch "$P/a/b" 1M
        check_match "$t: naming it" "$ERR" "nosuch"

        # The kernel's grammar, case by case.
        check_run "$t: dmem.max with white space around the line" 0 $c set "$P/a" "dmem.max=  $R 200M  "
        check_eq "$t: stripped" "$(rfield "$P/a" "$R" max)" "[$((200 * M))]"
        check_run "$t: a tab between name and value" 0 $c set "$P/a" "dmem.max=$R	300M"
        check_eq "$t: tab" "$(rfield "$P/a" "$R" max)" "[$((300 * M))]"
        check_run "$t: max" 0 $c set "$P/a" "dmem.max=$R max"
        check_eq "$t: max reads max" "$(rfield "$P/a" "$R" max)" '["max"]'
        check_run "$t: two regions in one write" 0 $c set "$P/a" \
                "dmem.low=$R 1g
$t/0000:3b:00.0/vidmem 2K"
        check_eq "$t: the first" "$(rfield "$P/a" "$R" low)" "[$G]"
        check_eq "$t: the second" "$(rfield "$P/a" "$t/0000:3b:00.0/vidmem" low)" "[2048]"
        check_run "$t: an unknown region" 1 $c set "$P/a" "dmem.max=nosuch 1G"
        check_run "$t: a bad size is a usage error" 2 $c set "$P/a" "dmem.max=$R 1.5G"
        check_run "$t: a name with no value" 2 $c set "$P/a" "dmem.max=$R"
        check_run "$t: two separators" 2 $c set "$P/a" "dmem.max=$R  1G"
        check_run "$t: a bad line refuses the whole write" 2 $c set "$P/a" "dmem.min=$R 1M
$R lots"
        check_eq "$t: nothing of it was applied" "$(rfield "$P/a" "$R" min)" "[0]"
        check_run "$t: REGION.max=" 0 $c set "$P/a" "$R.max=150M"
        check_eq "$t: REGION.max" "$(rfield "$P/a" "$R" max)" "[$((150 * M))]"
        check_run "$t: a share of the capacity" 0 $c set "$P/a" "$R.high=12.5%"
        check_eq "$t: 12.5% of 1G" "$(rfield "$P/a" "$R" high)" "[$((128 * M))]"
        check_run "$t: a share of an unlimited region means nothing" 1 $c set "$P/a" \
                "$t/0000:3b:00.0/vidmem.max=50%"

        # Refusals name the region: a group's max, then the capacity.
        check_run "$t: a charge past a's max in the region" 1 $c charge --region "$R" "$P/a/b" 60M
        check_match "$t: names the group and the region" "$ERR" "$P/a.*$R|$R.*$P/a"
        check_eq "$t: the max event in the region" \
                "$(field "$P/a" "[r['events_local']['max'] for r in d['regions'] if r['name'] == '$R']")" "[1]"
        check_eq "$t: memory has none" "$(field "$P/a" 'd["events_local"]["max"]')" 0
        check_run "$t: create $P/c" 0 $c create "$P/c"
        check_run "$t: up to the capacity" 0 $c charge --region "$R" "$P/c" 924M
        check_run "$t: past it" 1 $c charge --region "$R" "$P/c" 1M
        check_match "$t: at its capacity" "$ERR" "$R is at its capacity"
        check_run "$t: the root's max in a region is its capacity" 1 $c set / "$R.max=2G"

        # A max below usage is taken, as a dmem.max write: new charges refused, oom said.
        check_run "$t: max below usage" 0 $c set "$P/a" "$R.max=50M"
        check_eq "$t: taken" "$(rfield "$P/a" "$R" max)" "[$((50 * M))]"
        # The refusal above counted one oom (nothing can be drained in a
        # device region), the max taken below usage a second.
        check_eq "$t: an oom event" \
                "$(field "$P/a" "[r['events_local']['oom'] for r in d['regions'] if r['name'] == '$R']")" "[2]"
        check_run "$t: and new charges refused" 1 $c charge --region "$R" "$P/a/b" 4K

        # show, as the kernel's files read.
        check_run "$t: show" 0 $c show "$P/a"
        check_match "$t: dmem.current" "$OUT" "^dmem.current: ($R|$t/0000:3b:00.0/vidmem) [0-9]+$"
        check_match "$t: dmem.max line per region" "$OUT" "$(printf '\t')$t/0000:3b:00.0/vidmem max"
        check_match "$t: nested-keyed events" "$OUT" "$R low=0 high=[0-9]+ max=2 oom=3"
        check_nomatch "$t: capacity on the root only" "$OUT" '^dmem.capacity'
        check_run "$t: show /" 0 $c show /
        check_match "$t: the root shows capacities" "$OUT" "$R $G"
        check_run "$t: show --region" 0 $c show --region "$R" "$P/a"
        check_nomatch "$t: only that region" "$OUT" "vidmem"

        # tree and top in a region.
        check_run "$t: tree --region" 0 $c tree --region "$R" "$P"
        check_match "$t: a's usage in the region" "$OUT" "^ +a +$((100 * M)) "
        check_run "$t: top -b -n1 --region" 0 $c top -b -n 1 -r --region "$R" "$P"
        check_match "$t: top shows the region's bytes" "$OUT" "$((100 * M))"

        # Peak reset per region.
        check_run "$t: uncharge b" 0 $c uncharge --region "$R" "$P/a/b" 100M
        check_run "$t: reset-peak --region" 0 $c reset-peak --region "$R" "$P/a"
        check_eq "$t: the peak restarts" "$(rfield "$P/a" "$R" peak)" "[0]"
        check_run "$t: release c" 0 $c uncharge --region "$R" "$P/c" 924M

        # ---- transfer ----

        check_run "$t: set a's max back" 0 $c set "$P/a" "$R.max=200M"
        check_run "$t: create $P/srv" 0 $c create "$P/srv"
        check_run "$t: the server keeps 64M" 0 $c charge --region "$R" "$P/srv" 64M
        check_run "$t: transfer 48M to b" 0 $c transfer --region "$R" "$P/srv" "$P/a/b" 48M
        check_eq "$t: b keeps it" "$(rfield "$P/a/b" "$R" kept)" "[$((48 * M))]"
        check_eq "$t: the server the rest" "$(rfield "$P/srv" "$R" kept)" "[$((16 * M))]"
        check_run "$t: more than the server keeps" 1 $c transfer --region "$R" "$P/srv" "$P/a/b" 32M
        check_eq "$t: b unchanged" "$(rfield "$P/a/b" "$R" current)" "[$((48 * M))]"
        check_eq "$t: the server unchanged" "$(rfield "$P/srv" "$R" current)" "[$((16 * M))]"
        check_run "$t: a's max 50M" 0 $c set "$P/a" "$R.max=50M"
        check_run "$t: refused by a's max" 1 $c transfer --region "$R" "$P/srv" "$P/a/b" 16M
        check_eq "$t: the server keeps it" "$(rfield "$P/srv" "$R" current)" "[$((16 * M))]"
        check_eq "$t: b has no more" "$(rfield "$P/a/b" "$R" current)" "[$((48 * M))]"

        # Under concurrent charges of b, transfers never pass a's max and
        # the totals add up afterwards.
        check_run "$t: room for the race" 0 $c set "$P/a" "$R.max=64M"
        # The refused transfer above counted its bytes twice for a moment
        # (the destination first): the peak starts again from here.
        check_run "$t: a's peak from now" 0 $c reset-peak --region "$R" "$P/a"
        check_run "$t: the server keeps 64M more" 0 $c charge --region "$R" "$P/srv" 64M
        (for _ in $(seq 40); do $c charge --region "$R" "$P/a/b" 1M 2>/dev/null && $c uncharge --region "$R" "$P/a/b" 1M; done) &
        racer=$!
        moved=0
        for _ in $(seq 40); do
                if $c transfer --region "$R" "$P/srv" "$P/a/b" 1M 2>/dev/null; then
                        moved=$((moved + 1))
                fi
        done
        wait "$racer" || true
        check_eq "$t: the server and b add up" \
                "$(( $(rfield "$P/srv" "$R" current | tr -d '[]') + $(rfield "$P/a/b" "$R" current | tr -d '[]') ))" \
                "$(((16 + 64 + 48) * M))"
        check_eq "$t: b got what was moved" "$(rfield "$P/a/b" "$R" kept)" "[$(((48 + moved) * M))]"
        peak=$(rfield "$P/a" "$R" peak | tr -d '[]')
        if ((peak <= 64 * M)); then pass; else fail "$t: a's peak $peak passed its max during transfers"; fi

        # ---- evict-valuable: dmem's rule ----

        check_run "$t: protection tree" 0 $c create -p "$P/e/B/C"
        check_run "$t: D" 0 $c create "$P/e/B/D"
        check_run "$t: B min low" 0 $c set "$P/e/B" "dmem.min=$R 20M" "dmem.low=$R 80M"
        check_run "$t: D min" 0 $c set "$P/e/B/D" "$R.min=30M"
        check_run "$t: C 10M" 0 $c charge --region "$R" "$P/e/B/C" 10M
        check_run "$t: D 50M" 0 $c charge --region "$R" "$P/e/B/D" 50M
        check_eq "$t: the limit itself" "$($c evict-valuable --region "$R" "$P/e" "$P/e" || true)" yes
        check_eq "$t: outside its subtree" "$($c evict-valuable --region "$R" "$P/e/B" "$P/srv" || true)" no
        # B below e: its own min 20M, low 80M; 60M used: only low protects it.
        check_eq "$t: B hits low" "$($c evict-valuable --region "$R" "$P/e" "$P/e/B" || true)" hit_low
        check_eq "$t: B ignoring low" "$($c evict-valuable --ignore-low --region "$R" "$P/e" "$P/e/B" || true)" yes
        # D: emin 30*20/30 = 20M < 50M; elow (recursive) 80*50/60 = 66.7M >= 50M.
        check_eq "$t: D hits low" "$($c evict-valuable --region "$R" "$P/e" "$P/e/B/D" || true)" hit_low
        check_run "$t: the exit status of no" 1 $c evict-valuable --region "$R" "$P/e/B" "$P/srv"
        check_run "$t: release C" 0 $c uncharge --region "$R" "$P/e/B/C" 10M
        check_run "$t: release D" 0 $c uncharge --region "$R" "$P/e/B/D" 50M

        # ---- removal ----

        check_run "$t: a charged region stays" 1 $c region remove "$R"
        check_match "$t: in use" "$ERR" "in use"
done

# ---- watch: a subscription names its region ----

check_run "w" 0 ctl create /sock/w max=1M
bg "$TMP/watch-mem.out" "${CTL_SOCK[@]}" watch /sock/w
WMEM=$BG_PID
bg "$TMP/watch-all.out" "${CTL_SOCK[@]}" watch --region '*' /sock/w
WALL=$BG_PID
check_run "w's region max" 0 ctl set /sock/w "sock-gpu0.max=1M"
sleep 0.5
check_run "a region refusal" 1 ctl charge --region sock-gpu0 /sock/w 2M
check_run "a memory refusal" 1 ctl charge /sock/w 2M
if wait_for 10 grep -q "memory:max" "$TMP/watch-all.out" && wait_for 10 grep -q "sock-gpu0:max" "$TMP/watch-all.out"; then
        pass
else
        fail "watch --region '*' sees both: $(cat "$TMP/watch-all.out")"
fi
if wait_for 10 grep -q " max 1" "$TMP/watch-mem.out"; then pass; else fail "watch sees memory's: $(cat "$TMP/watch-mem.out")"; fi
check_eq "a plain watch sees memory's events only" "$(grep -c max "$TMP/watch-mem.out")" 1
stop_bg "$WMEM" TERM >/dev/null 2>&1 || true
stop_bg "$WALL" TERM >/dev/null 2>&1 || true

# ---- kill -9: regions, region limits and kept charges are durable ----

before=$(ctl --json show /sock/srv)
stop_daemon KILL >/dev/null 2>&1 || true
check_start_daemon || exit 1
check_run "region list after kill -9" 0 ctl --json region list
check_eq "the regions are back" "$(jget '[r["name"] for r in d if r["name"].startswith("sock-")]' <<<"$OUT")" '["sock-gpu0"]'
check_eq "the capacity too" "$(jget '[r["capacity"] for r in d if r["name"] == "sock-gpu0"]' <<<"$OUT")" "[$G]"
check_eq "the server's kept charge" "$(rfield /sock/srv sock-gpu0 kept)" \
        "$(jget '[r["kept"] for r in d["regions"] if r["name"] == "sock-gpu0"]' <<<"$before")"
check_eq "a's limit" "$(rfield /sock/a sock-gpu0 max)" "[$((64 * M))]"
check_eq "B's low" "$(rfield /sock/e/B sock-gpu0 low)" "[$((80 * M))]"

finish
