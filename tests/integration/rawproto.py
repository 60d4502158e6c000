# SPDX-License-Identifier: LGPL-2.1-or-later
"""The socket protocol by hand, for tests that must send what no protobuf
library would (no protobuf library is needed): varints of any width,
frames, a decoder to {field: [values]}, a connection that keeps the
unsolicited events apart from the replies, a child process that connects
as another pid or uid and hands the descriptor back, and the few requests
the tests read the daemon's accounting with.
"""

import os
import select
import socket
import signal
import subprocess
import sys
import time

OK = 0
INVALID_ARGUMENT = 1
LIMIT_EXCEEDED = 5
PERMISSION_DENIED = 7
RESOURCE_EXHAUSTED = 8
PROTOCOL_ERROR = 9
FRAME_MAX = 64 * 1024
K, M = 1024, 1024 * 1024

# Request fields (proto/memacct/v1/memacct.proto)
REQ_ID = 1
REQ_HELLO = 10
REQ_CREATE = 11
REQ_REMOVE = 12
REQ_SET_LIMITS = 13
REQ_GET_GROUP = 14
REQ_LIST = 15
REQ_CHARGE = 16
REQ_UNCHARGE = 17
REQ_ATTACH = 18
REQ_MOVE = 19
REQ_GET_CLIENT = 20
REQ_RESET_PEAK = 21
REQ_SUBSCRIBE = 22
REQ_STOCK_SETUP = 23
REQ_IMPORT = 24
# Response fields
RESP_ID = 1
RESP_STATUS = 2
RESP_MESSAGE = 3
RESP_GROUP = 14
RESP_GROUPS = 15
RESP_CLIENT = 20
RESP_EVENT = 22
# GroupInfo
GI_PATH, GI_CURRENT = 1, 2
GI_NUMERIC = {2: "current", 3: "peak", 4: "max", 5: "high", 6: "low", 7: "min",
              8: "effective_min", 9: "effective_low", 10: "failcnt", 14: "owner",
              15: "nr_children", 16: "nr_sessions"}
GI_COUNTERS = {11: "events", 12: "events_local", 13: "stat"}


# ---- protobuf, by hand ----

def varint(n):
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        out.append(b | (0x80 if n else 0))
        if not n:
            return bytes(out)


def overlong(n, width):
    """@n as a varint of exactly @width bytes (padded with 0x80 groups)."""
    v = bytearray(varint(n))
    while len(v) < width:
        v[-1] |= 0x80
        v.append(0)
    return bytes(v)


def f_varint(num, v):
    return varint(num << 3 | 0) + varint(v)


def f_bytes(num, b):
    if isinstance(b, str):
        b = b.encode()
    return varint(num << 3 | 2) + varint(len(b)) + b


def frame(body):
    return varint(len(body)) + body


def request(rid, op=None, body=b""):
    msg = f_varint(REQ_ID, rid)
    if op is not None:
        msg += f_bytes(op, body)
    return frame(msg)


def read_varint(buf, i):
    n, shift = 0, 0
    while True:
        if i >= len(buf):
            raise ValueError("truncated varint")
        b = buf[i]
        i += 1
        n |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            return n, i


def decode(buf):
    """A message as {field: [values]}: ints for varints, bytes otherwise."""
    out, i = {}, 0
    while i < len(buf):
        key, i = read_varint(buf, i)
        num, wt = key >> 3, key & 7
        if wt == 0:
            v, i = read_varint(buf, i)
        elif wt == 2:
            n, i = read_varint(buf, i)
            v = bytes(buf[i:i + n])
            i += n
        elif wt == 1:
            v = bytes(buf[i:i + 8])
            i += 8
        elif wt == 5:
            v = bytes(buf[i:i + 4])
            i += 4
        else:
            raise ValueError(f"wire type {wt}")
        out.setdefault(num, []).append(v)
    return out


def first(msg, num, default=None):
    v = msg.get(num) if msg else None
    return v[0] if v else default


def status(r):
    return None if r is None else first(r, RESP_STATUS, OK)


def message(r):
    return first(r, RESP_MESSAGE, b"").decode(errors="replace") if r else ""


class Conn:
    def __init__(self, path=None, fd=None, timeout=10):
        if fd is not None:
            self.sock = socket.socket(fileno=fd)
        else:
            self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            self.sock.connect(path)
        self.sock.settimeout(timeout)
        self.buf = b""
        self.next_id = 1
        self.events = []   # Event messages that came between replies
        self.replies = []  # replies read while waiting for events

    def close(self):
        self.sock.close()

    def send(self, data):
        self.sock.sendall(data)

    def frames(self):
        """Take every complete frame from the buffer: events to .events,
        the rest to .replies."""
        while True:
            try:
                n, i = read_varint(self.buf, 0)
            except ValueError:
                return
            if len(self.buf) - i < n:
                return
            r = decode(self.buf[i:i + n])
            self.buf = self.buf[i + n:]
            if first(r, RESP_EVENT) is not None:
                self.events.append(decode(first(r, RESP_EVENT)))
            else:
                self.replies.append(r)

    def read(self):
        """The next Response that is not an Event (those are kept in
        .events); None at end of file."""
        while True:
            self.frames()
            if self.replies:
                return self.replies.pop(0)
            chunk = self.sock.recv(65536)
            if not chunk:
                return None
            self.buf += chunk

    def reply(self):
        return self.read()

    def call(self, op, body=b"", rid=None):
        if rid is None:
            rid = self.next_id
            self.next_id += 1
        self.send(request(rid, op, body))
        r = self.reply()
        if r is None:
            raise ConnectionError("the daemon closed the connection")
        if first(r, RESP_ID) != rid:
            raise ValueError(f"response id {first(r, RESP_ID)}, want {rid}: {r}")
        return r

    def at_eof(self, timeout=10):
        """True when the daemon closes the connection with nothing more."""
        self.sock.settimeout(timeout)
        try:
            return self.read() is None
        except (ConnectionResetError, socket.timeout):
            return False

    def readable(self, timeout=0):
        self.frames()
        return bool(self.replies or self.events) or bool(select.select([self.sock], [], [], timeout)[0])

    def hello(self):
        return self.call(REQ_HELLO, f_varint(1, 1) + f_bytes(2, "hostile test"))

    def wait_event(self, timeout=5):
        """The next Event, waiting at most @timeout seconds; None."""
        deadline = time.monotonic() + timeout
        self.frames()
        while not self.events:
            left = deadline - time.monotonic()
            if left < 0 or not select.select([self.sock], [], [], left)[0]:
                break
            chunk = self.sock.recv(65536)
            if not chunk:
                break
            self.buf += chunk
            self.frames()
        return self.events.pop(0) if self.events else None


class Connector:
    """A child process that opens connections for the test and hands their
    descriptors back: the daemon sees its pid (and @uid) in SO_PEERCRED,
    so each bystander is a client of its own. Forked before any thread."""

    def __init__(self, sock_path, uid=None):
        parent, child = socket.socketpair()
        pid = os.fork()
        if pid == 0:
            code = 0
            try:
                # Nothing of the test's but its own end: another connector's
                # end held here would keep that one from seeing its EOF.
                os.closerange(3, child.fileno())
                os.closerange(child.fileno() + 1, 1 << 16)
                if uid is not None:
                    os.setgroups([])
                    os.setgid(uid)
                    os.setuid(uid)
                while child.recv(1):
                    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                    s.connect(sock_path)
                    socket.send_fds(child, [b"c"], [s.fileno()])
                    s.close()
            except BaseException:
                code = 1
            os._exit(code)
        child.close()
        self.ctl = parent
        self.pid = pid

    def connect(self, timeout=10):
        self.ctl.sendall(b"c")
        _, fds, _, _ = socket.recv_fds(self.ctl, 1, 1)
        if not fds:
            raise ConnectionError("the connector could not connect")
        return Conn(fd=fds[0], timeout=timeout)

    def close(self):
        self.ctl.close()
        os.waitpid(self.pid, 0)


def charge_body(path, nbytes, stat=None, keep=False):
    body = f_bytes(1, path) + f_varint(2, nbytes)
    if stat:
        body += f_bytes(3, stat)
    return body + (f_varint(4, 1) if keep else b"")


def group_info(raw):
    g = decode(raw)
    info = {"path": first(g, GI_PATH, b"").decode()}
    for num, name in GI_NUMERIC.items():
        info[name] = first(g, num, 0)
    for num, name in GI_COUNTERS.items():
        info[name] = tuple((first(decode(c), 1, b"").decode(), first(decode(c), 2, 0))
                           for c in g.get(num, []))
    return info


def get_group(conn, path, exact=True):
    r = conn.call(REQ_GET_GROUP, f_bytes(1, path) + (f_varint(3, 1) if exact else b""))
    if status(r) != OK:
        raise ValueError(f"get {path}: status {status(r)} {message(r)}")
    return group_info(first(r, RESP_GROUP))


def list_groups(conn, path):
    r = conn.call(REQ_LIST, f_bytes(1, path) + f_varint(2, 1) + f_varint(3, 1))
    if status(r) != OK:
        raise ValueError(f"list {path}: status {status(r)} {message(r)}")
    return [group_info(g) for g in decode(first(r, RESP_GROUPS, b"")).get(1, [])]


def usage(conn, path):
    return get_group(conn, path, exact=False)["current"]


def client_info(conn, pid):
    r = conn.call(REQ_GET_CLIENT, f_varint(1, pid) + f_varint(2, 1))
    if status(r) != OK:
        raise ValueError(f"get client {pid}: status {status(r)} {message(r)}")
    c = decode(first(r, RESP_CLIENT))
    return {name: first(c, num, 0) for num, name in ((1, "pid"), (2, "file"), (3, "anon"),
                                                     (4, "swap"), (5, "shmem"))}


class Tally:
    """The checks of a test: each can fail; the verdict is the failures."""

    def __init__(self):
        self.passed = self.failed = 0

    def check(self, cond, what):
        if cond:
            self.passed += 1
        else:
            self.failed += 1
            print(f"FAIL: {what}", file=sys.stderr, flush=True)
        return cond

    def summary(self, extra=""):
        print(f"{self.passed} passed, {self.failed} failed{extra}")
        return 1 if self.failed else 0


def stop_daemon(daemon, log, tally, timeout=60):
    """The end of a test's daemon: SIGTERM, counted (it must exit 0), and
    the tail of its log @log (a file open w+) on stderr when any check of
    @tally failed."""
    daemon.send_signal(signal.SIGTERM)
    try:
        rc = daemon.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        daemon.kill()
        rc = daemon.wait()
    tally.check(rc == 0, f"memacctd exits 0 on SIGTERM (status {rc})")
    if tally.failed:
        log.seek(0)
        sys.stderr.write("--- daemon log ---\n" + log.read()[-20000:])
    log.close()


def wait_until(fn, timeout=10):
    deadline = time.monotonic() + timeout
    while True:
        if fn():
            return True
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def sanitized(binary):
    """Is @binary built with ASan or TSan? Their allocators keep freed
    memory in quarantine (ASan: up to 256 MiB), so RSS bounds must allow it."""
    with open(binary, "rb") as f:
        data = f.read()
    return b"__asan_init" in data or b"__tsan_init" in data


# What a sanitizer's quarantine may hold on top of a daemon's own memory, KiB.
QUARANTINE_KIB = 256 * 1024
