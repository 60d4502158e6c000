#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Malformed frames on a raw socket, with a hand-written protobuf encoder
and decoder (no protobuf library): a bad varint, oversized length
prefixes, garbage bodies and unknown operations each get one Response with
status PROTOCOL_ERROR (9), then the daemon closes that connection and
releases its session charges. Other clients are untouched: a raw session
and a memacctctl hold keep exactly what they held, and still work. Also:
a frame of exactly the limit is served; a client that pipelines 20,000
requests without reading is paused, not dropped, and answered in order;
and a stock page (StockSetup, SCM_RIGHTS) must be sealed, and whatever
the client writes into it the daemon takes back no more than the session
holds.

Usage: test-malformed.py (MEMACCTD and MEMACCTCTL in the environment)
"""

import fcntl
import mmap
import os
import shutil
import signal
import socket
import subprocess
import sys
import struct
import tempfile
import threading
import time

CHILDREN = []  # killed at the end if still running


# ---- protobuf, by hand: rawproto.py ----

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from rawproto import (  # noqa: E402 (after the path it is found on)
    OK, INVALID_ARGUMENT, LIMIT_EXCEEDED, PROTOCOL_ERROR, FRAME_MAX, REQ_ID, REQ_HELLO,
    REQ_CREATE, REQ_GET_GROUP, REQ_CHARGE, REQ_ATTACH, REQ_STOCK_SETUP, RESP_ID, RESP_STATUS,
    RESP_MESSAGE, varint, f_varint, f_bytes, frame, request, first, charge_body, usage, Conn,
    Tally)


TALLY = Tally()
check = TALLY.check


# ---- the cases ----

CASES = [
    # (name, bytes sent after a good Hello, id expected in the response)
    ("bad varint (six 0xff bytes)", b"\xff" * 6, 0),
    ("length prefix one above the frame limit", varint(FRAME_MAX + 1) + b"\x08\x01" * 50, 0),
    ("length prefix of 2^32-1", b"\xff\xff\xff\xff\x0f" + b"\x00" * 16, 0),
    ("garbage body: an invalid wire type", frame(b"\x0f\xff\x00\x13"), 0),
    ("garbage body: a truncated submessage",
     frame(f_varint(REQ_ID, 5) + varint(REQ_CREATE << 3 | 2) + varint(16) + b"/ab"), 0),
    ("garbage body: random bytes", frame(bytes.fromhex("d3 9a 41 ff 07 e2 00 00 9c 5b")), 0),
    ("unknown operation: a Request with only an id", frame(f_varint(REQ_ID, 7)), 7),
    ("unknown operation: a field not in the oneof",
     frame(f_varint(REQ_ID, 8) + f_bytes(99, f_bytes(1, "/held"))), 8),
    ("unknown operation: an empty body", frame(b""), 0),
]


def stock_setup(conn, fd):
    """StockSetup with @fd as SCM_RIGHTS; the Response."""
    rid = conn.next_id
    conn.next_id += 1
    socket.send_fds(conn.sock, [request(rid, REQ_STOCK_SETUP)], [fd])
    return conn.read()


def lying_stock(sock_path, root):
    """The stock page is the client's memory: whatever it writes there, the
    daemon takes back at most what the session holds."""
    r = root.call(REQ_CREATE, f_bytes(1, "/stock") + f_bytes(2, f_varint(1, 1 << 20)))
    check(first(r, RESP_STATUS, 0) == OK, "create /stock max=1M")
    x = Conn(sock_path)
    x.hello()
    check(first(x.call(REQ_ATTACH, f_bytes(1, "/stock")), RESP_STATUS, 0) == OK, "attach /stock")

    unsealed = os.memfd_create("unsealed", os.MFD_ALLOW_SEALING)
    os.ftruncate(unsealed, 4096)
    r = stock_setup(x, unsealed)
    os.close(unsealed)
    check(r is not None and first(r, RESP_STATUS, 0) == INVALID_ARGUMENT,
          f"an unsealed stock page is refused as an invalid argument: {r}")

    fd = os.memfd_create("stock", os.MFD_ALLOW_SEALING)
    os.ftruncate(fd, 4096)
    fcntl.fcntl(fd, fcntl.F_ADD_SEALS, fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW | fcntl.F_SEAL_SEAL)
    page = mmap.mmap(fd, 4096)
    r = stock_setup(x, fd)
    os.close(fd)
    check(r is not None and first(r, RESP_STATUS, 0) == OK, f"a sealed page is taken: {r}")
    r = x.call(REQ_CHARGE, f_varint(2, 256 << 10) + f_varint(6, 1))
    check(first(r, RESP_STATUS, 0) == OK, "a stock refill of 256 KiB")
    check(struct.unpack_from("<Q", page, 0)[0] == 256 << 10, "the daemon put it in the page")
    check(usage(root, "/stock") == 256 << 10, "and counts it")

    # The client claims 2^62 unused bytes; a kept charge of the whole max
    # makes the daemon drain the page.
    struct.pack_into("<Q", page, 0, 1 << 62)
    r = root.call(REQ_CHARGE, charge_body("/stock", 1 << 20, keep=True))
    check(first(r, RESP_STATUS, 0) == OK, "the drain makes room for a charge of the whole max")
    check(usage(root, "/stock") == 1 << 20, "and takes back only what the session held")
    check(struct.unpack_from("<Q", page, 0)[0] == 0, "the drained page is empty")

    # A page near 2^64 and a refused refill: nothing wraps.
    struct.pack_into("<Q", page, 0, (1 << 64) - 4096)
    r = x.call(REQ_CHARGE, f_varint(2, 4096) + f_varint(6, 1))
    check(first(r, RESP_STATUS, 0) == LIMIT_EXCEEDED, "a refill over max is refused")
    x.close()
    deadline = time.monotonic() + 10
    while usage(root, "/stock") != 1 << 20 and time.monotonic() < deadline:
        time.sleep(0.05)
    check(usage(root, "/stock") == 1 << 20, "the session's end releases nothing it did not hold")
    page.close()


def run(sock_path, ctl):
    root = Conn(sock_path)
    check(first(root.hello(), RESP_STATUS, 0) == OK, "hello")
    for path, maxb in (("/held", None), ("/victim", None)):
        body = f_bytes(1, path)
        if maxb:
            body += f_bytes(2, f_varint(1, maxb))
        r = root.call(REQ_CREATE, body)
        check(first(r, RESP_STATUS, 0) == OK, f"create {path}")

    # Three bystanders in /held: a raw session charge, a kept charge, and
    # a memacctctl hold in another process.
    holder = Conn(sock_path)
    holder.hello()
    r = holder.call(REQ_CHARGE, charge_body("/held", 3 << 20))
    check(first(r, RESP_STATUS, 0) == OK, "the raw holder charges 3 MiB to its session")
    r = root.call(REQ_CHARGE, charge_body("/held", 1 << 20, keep=True))
    check(first(r, RESP_STATUS, 0) == OK, "a kept charge of 1 MiB")
    hold = subprocess.Popen([ctl, "--socket", sock_path, "hold", "/held", "512K"],
                            stdout=subprocess.PIPE, text=True)
    CHILDREN.append(hold)
    line = hold.stdout.readline()
    check(line == "attached to /held\n", f"memacctctl hold says where it attached: {line!r}")
    line = hold.stdout.readline()
    check(line.startswith("holding"), f"memacctctl hold holds: {line!r}")
    held = (3 << 20) + (1 << 20) + (512 << 10)
    check(usage(root, "/held") == held, f"/held holds {held} bytes before the bad frames")

    for name, data, want_id in CASES:
        bad = Conn(sock_path)
        bad.hello()
        # The victim's own session charge: released when its session ends.
        r = bad.call(REQ_CHARGE, charge_body("/victim", 1 << 20))
        check(first(r, RESP_STATUS, 0) == OK, f"{name}: the victim charges 1 MiB")
        bad.send(data)
        r = bad.read()
        check(r is not None, f"{name}: a response before the close")
        if r is not None:
            check(first(r, RESP_STATUS, 0) == PROTOCOL_ERROR,
                  f"{name}: status {first(r, RESP_STATUS, 0)}, want PROTOCOL_ERROR")
            check(len(first(r, RESP_MESSAGE, b"")) > 0, f"{name}: the error has a message")
            check(first(r, RESP_ID, 0) == want_id, f"{name}: id {first(r, RESP_ID, 0)}, want {want_id}")
        check(bad.at_eof(), f"{name}: then the daemon closes the connection")
        bad.close()

        deadline = time.monotonic() + 10
        while usage(root, "/victim") != 0 and time.monotonic() < deadline:
            time.sleep(0.05)
        check(usage(root, "/victim") == 0, f"{name}: the ended session's charge is released")
        check(usage(root, "/held") == held, f"{name}: the others hold exactly what they held")
        check(usage(holder, "/held") == held, f"{name}: the raw holder's session still answers")

    # Good requests pipelined before a bad frame are answered first.
    bad = Conn(sock_path)
    bad.send(request(1, REQ_HELLO, f_varint(1, 1)) + request(2, REQ_GET_GROUP, f_bytes(1, "/held"))
             + b"\xff" * 6 + request(3, REQ_GET_GROUP, f_bytes(1, "/held")))
    got = []
    while True:
        r = bad.read()
        if r is None:
            break
        got.append((first(r, RESP_ID, 0), first(r, RESP_STATUS, 0)))
    check(got == [(1, OK), (2, OK), (0, PROTOCOL_ERROR)],
          f"pipelined: answered in order up to the bad frame, nothing after: {got}")
    bad.close()

    # A NUL inside a string: C would cut the string there and act on
    # another path than the one sent. Refused, the field named, nothing
    # done, and the connection goes on.
    nul = Conn(sock_path)
    nul.hello()
    for what, op, body, field in (
            ("create", REQ_CREATE, f_bytes(1, b"/held\0x"), "create_group.path"),
            ("create below", REQ_CREATE, f_bytes(1, b"/victim/a\0b"), "create_group.path"),
            ("charge", REQ_CHARGE, charge_body(b"/held\0/x", 4096, keep=True), "charge.path"),
            ("a stat item", REQ_CHARGE, charge_body("/held", 4096, keep=True) + f_bytes(3, b"anon\0x"),
             "charge.stat"),
            ("attach", REQ_ATTACH, f_bytes(1, b"/held\0"), "attach.path"),
            ("get", REQ_GET_GROUP, f_bytes(1, b"/held\0/../victim"), "get_group.path")):
        r = nul.call(op, body)
        msg = first(r, RESP_MESSAGE, b"").decode(errors="replace")
        check(first(r, RESP_STATUS, 0) == INVALID_ARGUMENT,
              f"a NUL in {what}'s string: status {first(r, RESP_STATUS, 0)}, want INVALID_ARGUMENT")
        check(msg.startswith(field + ":"), f"a NUL in {what}'s string: the message names {field}: {msg!r}")
    r = root.call(REQ_GET_GROUP, f_bytes(1, "/victim/a"))
    check(first(r, RESP_STATUS, 0) != OK, "the group before the NUL was not created")
    check(usage(root, "/held") == held, "nothing was charged by the refused requests")
    check(first(nul.hello(), RESP_STATUS, 0) == OK, "and the connection goes on")
    nul.close()

    # The frame limit is inclusive: a body of exactly 64 KiB is served.
    body = f_varint(REQ_ID, 1) + f_bytes(REQ_HELLO, f_varint(1, 1))
    pad = FRAME_MAX - len(body) - 2 - 3     # field 111's key and length
    body += varint(111 << 3 | 2) + varint(pad) + b"p" * pad
    check(len(body) == FRAME_MAX, f"the padded Hello is {len(body)} bytes")
    big = Conn(sock_path)
    big.send(frame(body))
    r = big.read()
    check(r is not None and first(r, RESP_STATUS, 0) == OK and first(r, RESP_ID) == 1,
          f"a frame of exactly {FRAME_MAX} bytes is served: {r}")
    check(first(big.hello(), RESP_STATUS, 0) == OK, "and the connection goes on")
    big.close()

    # A client that writes 20,000 requests without reading its replies: the
    # daemon stops reading it (bounded output), serves everyone else, and
    # answers all of them, in order, once the client reads.
    n = 20000
    slow = Conn(sock_path)
    data = b"".join(request(i + 1, REQ_GET_GROUP, f_bytes(1, "/held")) for i in range(n))
    errors = []

    def write_all():
        try:
            slow.sock.sendall(data)
        except OSError as e:
            errors.append(e)
    writer = threading.Thread(target=write_all)
    writer.start()
    time.sleep(0.5)
    check(usage(root, "/held") == held, "others are served while a client does not read")
    ids, oks = [], 0
    for _ in range(n):
        r = slow.read()
        if r is None:
            break
        ids.append(first(r, RESP_ID, 0))
        oks += first(r, RESP_STATUS, 0) == OK
    writer.join()
    check(not errors, f"the slow client's writes all went through: {errors}")
    check(ids == list(range(1, n + 1)), f"{n} replies in order (got {len(ids)})")
    check(oks == n, f"{n} replies OK (got {oks})")
    slow.close()

    lying_stock(sock_path, root)

    # A frame cut short and the client gone: nothing to answer, nobody hurt.
    bad = Conn(sock_path)
    bad.send(varint(100) + b"\x08")
    bad.close()

    check(usage(root, "/held") == held, "the bystanders still hold exactly what they held")
    check(hold.poll() is None, "memacctctl hold is still running")
    hold.send_signal(signal.SIGINT)
    check(hold.wait(timeout=20) == 0, "memacctctl hold exits 0 on SIGINT")
    holder.close()
    deadline = time.monotonic() + 10
    while usage(root, "/held") != 1 << 20 and time.monotonic() < deadline:
        time.sleep(0.05)
    check(usage(root, "/held") == 1 << 20, "only the kept charge is left once the holders end")
    fresh = Conn(sock_path)
    check(first(fresh.hello(), RESP_STATUS, 0) == OK, "a new connection is served")
    fresh.close()
    root.close()


def main():
    memacctd = os.environ["MEMACCTD"]
    ctl = os.environ["MEMACCTCTL"]
    tmp = tempfile.mkdtemp(prefix="memacct-malformed.")
    sock_path = os.path.join(tmp, "run", "memacctd.sock")
    log = open(os.path.join(tmp, "daemon.log"), "w+")
    daemon = subprocess.Popen([memacctd, "--socket", sock_path, "--state-dir",
                               os.path.join(tmp, "state"), "--workers", "2", "-v"],
                              stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 30
        while not os.path.exists(sock_path):
            if daemon.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("memacctd did not start")
            time.sleep(0.05)
        run(sock_path, ctl)
    except Exception as e:  # counted, and the daemon still stopped
        check(False, f"stopped early: {type(e).__name__}: {e}")
    finally:
        for child in CHILDREN:
            if child.poll() is None:
                child.kill()
                child.wait()
        daemon.send_signal(signal.SIGTERM)
        try:
            rc = daemon.wait(timeout=30)
        except subprocess.TimeoutExpired:
            daemon.kill()
            rc = daemon.wait()
        check(rc == 0, f"memacctd exits 0 on SIGTERM (status {rc})")
        if TALLY.failed:
            log.seek(0)
            sys.stderr.write("--- daemon log ---\n" + log.read())
        log.close()
        shutil.rmtree(tmp, ignore_errors=True)
    return TALLY.summary()


if __name__ == "__main__":
    sys.exit(main())
