#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# memacctctl top against a real daemon. Batch mode: the rows (indented by
# depth, cut at -d), the order of each sort key, snapshots separated by
# one blank line, --raw numbers equal to show --json's, the usage errors.
# The live view in a detached tmux session of a fixed size: the keys
# change the order, a smaller window redraws to its width, and q or
# SIGTERM leave the alternate screen, show the cursor again and restore
# the terminal's modes exactly (stty -g before and after).

# shellcheck source-path=SCRIPTDIR source=../lib.sh
source "$(dirname "$0")/../lib.sh"

K=1024
M=$((1024 * 1024))

check_start_daemon || exit 1

# /t/b holds the most now, /t/a had the most once; /t/c has the most
# events (a refused charge: max and oom), /t/b one (high).
ctl create /t max=20M
ctl create /t/a
ctl create /t/a/deep
ctl create /t/b high=1M
ctl create /t/c max=1K
ctl create /u
ctl charge /t/a 6M
ctl uncharge /t/a 3M
ctl charge /t/b 5M
ctl charge /u 1K
check_run "a charge past the max of /t/c is refused" 1 ctl charge /t/c 2K

# names BATCH-OUTPUT: the first column of the first snapshot's rows.
names() {
        awk 'NR > 1 && /^$/ { exit } NR > 1 { match($0, /^ *[^ ]+/); print substr($0, 1, RLENGTH) }' \
                <<<"$1" | tr '\n' '|'
}

# column OUTPUT NAME N: column N (from 1) of the row whose first column is NAME.
column() {
        awk -v name="$2" -v n="$3" '$1 == name { print $n; exit }' <<<"$1"
}

# ---- batch mode ----

check_run "top -b -n 2 --depth 2 -d 0.1 (cgtop's -d: the delay)" 0 ctl top -b -n 2 --depth 2 -d 0.1
check_eq "two snapshots, each with its header" "$(grep -c '^GROUP ' <<<"$OUT")" 2
check_eq "separated by one blank line" "$(grep -c '^$' <<<"$OUT")" 1
check_match "the header names the columns" "$OUT" \
        '^GROUP +CURRENT +PEAK +MAX +%MAX +HIGH +E:MAX +E:OOM +E:HIGH +SESS +KEPT +SESSION$'
check_eq "by current, as a tree, to depth 2" "$(names "$OUT")" '/|  t|    b|    a|    c|  u|'
check_eq "the two snapshots are the same" "$(sed -n '1,/^$/p' <<<"$OUT" | sed '/^$/d')" \
        "$(sed -n '/^$/,$p' <<<"$OUT" | sed '/^$/d')"

check_run "top -b -n 1 -s peak" 0 ctl top -b -n 1 -s peak
check_eq "by peak" "$(names "$OUT")" '/|  t|    a|      deep|    b|    c|  u|'
check_run "top -b -n 1 --order path" 0 ctl top -b -n 1 --order path
check_eq "by path" "$(names "$OUT")" '/|  t|    a|      deep|    b|    c|  u|'
check_run "top -b -n 1 -s events /t" 0 ctl top -b -n 1 -s events /t
check_eq "by events, under /t" "$(names "$OUT")" '/t|  c|  b|  a|    deep|'
check_eq "the max events of /t/c are show's" "$(column "$OUT" c 7)" "$(field /t/c 'd["events"]["max"]')"
check_eq "the oom events of /t/c are show's" "$(column "$OUT" c 8)" "$(field /t/c 'd["events"]["oom"]')"
check_eq "the high events of /t/b are show's" "$(column "$OUT" b 9)" "$(field /t/b 'd["events"]["high"]')"
check_eq "/t/c has more events than /t/b" \
        "$(($(column "$OUT" c 7) + $(column "$OUT" c 8) > $(column "$OUT" b 9)))" 1
check_eq "is in /t's hierarchical count" "$(column "$OUT" /t 7)" "$(field /t 'd["events"]["max"]')"
check_run "top -b -1 --depth 0" 0 ctl top -b -1 --depth 0
check_eq "depth 0: the root alone" "$(names "$OUT")" '/|'

check_run "top -b -n 1 (human sizes)" 0 ctl top -b -n 1 /t
check_eq "5M of /t/b as 5.0M" "$(column "$OUT" b 2)" 5.0M
check_eq "the high of /t/b as 1.0M" "$(column "$OUT" b 6)" 1.0M
check_eq "1K in /u is not in /t" "$(column "$OUT" /t 2)" 8.0M
check_eq "the max of /t as 20M (no decimal from 10 on, as du -h)" "$(column "$OUT" /t 4)" 20M
check_eq "nothing as 0B" "$(column "$OUT" b 12)" 0B
TREE=$(ctl -h tree /t)
check_eq "tree -h prints /t's current and max as top does" \
        "$(awk '$1 == "/t" {print $2, $4}' <<<"$TREE")" "$(column "$OUT" /t 2) $(column "$OUT" /t 4)"
check_eq "no max is max" "$(column "$OUT" b 4)" max
check_eq "no max, no percentage" "$(column "$OUT" b 5)" -
check_eq "% of max of /t" "$(column "$OUT" /t 5)" \
        "$("$PY" -c "print('%.1f' % ($(current /t) * 100 / (20 * $M)))")"

check_run "top -b -n 1 -r (raw, as cgtop's -r)" 0 ctl top -b -n 1 -r
for g in /t:t /t/a:a /t/b:b /u:u; do
        path=${g%%:*} name=${g#*:}
        check_eq "--raw current of $path is show's" "$(column "$OUT" "$name" 2)" "$(current "$path")"
        check_eq "--raw peak of $path is show's" "$(column "$OUT" "$name" 3)" "$(field "$path" 'd["peak"]')"
        check_eq "--raw max of $path is show's" "$(column "$OUT" "$name" 4)" "$(field "$path" 'd["max"]')"
        check_eq "--raw high of $path is show's" "$(column "$OUT" "$name" 6)" "$(field "$path" 'd["high"]')"
done
check_eq "--raw root current is show's" "$(column "$OUT" / 2)" "$(current /)"
check_eq "/t/b keeps its 5M" "$(column "$OUT" b 11)" $((5 * M))
check_eq "in no session" "$(column "$OUT" b 12)" 0
check_eq "/t keeps nothing itself: its 8M are its children's" "$(column "$OUT" t 11)" 0
check_eq "the numbers add up: /t is a, b and c" "$(column "$OUT" t 2)" $((3 * M + 5 * M))
check_eq "/u holds 1K" "$(column "$OUT" u 2)" $K

# KEPT and SESSION split current: /u keeps 1K, and a session holds 2K there.
bg "$TMP/hold.out" "$MEMACCTCTL" --socket "$SOCK" hold /u 2K
HOLD=$BG_PID
wait_for 10 grep -q '^holding' "$TMP/hold.out" || fail "hold /u 2K: $(cat "$TMP/hold.out")"
check_run "top -b -n 1 --raw /u" 0 ctl top -b -n 1 --raw /u
check_eq "/u keeps 1K" "$(column "$OUT" /u 11)" $K
check_eq "and its session holds 2K" "$(column "$OUT" /u 12)" $((2 * K))
check_eq "the two are /u's current" "$(column "$OUT" /u 2)" $((3 * K))
check_eq "as show says" "$(column "$OUT" /u 12)" "$(field /u 'd["session"]')"
rc=0
stop_bg "$HOLD" TERM || rc=$?
check_eq "the hold ends on SIGTERM" "$rc" 0
check_current_soon "its session charge is released" /u $K

# --json in batch mode: one JSON document a line each time, show's objects.
check_run "--json top -b -n 2 -d 0.1" 0 ctl --json top -b -n 2 -d 0.1 /t
check_eq "two lines, one document each" "$(wc -l <<<"$OUT")" 2
check_eq "each lists the groups, /t first" "$(head -n 1 <<<"$OUT" | jget '[g["path"] for g in d["groups"]][0]')" /t
check_eq "with show's numbers" "$(head -n 1 <<<"$OUT" | jget '[g["current"] for g in d["groups"] if g["path"] == "/t/b"][0]')" \
        "$(current /t/b)"
check_match "and the time" "$(head -n 1 <<<"$OUT" | jget 'd["time"]')" '^[0-9]+$'
check_run "top without a terminal is batch mode" 0 ctl top -n 1
check_eq "one snapshot" "$(grep -c '^GROUP ' <<<"$OUT")" 1
check_run "top of a missing group" 1 ctl top -b -n 1 /nope
check_match "says so" "$ERR" 'top failed: /nope'
check_run "an unknown order" 2 ctl top -b -s size
check_run "a bad depth" 2 ctl top -b --depth -1
check_run "a zero delay" 2 ctl top -b -d 0
check_run "a bad delay" 2 ctl top -b -d 1s
check_run "-i is the delay too" 2 ctl top -b -i 0
check_run "zero iterations" 2 ctl top -b -n 0
check_run "two paths" 2 ctl top / /t
check_run "--raw is only for top" 2 ctl show / --raw
check_run "-b is only for top" 2 ctl tree -b

# ---- the live view, in tmux ----

if ! command -v tmux >/dev/null; then
        echo "SKIP: the live view: tmux is not installed (tools/apt-packages.txt lists it)"
        exit 0
fi

TMUX_SOCK=$TMP/tmux.sock
tm() {
        tmux -S "$TMUX_SOCK" -f /dev/null "$@"
}
on_exit 'tm kill-server >/dev/null 2>&1 || true'

screen() {
        tm capture-pane -p -t top
}

screen_has() {
        screen | grep -Eq -- "$1"
}

pane_flags() {
        tm display-message -p -t top '#{alternate_on} #{cursor_flag}'
}

# A shell with a known prompt in a pane of 100x20; top runs in it.
tm new-session -d -s top -x 100 -y 20 \
        "env -i PATH=/usr/bin:/bin TERM=xterm PS1='PROMPT\$ ' bash --norc --noprofile"
tm send-keys -t top "stty -g >$TMP/stty.before; $MEMACCTCTL --socket $SOCK top -d 0.2" Enter
if wait_for 10 screen_has 'order: current'; then pass; else fail "top draws: $(screen)"; fi
check_eq "the alternate screen is on and the cursor hidden" "$(pane_flags)" "1 0"
check_match "the title names the root and the groups" "$(screen)" '^memacctctl top: /  groups: 7 '
# the rows in the screen's order, names only
live_names() {
        screen | awk '/^GROUP/ { on = 1; next } on && NF { print $1 }' | tr '\n' '|'
}
check_eq "live: by current" "$(live_names)" '/|t|b|a|deep|c|u|'

tm send-keys -t top p
if wait_for 5 screen_has 'order: path'; then pass; else fail "p orders by path: $(screen)"; fi
check_eq "live: by path" "$(live_names)" '/|t|a|deep|b|c|u|'
tm send-keys -t top e
if wait_for 5 screen_has 'order: events'; then pass; else fail "e orders by events: $(screen)"; fi
check_eq "live: by events" "$(live_names)" '/|t|c|b|a|deep|u|'
tm send-keys -t top k
if wait_for 5 screen_has 'order: peak'; then pass; else fail "k orders by peak: $(screen)"; fi
tm send-keys -t top m
if wait_for 5 screen_has 'order: current'; then pass; else fail "m orders by current (memory), as cgtop: $(screen)"; fi
tm send-keys -t top h
if wait_for 5 screen_has '^Order: m or c current'; then pass; else fail "h shows the keys: $(screen)"; fi
tm send-keys -t top h
if wait_for 5 screen_has '^GROUP'; then pass; else fail "h again shows the table: $(screen)"; fi
tm send-keys -t top r
if wait_for 5 screen_has '  raw$'; then pass; else fail "r shows bytes: $(screen)"; fi
check_eq "live --raw: current of /t/b" "$(screen | awk '$1 == "b" { print $2 }')" $((5 * M))

# A narrower window: redrawn to its width, long names shortened.
tm resize-window -t top -x 40 -y 10
widest() {
        screen | awk '{ if (length($0) > w) w = length($0) } END { print w + 0 }'
}
narrow() {
        (($(widest) <= 40)) && screen_has '^GROUP'
}
if wait_for 5 narrow; then pass; else fail "redrawn to 40 columns: $(screen)"; fi
check_eq "the view still shows its rows" "$(live_names | cut -d'|' -f1-2)" '/|t'

tm send-keys -t top q
if wait_for 5 screen_has '^PROMPT\$ ?$'; then pass; else fail "q returns to the shell: $(screen)"; fi
check_eq "q: the alternate screen is left and the cursor shown" "$(pane_flags)" "0 1"
tm send-keys -t top "stty -g >$TMP/stty.after" Enter
wait_for 5 test -s "$TMP/stty.after" || true
check_eq "q: the terminal modes are restored" "$(<"$TMP/stty.after")" "$(<"$TMP/stty.before")"

# SIGTERM to the running view restores the terminal as q does.
rm -f "$TMP/stty.after"
tm resize-window -t top -x 100 -y 20
tm send-keys -t top clear Enter
tm send-keys -t top "$MEMACCTCTL --socket $SOCK top -d 0.2" Enter
if wait_for 10 screen_has 'order: current'; then pass; else fail "top draws again: $(screen)"; fi
SHELL_PID=$(tm display-message -p -t top '#{pane_pid}')
TOP_PID=$(pgrep -P "$SHELL_PID" -x memacctctl || true)
if [[ -n $TOP_PID ]]; then
        kill -TERM "$TOP_PID"
        if wait_for 5 screen_has '^PROMPT\$ ?$'; then pass; else fail "SIGTERM ends top: $(screen)"; fi
        check_eq "SIGTERM: the alternate screen is left and the cursor shown" "$(pane_flags)" "0 1"
        tm send-keys -t top "stty -g >$TMP/stty.after" Enter
        wait_for 5 test -s "$TMP/stty.after" || true
        check_eq "SIGTERM: the terminal modes are restored" "$(<"$TMP/stty.after")" \
                "$(<"$TMP/stty.before")"
else
        fail "top runs under the pane's shell (pid $SHELL_PID)"
fi
