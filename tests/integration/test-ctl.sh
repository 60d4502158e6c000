#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# Every memacctctl command against a real daemon: create, remove, set
# (--force), show (text, --json, --reclaim-root, --exact), tree (text,
# --json), charge/uncharge, hold, move, client (--exact), reset-peak,
# watch (text, --json), and the exit statuses: 0 done, 1 refused or
# failed (stderr names the cause, a refused charge names the group whose
# max refused it), 2 usage errors.

# shellcheck source-path=SCRIPTDIR source=../lib.sh
source "$(dirname "$0")/../lib.sh"

K=1024
M=$((1024 * 1024))

check_start_daemon || exit 1

# ---- create, show ----

check_run "create /t with max high low min" 0 ctl create /t max=1M high=768K low=256K min=128K
check_run "show /t" 0 ctl show /t
check_match "show prints the group" "$OUT" '^/t:$'
check_match "show prints max" "$OUT" "^memory.max: $M\$"
check_match "show prints high" "$OUT" "^memory.high: $((768 * K))\$"
check_match "show prints low" "$OUT" "^memory.low: $((256 * K))\$"
check_match "show prints min" "$OUT" "^memory.min: $((128 * K))\$"
check_match "show prints current" "$OUT" '^memory.current: 0$'
for key in peak effective_min effective_low failcnt events events.local stat pressure; do
        check_match "show prints $key" "$OUT" "^memory\\.$key: "
done

check_run "show --json /t" 0 ctl --json show /t
JSON=$OUT
check_eq "show --json keys" "$(jget 'sorted(d)' <<<"$JSON")" \
        "$(jget 'sorted(d)' <<<'{"path":0,"current":0,"peak":0,"max":0,"high":0,"low":0,"min":0,"effective_min":0,"effective_low":0,"failcnt":0,"events":0,"events_local":0,"stat":0,"owner":0,"owner_name":0,"kept":0,"session":0,"nr_sessions":0,"pressure":0}')"
check_eq "json path" "$(jget 'd["path"]' <<<"$JSON")" /t
check_eq "json max" "$(jget 'd["max"]' <<<"$JSON")" $M
check_eq "json high" "$(jget 'd["high"]' <<<"$JSON")" $((768 * K))
check_eq "json low" "$(jget 'd["low"]' <<<"$JSON")" $((256 * K))
check_eq "json min" "$(jget 'd["min"]' <<<"$JSON")" $((128 * K))
check_eq "json byte values are numbers" \
        "$(jget '[type(d[k]).__name__ for k in ("current","peak","max","high","low","min","effective_min","effective_low","failcnt")]' <<<"$JSON")" \
        '["int", "int", "int", "int", "int", "int", "int", "int", "int"]'
check_eq "json events are an object by name" "$(jget 'sorted(d["events"])' <<<"$JSON")" '["high", "low", "max", "oom"]'
check_eq "json events_local are an object by name" "$(jget 'sorted(d["events_local"])' <<<"$JSON")" '["high", "low", "max", "oom"]'
check_eq "json stat is an object by item" "$(jget 'sorted(d["stat"])' <<<"$JSON")" \
        '["anon", "device", "file", "kernel", "other", "shmem", "sock", "swap"]'
check_eq "json pressure has some and full, with the kernel's keys" \
        "$(jget '[sorted(d["pressure"][k]) for k in ("some", "full")]' <<<"$JSON")" \
        '[["avg10", "avg300", "avg60", "total"], ["avg10", "avg300", "avg60", "total"]]'
check_match "show prints memory.pressure in the kernel's text" "$(ctl show /t)" \
        '^memory\.pressure: some avg10=0\.00 avg60=0\.00 avg300=0\.00 total=0$'
check_match "show continues memory.pressure with full" "$(ctl show /t)" \
        $'^\tfull avg10=0\\.00 avg60=0\\.00 avg300=0\\.00 total=0$'

check_run "create /t/u without limits" 0 ctl create /t/u
check_eq "an unlimited max is the string max" "$(field /t/u 'd["max"]')" max
check_eq "an unlimited high is the string max" "$(field /t/u 'd["high"]')" max
check_eq "low defaults to 0" "$(field /t/u 'd["low"]')" 0
check_match "show prints an unlimited max as max" "$(ctl show /t/u)" '^memory.max: max$'

check_run "create with G and T suffixes" 0 ctl create /sz max=1G high=2T low=1K min=max
check_eq "max=1G" "$(field /sz 'd["max"]')" $((1 << 30))
check_eq "high=2T" "$(field /sz 'd["high"]')" $((2 << 40))
check_eq "low=1K" "$(field /sz 'd["low"]')" 1024
check_eq "min=max" "$(field /sz 'd["min"]')" max

check_run "create an existing group" 1 ctl create /t
check_match "create of an existing group says so" "$ERR" 'exists'
check_run "create without a parent" 1 ctl create /nope/x
check_match "create without a parent names it" "$ERR" '/nope/x'
check_run "create / is refused" 1 ctl create /
check_run "create of a relative path is refused" 1 ctl create rel
check_run "show of a missing group" 1 ctl show /nope
check_match "show of a missing group says so" "$ERR" 'no such group'

# ---- charge, uncharge ----

check_run "charge /t/u 100K --stat file" 0 ctl charge /t/u 100K --stat file
check_eq "the kept charge is in current" "$(current /t/u)" $((100 * K))
check_eq "and in the parent's" "$(current /t)" $((100 * K))
check_eq "show --exact reports the stat item" "$(field /t/u 'd["stat"]["file"]' --exact)" $((100 * K))
check_eq "and nothing as anon" "$(field /t/u 'd["stat"]["anon"]' --exact)" 0
check_run "uncharge more than is kept" 1 ctl uncharge /t/u 200K --stat file
check_match "the refusal says why" "$ERR" 'more than'
check_eq "nothing was released" "$(current /t/u)" $((100 * K))
check_run "uncharge of another stat item than was charged" 1 ctl uncharge /t/u 100K --stat anon
check_eq "nothing was released either" "$(current /t/u)" $((100 * K))
check_run "uncharge 40K file" 0 ctl uncharge /t/u 40K --stat file
check_eq "current after the uncharge" "$(current /t/u)" $((60 * K))
check_eq "peak stays" "$(field /t/u 'd["peak"]')" $((100 * K))
check_run "uncharge the rest" 0 ctl uncharge /t/u 60K --stat file
check_eq "current is 0 again" "$(current /t)" 0
# Without --exact the statistics catch up within the flush interval (2 s).
ctl charge /t/u 8K --stat sock
stat_sock_is() {
        [[ $(field /t/u 'd["stat"]["sock"]') == "$1" ]]
}
if wait_for 10 stat_sock_is $((8 * K)); then pass; else fail "stat.sock without --exact catches up: $(field /t/u 'd["stat"]')"; fi
ctl uncharge /t/u 8K --stat sock
check_run "charge with an unknown stat item" 2 ctl charge /t/u 1 --stat bogus
check_run "charge of a missing group" 1 ctl charge /nope 1K

# A refused charge: exit 1, and stderr names the group whose max refused.
ctl create /lim max=1M
ctl create /lim/c
check_run "charge up to max" 0 ctl charge /lim/c 1M
check_run "one byte over max" 1 ctl charge /lim/c 1
check_match "the refusal names the refusing group" "$ERR" '\(max of /lim\)'
check_match "the refusal says limit exceeded" "$ERR" 'limit exceeded'
check_eq "the refused charge left nothing" "$(current /lim)" $M
check_eq "failcnt counts the refusal" "$(field /lim 'd["failcnt"]')" 1
check_eq "a max event on the refusing group" "$(field /lim 'd["events_local"]["max"]')" 1
check_eq "hierarchical max events on the parent" "$(field / 'd["events"]["max"] >= 1')" True
check_run "hold over max is refused too" 1 ctl hold /lim/c 1K
check_match "the hold refusal names the refusing group" "$ERR" '\(max of /lim\)'

# high: every charge that ends above it raises a high event on the group
# whose high it is, counted in its ancestors' hierarchical events too.
ctl create /hi high=100K
ctl create /hi/c
ctl charge /hi/c 50K
check_eq "below high: no event" "$(field /hi 'd["events"]["high"]')" 0
ctl charge /hi/c 100K
ctl charge /hi/c 10K
check_eq "two charges above high: two local events" "$(field /hi 'd["events_local"]["high"]')" 2
check_eq "and two hierarchical ones" "$(field /hi 'd["events"]["high"]')" 2
check_eq "none on the child, whose high is max" "$(field /hi/c 'd["events"]["high"]')" 0
check_eq "the charges are not refused by high" "$(current /hi)" $((160 * K))

# Many clients at once: nothing lost, nothing counted twice.
ctl create /par max=1M
pids=()
for i in $(seq 40); do
        "${CTL[@]}" charge /par 20K --stat other >/dev/null 2>&1 &
        pids+=($!)
done
ok=0
for pid in "${pids[@]}"; do
        if wait "$pid"; then ok=$((ok + 1)); fi
done
# 1M admits 51 charges of 20K: all 40 fit.
check_eq "40 concurrent charges all succeed" "$ok" 40
check_eq "40 concurrent charges are counted exactly" "$(current /par)" $((40 * 20 * K))
pids=()
for i in $(seq 10); do
        "${CTL[@]}" charge /par 100K >/dev/null 2>&1 &
        pids+=($!)
done
ok=0
for pid in "${pids[@]}"; do
        if wait "$pid"; then ok=$((ok + 1)); fi
done
# 224K were left: exactly two of ten 100K charges fit.
check_eq "racing charges near max: exactly as many as fit" "$ok" 2
check_eq "and usage stays within max" "$(current /par)" $((800 * K + 200 * K))
check_eq "the refusals are counted" "$(field /par 'd["failcnt"]')" 8

# ---- set ----

ctl create /s max=1M
ctl charge /s 600K
check_run "set several limits" 0 ctl set /s high=512K low=64K min=32K
check_eq "set high" "$(field /s 'd["high"]')" $((512 * K))
check_eq "set low" "$(field /s 'd["low"]')" $((64 * K))
check_eq "set min" "$(field /s 'd["min"]')" $((32 * K))
check_run "set max below usage without --force" 1 ctl set /s max=512K
check_match "the refusal says why" "$ERR" 'usage is above the new max'
check_match "the refusal names the group" "$ERR" '/s'
check_eq "max is unchanged" "$(field /s 'd["max"]')" $M
check_run "set max below usage with --force" 0 ctl set /s max=512K --force
check_eq "max taken" "$(field /s 'd["max"]')" $((512 * K))
check_eq "usage stays above it" "$(current /s)" $((600 * K))
check_run "a charge above the forced max is refused" 1 ctl charge /s 1
check_run "set max=max" 0 ctl set /s max=max
check_eq "max is unlimited again" "$(field /s 'd["max"]')" max
check_run "set of a missing group" 1 ctl set /nope max=1M
check_run "--force before the command" 0 ctl --force set /s max=2M
check_eq "max=2M" "$(field /s 'd["max"]')" $((2 * M))

# ---- reset-peak ----

ctl create /r
ctl charge /r 500K
ctl uncharge /r 400K
check_eq "peak before the reset" "$(field /r 'd["peak"]')" $((500 * K))
check_run "reset-peak" 0 ctl reset-peak /r
check_eq "peak is current after the reset" "$(field /r 'd["peak"]')" $((100 * K))
check_run "reset-peak of a missing group" 1 ctl reset-peak /nope

# ---- show --reclaim-root: effective protection ----

# /p min=1M, /p/c min=2M with 4M used. Below /, /p is on the first level
# and gets its setting; /p/c claims 2M of a parent's 1M, so it gets
# min(usage, min) * parent_effective / siblings' claims = 2M * 1M / 2M.
# With /p as the reclaim root, /p/c is on the first level: 2M; the
# reclaim root itself is not protected.
ctl create /p min=1M low=3M
ctl create /p/c min=2M low=1M
ctl create /p/c/g
ctl create /p/d
ctl charge /p/c 4M
check_eq "effective_min of /p below /" "$(field /p 'd["effective_min"]')" $M
check_eq "effective_min of /p/c below /" "$(field /p/c 'd["effective_min"]')" $((2 * M * M / (2 * M)))
check_eq "effective_low of /p/c below / (undercommitted)" "$(field /p/c 'd["effective_low"]')" $M
check_eq "effective_min of /p/c below /p" "$(field /p/c 'd["effective_min"]' --reclaim-root /p)" $((2 * M))
check_eq "the reclaim root has no protection" "$(field /p 'd["effective_min"]' --reclaim-root /p)" 0
check_run "a reclaim root that is not an ancestor" 1 ctl show /p --reclaim-root /t

# ---- tree ----

check_run "tree /p" 0 ctl tree /p
check_match "tree has a header" "$(head -n1 <<<"$OUT")" '^GROUP +CURRENT +PEAK +MAX +HIGH +OWNER$'
check_eq "tree lists the subtree in pre-order, indented" \
        "$(tail -n +2 <<<"$OUT" | awk '{ match($0, /^ */); printf "%d:%s ", RLENGTH, $1 }')" \
        "0:/p 2:c 4:g 2:d "
check_match "tree shows current of /p/c" "$(grep -E '^  c ' <<<"$OUT")" "^  c +$((4 * M)) +$((4 * M)) +max +max +-\$"
check_run "tree --json /p" 0 ctl --json tree /p
check_eq "tree --json is an array in pre-order" "$(jget '[g["path"] for g in d]' <<<"$OUT")" \
        '["/p", "/p/c", "/p/c/g", "/p/d"]'
check_eq "tree --json entries have the show keys" "$(jget 'sorted(d[1])' <<<"$OUT")" \
        "$(field /p/c 'sorted(d)')"
check_eq "tree --json values" "$(jget 'd[1]["current"]' <<<"$OUT")" $((4 * M))
check_run "tree of everything" 0 ctl --json tree
check_eq "tree starts at /" "$(jget 'd[0]["path"]' <<<"$OUT")" /
check_eq "tree lists every group" "$(jget "len(d)" <<<"$OUT")" 15
check_run "tree of a missing group" 1 ctl tree /nope

# ---- remove ----

check_run "remove a group with children" 1 ctl remove /p/c
check_match "the refusal says why" "$ERR" 'children'
check_run "remove a leaf" 0 ctl remove /p/c/g
check_run "the removed group is gone" 1 ctl show /p/c/g
check_run "remove a missing group" 1 ctl remove /p/c/g
check_run "remove / is refused" 1 ctl remove /
# memacct.h: kept charges "are released only by an explicit uncharge or by
# removing the group", and memacct_remove_group() "remove[s] the group at
# @path and release[s] its kept charges".
check_run "remove a group holding kept charges (memacct.h)" 0 ctl remove /p/c
check_eq "its kept charges are released from the parent" "$(current /p)" 0

# ---- hold: a session charge until SIGINT/SIGTERM ----

ctl create /h
for sig in INT TERM; do
        bg "$TMP/hold.out" "${CTL[@]}" hold /h 1M --stat shmem
        pid=$BG_PID
        if wait_for 10 file_has "$TMP/hold.out" '^holding 1M in /h$'; then pass; else fail "hold prints what it holds: $(<"$TMP/hold.out")"; fi
        check_eq "hold: show reports the bytes" "$(current /h)" $M
        check_eq "hold: as the stat item" "$(field /h 'd["stat"]["shmem"]' --exact)" $M
        rc=0
        stop_bg "$pid" "$sig" || rc=$?
        check_eq "hold exits 0 on SIG$sig" "$rc" 0
        check_current_soon "hold released its charge after SIG$sig" /h 0
done
check_run "hold of a missing group" 1 ctl hold /nope 1K

# ---- move, client ----

ctl create /m1
ctl create /m2
ctl create /m3 max=100K
bg "$TMP/mover.out" "${CTL[@]}" hold /m1 200K
mover=$BG_PID
wait_for 10 file_has "$TMP/mover.out" '^holding' || fail "the hold to move starts: $(<"$TMP/mover.out")"
check_eq "the hold is in /m1" "$(current /m1)" $((200 * K))
check_run "move PID PATH" 0 ctl move "$mover" /m2
check_eq "the charges left /m1" "$(current /m1)" 0
check_eq "the charges are in /m2" "$(current /m2)" $((200 * K))
check_run "move --json" 0 ctl --json move "$mover" /m1
check_eq "move --json counts the sessions moved" "$(jget 'd["sessions"]' <<<"$OUT")" 1
check_eq "moved back" "$(current /m1)/$(current /m2)" "$((200 * K))/0"
check_run "move into a group whose max refuses" 1 ctl move "$mover" /m3
check_match "the move refusal names the group" "$ERR" '\(max of /m3\)'
check_eq "nothing moved" "$(current /m1)/$(current /m3)" "$((200 * K))/0"
check_run "move to a missing group" 1 ctl move "$mover" /nope
check_run "move of a pid without a session" 1 ctl move $$ /m2

# client: the RSS counters a process's session charges feed. Approximate
# lags by up to rss-threshold (default 64 pages) per session and member;
# exact folds the residue in.
threshold=$((64 * 4096))
check_run "client PID" 0 ctl client "$mover"
check_match "client prints the pid" "$OUT" "^pid $mover\$"
check_match "client approximate anon is below the threshold" "$OUT" '^anon 0$'
check_run "client PID --exact" 0 ctl client "$mover" --exact
check_match "client --exact anon" "$OUT" "^anon $((200 * K))\$"
check_match "client --exact file" "$OUT" '^file 0$'
check_run "client --json --exact" 0 ctl --json client "$mover" --exact
check_eq "client --json keys" "$(jget 'sorted(d)' <<<"$OUT")" '["anon", "file", "pid", "shmem", "swap"]'
check_eq "client --json anon" "$(jget 'd["anon"]' <<<"$OUT")" $((200 * K))
bg "$TMP/big.out" "${CTL[@]}" hold /m2 1M --stat file
big=$BG_PID
wait_for 10 file_has "$TMP/big.out" '^holding' || fail "the second hold starts: $(<"$TMP/big.out")"
check_run "client of a hold above the threshold" 0 ctl --json client "$big"
check_eq "approximate file above the threshold ($threshold) is synced" "$(jget 'd["file"]' <<<"$OUT")" $M
check_run "client of a pid without a session" 1 ctl client $$
check_match "and says so" "$ERR" 'no session'
stop_bg "$mover" INT || fail "the moved hold exits 0"
stop_bg "$big" INT || fail "the second hold exits 0"
check_current_soon "the moved hold released its charge" /m1 0
check_current_soon "the second hold released its charge" /m2 0

# ---- watch ----

# trigger_until FILE ERE CMD...: run CMD (a refused charge) until FILE
# matches ERE; watch may not have subscribed yet when it first runs.
trigger_until() {
        local file=$1 ere=$2 i

        shift 2
        for ((i = 0; i < 100; i++)); do
                "$@" >/dev/null 2>&1 || true
                if wait_for 1 file_has "$file" "$ere"; then
                        return 0
                fi
        done
        return 1
}

ctl create /wt max=100K
ctl create /wt/c max=50K
bg "$TMP/watch.out" "${CTL[@]}" watch /wt
watcher=$BG_PID
# Each line: the time it was read (ISO 8601, ms), the group, the event, its
# count, and who raised it (test-attach.sh checks that part).
BY='( by pid [0-9]+ uid [0-9]+)?'
TS='[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{3}[+-][0-9]{2}:[0-9]{2}'
if trigger_until "$TMP/watch.out" "^$TS /wt max [0-9]+$BY\$" ctl charge /wt 200K; then
        pass
else
        fail "watch prints the max event of a refused charge: '$(<"$TMP/watch.out")'"
fi
check_eq "watch prints the event's local count" \
        "$(grep -E " /wt max " "$TMP/watch.out" | tail -n1 | awk '{ print $4 }')" \
        "$(field /wt 'd["events_local"]["max"]')"
ctl charge /wt/c 60K >/dev/null 2>&1 && fail "a charge over /wt/c's max is refused"
if wait_for 10 file_has "$TMP/watch.out" "^$TS /wt/c max 1$BY\$"; then
        pass
else
        fail "watch prints events of the subtree: '$(<"$TMP/watch.out")'"
fi
check_nomatch "watch prints nothing from outside its subtree" "$(<"$TMP/watch.out")" ' /lim'
rc=0
stop_bg "$watcher" INT || rc=$?
check_eq "watch exits 0 on SIGINT" "$rc" 0

bg "$TMP/watchj.out" "${CTL[@]}" --json watch /wt/c
watcher=$BG_PID
if trigger_until "$TMP/watchj.out" '"max"' ctl charge /wt/c 60K; then
        pass
else
        fail "watch --json prints the event: '$(<"$TMP/watchj.out")'"
fi
# (The first max line: a watch that subscribed between the max and the oom
# event of one refused charge prints the oom first. A charge raised it, so
# it names the charger: pid and uid.)
check_eq "watch --json prints an object" \
        "$(grep -m1 '"max"' "$TMP/watchj.out" | jget '[sorted(d), d["path"], d["name"], type(d["count"]).__name__]')" \
        '[["count", "name", "path", "pid", "time", "uid"], "/wt/c", "max", "int"]'
check_match "watch --json carries the time as the text form does" \
        "$(grep -m1 '"max"' "$TMP/watchj.out" | jget 'd["time"]')" "^$TS\$"
rc=0
stop_bg "$watcher" TERM || rc=$?
check_eq "watch exits 0 on SIGTERM" "$rc" 0
check_run "watch of a missing group" 1 ctl watch /nope

# ---- exit status 2: usage errors ----

usage_case() {
        local what=$1

        shift
        check_run "usage error: $what" 2 "$@"
        check_match "usage error: $what: points at --help" "$ERR" "Try 'memacctctl --help'"
}
usage_case "no command" ctl
usage_case "unknown command" ctl frobnicate /t
usage_case "unknown option" ctl --frobnicate show /t
usage_case "create without a path" ctl create
usage_case "create with an unknown key" ctl create /x bogus=1
usage_case "create with a bad size" ctl create /x max=12Q
usage_case "create with no KEY=" ctl create /x 1M
usage_case "set without limits" ctl set /t
usage_case "charge without a size" ctl charge /t
usage_case "charge with a bad size" ctl charge /t lots
usage_case "uncharge with too many arguments" ctl uncharge /t 1K 2K
usage_case "--force outside set" ctl show /t --force
usage_case "--stat outside charge" ctl show /t --stat anon
usage_case "--exact outside show/tree/client" ctl charge /t 1K --exact
usage_case "--reclaim-root outside show/tree" ctl charge /t 1K --reclaim-root /
usage_case "move with a bad pid" ctl move notapid /t
usage_case "client with a negative pid" ctl client -- -5
usage_case "--socket without its argument" "$MEMACCTCTL" --socket
check_run "--help" 0 ctl --help
check_match "--help lists the commands" "$OUT" '^  watch PATH'
check_run "--version" 0 ctl --version
check_match "--version" "$OUT" '^memacctctl [0-9]+\.[0-9]+'

# A usage error is one whatever the daemon's state: the command line is
# wrong before anything is sent (memacctctl(1): 2 on usage errors).
NOSOCK=("$MEMACCTCTL" --socket "$TMP/no-such.sock")
check_run "no daemon: cannot connect is a failure" 1 "${NOSOCK[@]}" show /t
check_match "no daemon: says it cannot connect" "$ERR" 'cannot connect'
check_run "no daemon: a missing argument is still a usage error" 2 "${NOSOCK[@]}" create
check_run "no daemon: a bad size is still a usage error" 2 "${NOSOCK[@]}" charge /t lots
check_run "no daemon: an unknown key is still a usage error" 2 "${NOSOCK[@]}" set /t bogus=1

check_stop_daemon
exit 0
