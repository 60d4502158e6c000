#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# memacctd.conf: what a file sets is in force (socket, state-dir,
# rss-threshold, frame-size, read access); SIGHUP reloads what can change
# at run time and keeps the running configuration when the new file is
# bad; a bad file at start refuses to start with FILE:LINE in the message.

# shellcheck source-path=SCRIPTDIR source=../lib.sh
source "$(dirname "$0")/../lib.sh"

K=1024
NOBODY=65534
CONF=$TMP/memacctd.conf

# hello_max_frame: the frame limit the daemon announces in HelloReply
# (field 10, its field 5), over a raw socket.
hello_max_frame() {
        "$PY" - "$SOCK" <<'EOF'
import socket, sys

def varint(n):
    out = bytearray()
    while True:
        b, n = n & 0x7F, n >> 7
        out.append(b | (0x80 if n else 0))
        if not n:
            return bytes(out)

def read_varint(buf, i):
    n = shift = 0
    while True:
        b = buf[i]; i += 1
        n |= (b & 0x7F) << shift; shift += 7
        if not b & 0x80:
            return n, i

def fields(buf):
    out, i = {}, 0
    while i < len(buf):
        key, i = read_varint(buf, i)
        if key & 7 == 0:
            v, i = read_varint(buf, i)
        else:
            n, i = read_varint(buf, i)
            v, i = buf[i:i + n], i + n
        out[key >> 3] = v
    return out

s = socket.socket(socket.AF_UNIX)
s.connect(sys.argv[1])
s.settimeout(20)
hello = b"\x52" + varint(2) + b"\x08\x01"   # Request{id=1, hello{version=1}}
s.sendall(varint(2 + len(hello)) + b"\x08\x01" + hello)
buf = b""
while True:
    buf += s.recv(4096)
    try:
        n, i = read_varint(buf, 0)
    except IndexError:
        continue
    if len(buf) - i >= n:
        break
print(fields(fields(buf[i:i + n])[10]).get(5))
EOF
}

# oversized_frame_status BYTES: the status the daemon answers a Hello
# padded (an unknown field) to BYTES.
oversized_frame_status() {
        "$PY" - "$SOCK" "$1" <<'EOF'
import socket, sys

def varint(n):
    out = bytearray()
    while True:
        b, n = n & 0x7F, n >> 7
        out.append(b | (0x80 if n else 0))
        if not n:
            return bytes(out)

size = int(sys.argv[2])
pad = b"x" * (size - 10)
body = b"\x08\x01" + b"\x52\x02\x08\x01" + b"\xfa\x06" + varint(len(pad)) + pad  # field 111
s = socket.socket(socket.AF_UNIX)
s.connect(sys.argv[1])
s.settimeout(20)
s.sendall(varint(len(body)) + body)
buf = s.recv(4096)
i = 0
while buf[i] & 0x80:
    i += 1
body = buf[i + 1:]
status = 0
j = 0
while j < len(body):
    key = body[j]; j += 1
    if key == 0x10:
        status = body[j]
        break
    if key & 7 == 0:
        while body[j] & 0x80: j += 1
        j += 1
    else:
        n = body[j]; j += 1 + n
print(status)
EOF
}

# reload: SIGHUP, and wait until the daemon says it reloaded (or refused).
reload() {
        local want=$1 before

        before=$(grep -c -E "$want" "$DAEMON_LOG" || true)
        kill -HUP "$DAEMON_PID"
        if wait_for 10 log_count_above "$want" "$before"; then
                pass
        else
                fail "the daemon logs /$want/ after SIGHUP"
        fi
}

log_count_above() {
        (($(grep -c -E "$1" "$DAEMON_LOG" || true) > $2))
}

# partial_frame: send half a frame and wait; print the status of what the
# daemon answers (9: PROTOCOL_ERROR), whether that came after about one
# second (a timer may add one more), and that the connection was closed.
partial_frame() {
        "$PY" - "$SOCK" <<'EOF'
import socket, sys, time
s = socket.socket(socket.AF_UNIX)
s.connect(sys.argv[1])
s.settimeout(30)
t = time.monotonic()
s.sendall(b"\x20\x08")          # a 32-byte frame, of which 1 byte comes
buf = b""
while True:
    d = s.recv(4096)
    if not d:
        break
    buf += d
status = buf[buf.index(b"\x10") + 1] if b"\x10" in buf else -1
took = time.monotonic() - t
print(status, "early" if took < 0.9 else "in-time" if took < 6 else "late", "closed")
EOF
}

# start_bad NAME CONTENT WANT: a daemon given this file exits 1 at once,
# saying WANT (a regex: FILE:LINE: why), and never listens.
start_bad() {
        local name=$1 content=$2 want=$3 file=$TMP/$1.conf

        printf '%s' "$content" >"$file"
        rm -f "$SOCK"
        run timeout 20 "$MEMACCTD" --config "$file" --socket "$SOCK" --state-dir "$STATE"
        check_eq "bad config ($name): refuses to start" "$RC" 1
        check_match "bad config ($name): says where" "$ERR" "$want"
        check_eq "bad config ($name): never listened" "$([[ -e $SOCK ]] && echo yes || echo no)" no
        # memacctd --check-config says the same, and starts nothing.
        run "$MEMACCTD" --check-config "$file"
        check_eq "bad config ($name): --check-config exits 1" "$RC" 1
        check_match "bad config ($name): --check-config says FILE:LINE: first" "$ERR" "^$want"
        check_eq "bad config ($name): --check-config prints nothing else" "$OUT" ""
}

# ---- bad files refuse to start, with FILE:LINE ----

start_bad unknown-key $'[limits]\nframe-size = 64K\nframe-sise = 4K\n' \
        "$TMP/unknown-key.conf:3: .*frame-sise"
start_bad bad-value $'# comment\n\n[accounting]\nrss-threshold = lots\n' \
        "$TMP/bad-value.conf:4: .*rss-threshold"
start_bad out-of-range $'[limits]\nframe-size = 512\n' "$TMP/out-of-range.conf:2: .*frame-size"
start_bad unknown-section $'[daemon]\nworkers = 2\n[limitz]\n' "$TMP/unknown-section.conf:3: .*limitz"
start_bad twice $'[daemon]\nworkers = 2\nworkers = 3\n' "$TMP/twice.conf:3: .*workers"
start_bad syntax $'[daemon]\nworkers 2\n' "$TMP/syntax.conf:2:"
start_bad bad-access $'[access]\nread = everybody\n' "$TMP/bad-access.conf:2: .*read"
run timeout 20 "$MEMACCTD" --config "$TMP/missing.conf" --socket "$SOCK" --state-dir "$STATE"
check_eq "a missing --config file refuses to start" "$RC" 1
check_match "and names it" "$ERR" "$TMP/missing.conf"
check_run "--check-config of a missing file exits 1" 1 "$MEMACCTD" --check-config "$TMP/missing.conf"
check_match "naming it" "$ERR" "^$TMP/missing.conf: "
printf '[limits]\nframe-size = 32K\n' >"$TMP/good.conf"
check_run "--check-config of a good file exits 0" 0 "$MEMACCTD" --check-config "$TMP/good.conf"
check_eq "and says so" "$OUT" "$TMP/good.conf: the configuration is good"
check_run "--check-config takes --config's file" 0 "$MEMACCTD" --config "$TMP/good.conf" --check-config
check_run "the command line counts too: a bad --metrics is a usage error" 2 "$MEMACCTD" --check-config "$TMP/good.conf" \
        --metrics nonsense
check_run "--check-config takes one file (a usage error)" 2 "$MEMACCTD" --check-config "$TMP/good.conf" extra

# ---- the file is in force ----

# socket and state-dir from the file alone.
mkdir -p "$TMP/alt"
printf '[daemon]\nsocket = %s\nstate-dir = %s\nworkers = 1\n' "$TMP/alt/alt.sock" "$TMP/alt/state" >"$CONF"
bg "$TMP/alt.log" "$MEMACCTD" --config "$CONF"
alt=$BG_PID
if wait_for 30 "$MEMACCTCTL" --socket "$TMP/alt/alt.sock" show /; then
        pass
else
        fail "the daemon listens on the socket of the file: $(<"$TMP/alt.log")"
fi
"$MEMACCTCTL" --socket "$TMP/alt/alt.sock" create /from-file >/dev/null 2>&1 || true
rc=0
stop_bg "$alt" TERM 30 || rc=$?
check_eq "that daemon exits 0" "$rc" 0
check_match "and saved in the state-dir of the file" "$(cat "$TMP/alt/state/state" 2>&1)" '^group /from-file '

cat >"$CONF" <<EOF
[limits]
frame-size = 64K

[accounting]
rss-threshold = 1M

[access]
read = all
EOF
check_start_daemon --config "$CONF" || exit 1
check_eq "frame-size from the file" "$(hello_max_frame)" $((64 * K))
ctl create /c
bg "$TMP/hold1.out" "${CTL[@]}" hold /c 512K
hold1=$BG_PID
wait_for 10 file_has "$TMP/hold1.out" '^holding' || fail "the first hold starts"
check_eq "rss-threshold 1M: 512K is not synced yet" "$(ctl --json client "$hold1" | jget 'd["anon"]')" 0
check_eq "but --exact has it" "$(ctl --json client "$hold1" --exact | jget 'd["anon"]')" $((512 * K))
check_run "read = all: nobody reads" 0 setpriv --reuid=$NOBODY --regid=$NOBODY --clear-groups \
        "${CTL[@]}" show /c

# ---- SIGHUP ----

cat >"$CONF" <<EOF
[limits]
frame-size = 4K

[accounting]
rss-threshold = 0

[access]
read = root
EOF
reload 'Configuration reloaded'
check_eq "frame-size after SIGHUP" "$(hello_max_frame)" $((4 * K))
check_eq "a frame above the new limit is a protocol error" "$(oversized_frame_status $((5 * K)))" 9
check_eq "a frame below it is served" "$(oversized_frame_status $((3 * K)))" 0
bg "$TMP/hold2.out" "${CTL[@]}" hold /c 100K
hold2=$BG_PID
wait_for 10 file_has "$TMP/hold2.out" '^holding' || fail "the second hold starts"
check_eq "rss-threshold 0 after SIGHUP: every charge is synced" \
        "$(ctl --json client "$hold2" | jget 'd["anon"]')" $((100 * K))
check_run "read = root after SIGHUP: nobody may not read" 1 \
        setpriv --reuid=$NOBODY --regid=$NOBODY --clear-groups "${CTL[@]}" show /c
check_match "and is told so" "$ERR" 'permission denied'
check_run "root still reads" 0 ctl show /c

# A bad file on SIGHUP: logged with FILE:LINE, the running configuration
# stays.
printf '[limits]\nframe-size = 4K\nbogus = 1\n' >"$CONF"
reload 'keeping the current configuration'
check_match "the refused reload says where" "$(grep 'keeping the current' "$DAEMON_LOG" | tail -n1)" "$CONF:3:"
check_eq "the running frame-size stays" "$(hello_max_frame)" $((4 * K))
check_run "the daemon still serves" 0 ctl show /c

# frame-timeout: a frame left incomplete is answered with a protocol
# error after that many seconds, and the connection ends.
printf '[limits]\nframe-size = 4K\nframe-timeout = 1\n' >"$CONF"
reload 'Configuration reloaded'
check_eq "a half frame ends the connection after frame-timeout" "$(partial_frame)" "9 in-time closed"

# What cannot change at run time is reported, not applied.
printf '[limits]\ndepth = 3\n' >"$CONF"
reload 'Configuration reloaded'
check_match "a depth change waits for a restart" "$(<"$DAEMON_LOG")" 'depth changed from [0-9]+ to 3: ignored until restart'
check_run "the old depth is still in force" 0 ctl create /c/d1
check_run "the old depth is still in force (deeper)" 0 ctl create /c/d1/d2
check_run "the old depth is still in force (deeper still)" 0 ctl create /c/d1/d2/d3
check_eq "the defaults of the new file are in force" "$(hello_max_frame)" $((64 * K))

stop_bg "$hold1" INT || fail "the first hold exits 0"
stop_bg "$hold2" INT || fail "the second hold exits 0"
check_current_soon "both holds released" /c 0
check_stop_daemon
exit 0
