#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# ListGroups in pages: with a small frame limit a list of a few thousand
# groups takes many replies, none of them over the frame; memacctctl tree
# (libmemacct) follows the cursor and prints every group exactly once, in
# creation order, while other groups are created and removed beside them
# (docs/design.md, "Listing in pages": a group that exists throughout is
# listed exactly once).

# shellcheck source-path=SCRIPTDIR source=../lib.sh
source "$(dirname "$0")/../lib.sh"

N=3000
FRAME=4096
CONF=$TMP/memacctd.conf
printf '[limits]\nframe-size = %s\ngroups = 20000\n' "$FRAME" >"$CONF"
check_start_daemon --config "$CONF" || exit 1

# pages.py MODE: over the raw protocol. "create" makes /p and /p/g0../p/gN-1;
# "churn" creates and removes /p/cK until killed; "pages" lists /p
# page by page and prints "PAGES MAXBYTES COUNT".
cat >"$TMP/pages.py" <<'PYEOF'
import sys
sys.path.insert(0, sys.argv[1])
from rawproto import *

conn = Conn(sys.argv[2])
mode, n = sys.argv[3], int(sys.argv[4])
if mode == "create":
    for path in ["/p"] + [f"/p/g{i}" for i in range(n)]:
        r = conn.call(REQ_CREATE, f_bytes(1, path))
        assert status(r) == OK, (path, message(r))
elif mode == "churn":
    k = 0
    while True:
        conn.call(REQ_CREATE, f_bytes(1, f"/p/c{k}"))
        if k >= 3:
            conn.call(REQ_REMOVE, f_bytes(1, f"/p/c{k - 3}"))
        k += 1
else:
    pages, biggest, count, after = 0, 0, 0, None
    while True:
        body = f_bytes(1, "/p") + f_varint(2, 1)
        if after is not None:
            body += f_bytes(4, after)
        conn.send(request(conn.next_id, REQ_LIST, body))
        conn.next_id += 1
        while True:
            try:
                size, i = read_varint(conn.buf, 0)
                if len(conn.buf) - i >= size:
                    break
            except ValueError:
                pass
            conn.buf += conn.sock.recv(65536)
        biggest = max(biggest, size)
        r = decode(conn.buf[i:i + size])
        conn.buf = conn.buf[i + size:]
        assert status(r) == OK, message(r)
        gl = decode(first(r, RESP_GROUPS, b""))
        count += len(gl.get(1, []))
        pages += 1
        if not first(gl, 2, 0):
            break
        after = first(gl, 3, b"").decode()
    print(pages, biggest, count)
PYEOF
pages() {
        "$PY" "$TMP/pages.py" "$(dirname "$0")" "$SOCK" "$@"
}

check_run "the groups are created" 0 pages create "$N"

read -r npages biggest count < <(pages pages 0)
check_eq "a page-by-page list has every group and /p" "$count" $((N + 1))
check_eq "it took more than one page" "$((npages > 1))" 1
check_eq "no reply was bigger than a frame ($biggest bytes)" "$((biggest <= FRAME))" 1

# The whole list through libmemacct, while /p/cK come and go.
bg "$TMP/churn.out" "$PY" "$TMP/pages.py" "$(dirname "$0")" "$SOCK" churn 0
CHURN=$BG_PID
for round in 1 2 3; do
        out=$(ctl --json tree /p) || fail "tree /p (round $round)"
        got=$(jget '" ".join(g["path"] for g in d if g["path"].startswith("/p/g"))' <<<"$out")
        want=$(for ((i = 0; i < N; i++)); do printf '/p/g%d ' "$i"; done)
        check_eq "round $round: every /p/gI exactly once, in creation order" "$got" "${want% }"
        dups=$(jget 'len(d) - len(set(g["path"] for g in d))' <<<"$out")
        check_eq "round $round: no group twice" "$dups" 0
done
stop_bg "$CHURN" TERM >/dev/null || true

check_stop_daemon
finish
