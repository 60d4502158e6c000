#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# memacctctl as a new user meets it: the words of its errors (a missing
# option argument, remove /, the --force hint, charge PATH max), charge
# --json, -h sizes, a tree of long names and one against a reclaim root,
# and hold and watch ending at once, with status 0, on SIGINT/SIGTERM
# while they reconnect to a daemon that is gone.

# shellcheck source-path=SCRIPTDIR source=../lib.sh
source "$(dirname "$0")/../lib.sh"

K=1024
M=$((1024 * 1024))

check_start_daemon || exit 1

# ---- the words of errors ----

check_run "an option without its argument" 2 ctl show / --stat
check_match "says it requires an argument" "$ERR" "^memacctctl: option '--stat' requires an argument\$"
check_run "--socket without its argument" 2 "$MEMACCTCTL" --socket
check_match "--socket: says it requires an argument" "$ERR" "option '--socket' requires an argument"
check_run "an unknown option is still one" 2 ctl show / --frob
check_match "and says so" "$ERR" "invalid option '--frob'"

check_run "remove /" 1 ctl remove /
check_match "remove / says why in words" "$ERR" 'the root cannot be removed'

ctl create /f max=1M
ctl charge /f 600K
check_run "set max below usage" 1 ctl set /f max=512K
check_match "the hint names the flag as it is spelt" "$ERR" '\(use --force\)$'

for verb in charge uncharge hold; do
        check_run "$verb PATH max is a usage error" 2 ctl "$verb" /f max
        check_match "$verb PATH max: says why" "$ERR" "'max' is not a size"
done
check_eq "charge PATH max changed nothing" "$(current /f)" $((600 * K))

# ---- charge --json: the reply ----

ctl create /c max=1M high=100K
check_run "charge --json" 0 ctl --json charge /c 256K
check_eq "charge --json keys" "$(jget 'sorted(d)' <<<"$OUT")" \
        '["margin", "over_high", "over_max", "throttle_usec"]'
check_eq "over_high: the bytes above high" "$(jget 'd["over_high"]' <<<"$OUT")" $((156 * K))
check_eq "margin: what max still admits" "$(jget 'd["margin"]' <<<"$OUT")" $((768 * K))
check_eq "over_max is a boolean" "$(jget 'd["over_max"]' <<<"$OUT")" False
check_eq "throttle_usec is a number" "$(jget 'type(d["throttle_usec"]).__name__' <<<"$OUT")" int
ctl create /c2
check_run "charge --json under no max" 0 ctl --json charge /c2 1K
check_eq "margin without a max is max" "$(jget 'd["margin"]' <<<"$OUT")" max
check_run "charge without --json" 0 ctl charge /c2 1K
check_eq "charge prints nothing without --json" "$OUT" ""

# ---- -h: sizes as du -h shows them ----

ctl create /hr max=1M high=1536K
ctl charge /hr 10241
check_run "show -h" 0 ctl -h show /hr
check_match "-h: 1M is 1.0M" "$OUT" '^memory.max: 1.0M$'
check_match "-h: 1536K is 1.5M" "$OUT" '^memory.high: 1.5M$'
check_match "-h: 10241 bytes round up to 11K, as du" "$OUT" '^memory.current: 11K$'
check_match "-h: below 1K, bytes with a B, as systemd-cgtop" "$OUT" '^memory.min: 0B$'
check_match "-h: events stay counts" "$OUT" '^memory.events: low 0$'
check_match "-h: memory.stat is in units too" "$(ctl -h show /hr --exact)" '^memory.stat: anon 11K$'
check_match "without -h, bytes" "$(ctl show /hr)" "^memory.max: $M\$"
check_eq "-h leaves JSON in bytes" "$(ctl -h --json show /hr | jget 'd["max"]')" $M
check_run "tree -h" 0 ctl tree -h /hr
check_match "tree -h row" "$(tail -n1 <<<"$OUT")" '^/hr +11K +11K +1.0M +1.5M +-$'
check_run "-h alone is still help" 0 ctl -h
check_match "-h alone prints the help" "$OUT" '^  watch PATH'
check_run "-h with a command that prints no sizes" 2 ctl -h charge /hr 1K

# ---- tree: long names keep the columns aligned ----

id=0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef
ctl create /containers
ctl create "/containers/$id" max=1G
ctl charge "/containers/$id" 4K
check_run "tree of 64-hex container ids" 0 ctl tree /containers
check_match "the id is printed whole" "$OUT" "^  $id +4096 +4096 +$((1 << 30)) +max +-\$"
# Up to OWNER, the last column, which is not padded.
check_eq "every line is as wide as the header" \
        "$(sed 's/ [^ ]*$//' <<<"$OUT" | awk '{ print length($0) }' | sort -u | wc -l)" 1
check_eq "the header is as wide as the widest name" \
        "$(head -n1 <<<"$OUT" | awk '{ print index($0, "CURRENT") }')" $((2 + 64 + 1 + 14 - 7 + 1))
check_run "tree of short names" 0 ctl tree /hr
check_eq "short names keep the 40 columns" "$(head -n1 <<<"$OUT" | awk '{ print index($0, "CURRENT") }')" \
        $((40 + 1 + 14 - 7 + 1))

# ---- tree --reclaim-root: every row against R ----

# As in test-ctl.sh: below /p, /p/c is on the first level and has its
# min of 2M whole; below /, /p's 1M caps it.
ctl create /p min=1M low=3M
ctl create /p/c min=2M low=1M
ctl create /p/c/g
ctl charge /p/c 4M
check_run "tree --reclaim-root /p" 0 ctl --json tree /p --reclaim-root /p
check_eq "the reclaim root has no protection" "$(jget 'd[0]["effective_min"]' <<<"$OUT")" 0
check_eq "the row of /p/c is computed below /p" "$(jget 'd[1]["effective_min"]' <<<"$OUT")" $((2 * M))
rows=$OUT
for i in 0 1 2; do
        path=$(jget "d[$i][\"path\"]" <<<"$rows")
        check_eq "tree --reclaim-root: $path as show says" \
                "$(jget "[d[$i][k] for k in ('effective_min', 'effective_low')]" <<<"$rows")" \
                "$(field "$path" '[d[k] for k in ("effective_min", "effective_low")]' --reclaim-root /p)"
done
check_eq "without it, /p/c is computed below /" "$(ctl --json tree /p | jget 'd[1]["effective_min"]')" \
        "$(field /p/c 'd["effective_min"]')"

# ---- hold and watch: a signal ends them while they reconnect ----

ctl create /gone
bg "$TMP/hold-int.out" "${CTL[@]}" hold /gone 1M
hold_int=$BG_PID
bg "$TMP/hold-term.out" "${CTL[@]}" hold /gone 1M
hold_term=$BG_PID
bg "$TMP/watch-int.out" "${CTL[@]}" watch /gone
watch_int=$BG_PID
bg "$TMP/watch-term.out" "${CTL[@]}" watch /gone
watch_term=$BG_PID
for f in hold-int hold-term; do
        if wait_for 10 file_has "$TMP/$f.out" '^holding 1M in /gone$'; then pass; else fail "$f holds: $(<"$TMP/$f.out")"; fi
done
check_current_soon "both holds are held" /gone $((2 * M))
check_stop_daemon
# hold notices within its 500 ms poll, watch at once; then the library
# retries the connection for about 5 s.
sleep 1
for p in "hold-int:$hold_int:INT" "hold-term:$hold_term:TERM" "watch-int:$watch_int:INT" \
        "watch-term:$watch_term:TERM"; do
        IFS=: read -r what pid sig <<<"$p"
        rc=0
        stop_bg "$pid" "$sig" 1 || rc=$?
        check_eq "$what: SIG$sig while reconnecting ends it within a second, status 0" "$rc" 0
done

exit 0
