#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# memacctctl for scripts, as systemctl show -P and mkdir -p are: one value
# (show -P KEY), missing parents made (create -p), a subtree removed
# deepest first (remove -r, refused where kept charges or sessions remain
# but for --force), and with --json a failure that is JSON too.

source "$(dirname "$0")/../lib.sh"

check_start_daemon || exit 1

check_run "create -p makes the missing parents" 0 ctl create -p /a/b/c max=1M
check_run "each parent exists" 0 ctl show /a/b
check_run "show -P max" 0 ctl show -P max /a/b/c
check_eq "prints the value alone" "$OUT" 1048576
check_run "show -P of a parent's max" 0 ctl show /a/b -P max
check_eq "which has none" "$OUT" max
check_run "show -P events.max, dotted" 0 ctl show -P events.max /a/b/c
check_eq "a number" "$OUT" 0
check_run "show -P of no key" 1 ctl show -P nosuch /a
check_match "says so" "$ERR" "no key 'nosuch'"
check_run "-P is for show only" 2 ctl tree -P max /
check_run "create -p over existing parents" 0 ctl create -p /a/b/d
check_run "create without -p of a missing parent" 1 ctl create /x/y

check_run "a kept charge below" 0 ctl charge /a/b/c 4K
check_run "remove -r is refused while kept charges remain" 1 ctl remove -r /a
check_match "naming the group" "$ERR" "/a/b/c kept charges remain"
check_run "and removed nothing" 0 ctl show /a/b/d
check_run "remove -r --force releases them" 0 ctl remove -r --force /a
for g in /a /a/b /a/b/c /a/b/d; do
        check_run "$g is gone" 1 ctl show "$g"
done
check_eq "its charge is released" "$(current /)" 0
check_run "--force alone is for set and remove -r" 2 ctl remove --force /x

check_run "--json show of no group" 1 ctl --json show /nope
check_eq "prints nothing on stdout" "$OUT" ""
check_eq "and JSON on stderr" "$(jget 'd["command"] + " " + d["path"] + " " + str(d["errno"])' <<<"$ERR")" \
        "show /nope 2"
check_run "a refusal in JSON" 0 ctl create /full max=4K
check_run "over its max" 1 ctl --json charge /full 8K
check_eq "says refused, and by whom" "$(jget 'str(d["refused"]) + " " + d["refused_by"]' <<<"$ERR")" "True /full"
# -f: many commands over one connection.
{
        echo "# a comment, then a blank line"
        echo
        echo "create /batch"
        for i in $(seq 1 2000); do echo "create /batch/g$i max=1M"; done
        echo "set /batch max=1G"
} >"$TMP/batch"
check_run "-f FILE: 2,002 lines" 0 ctl -f "$TMP/batch"
check_eq "every group is there" "$(ctl --json tree /batch | jget 'len(d)')" 2001
check_eq "with its max" "$(field /batch/g2000 'd["max"]')" $((1024 * 1024))
check_eq "and the last line ran" "$(field /batch 'd["max"]')" $((1024 * 1024 * 1024))
printf 'create /batch/x\ncreate /nope/y\ncreate /batch/z\n' >"$TMP/batch2"
check_run "-f with a failing line" 1 ctl -f "$TMP/batch2"
check_match "says which line" "$ERR" "-f $TMP/batch2:2: the command above failed"
check_match "and how many" "$ERR" "1 of 3 commands failed"
check_run "the lines after it ran" 0 ctl show /batch/z
check_run "-f - reads stdin" 0 sh -c "echo 'remove /batch/z' | '$MEMACCTCTL' --socket '$SOCK' -f -"
check_run "/batch/z is gone" 1 ctl show /batch/z
printf 'create /batch/w\nhold /batch 1M\n' >"$TMP/batch3"
check_run "a command that waits is refused" 2 ctl -f "$TMP/batch3"
check_match "naming its line" "$ERR" "batch3:2: 'hold' is no command to run in a batch"
check_run "the line before it ran" 0 ctl show /batch/w
check_run "-f with a command is a usage error" 2 ctl -f "$TMP/batch" show /
check_stop_daemon
