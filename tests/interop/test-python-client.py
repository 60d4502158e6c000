#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""An independent client: Python, Debian's python3-protobuf, classes made by
protoc from proto/memacct/v1/memacct.proto, and a hand-written varint framing (ten lines,
no private protobuf API). It starts the real daemon on a private socket and
speaks the wire protocol directly: hello, create with a limit, charge up to
the limit, get refused with the refusing group named, pipeline 1,000
requests in one write, and a malformed frame that ends only its own session.

Usage: test-python-client.py MEMACCTD PROTO_DIR
"""

import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time

PASSED = 0
FAILED = 0


def check(cond, what):
    global PASSED, FAILED
    if cond:
        PASSED += 1
    else:
        FAILED += 1
        print(f"FAIL: {what}", file=sys.stderr)


def varint(n):
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        out.append(b | (0x80 if n else 0))
        if not n:
            return bytes(out)


class Conn:
    def __init__(self, path, pb):
        self.pb = pb
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.connect(path)
        self.sock.settimeout(10)
        self.buf = b""
        self.next_id = 1

    def frame(self, **op):
        req = self.pb.Request(id=self.next_id, **op)
        self.next_id += 1
        body = req.SerializeToString()
        return varint(len(body)) + body

    def read_response(self):
        while True:
            n, shift, i = 0, 0, 0
            while i < len(self.buf):
                b = self.buf[i]
                n |= (b & 0x7F) << shift
                shift += 7
                i += 1
                if not b & 0x80:
                    if len(self.buf) - i >= n:
                        body = self.buf[i:i + n]
                        self.buf = self.buf[i + n:]
                        resp = self.pb.Response()
                        resp.ParseFromString(body)
                        return resp
                    break
            chunk = self.sock.recv(65536)
            if not chunk:
                return None
            self.buf += chunk

    def call(self, **op):
        self.sock.sendall(self.frame(**op))
        return self.read_response()


def main():
    memacctd, proto_dir = sys.argv[1], sys.argv[2]
    tmp = tempfile.mkdtemp(prefix="memacct-interop-")
    try:
        subprocess.run(["protoc", f"--proto_path={proto_dir}", f"--python_out={tmp}",
                        os.path.join(proto_dir, "memacct.proto")], check=True)
        sys.path.insert(0, tmp)
        import memacct_pb2 as pb

        sock = os.path.join(tmp, "memacctd.sock")
        daemon = subprocess.Popen([memacctd, "--socket", sock, "--state-dir",
                                   os.path.join(tmp, "state"), "--workers", "2"])
        try:
            for _ in range(200):
                if os.path.exists(sock):
                    break
                time.sleep(0.05)
            run(pb, sock)
        finally:
            daemon.terminate()
            check(daemon.wait(timeout=10) == 0, "daemon exits 0 on SIGTERM")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"{PASSED} passed, {FAILED} failed")
    return 1 if FAILED else 0


def run(pb, sock):
    c = Conn(sock, pb)
    r = c.call(hello=pb.Hello(version=1, agent="python interop"))
    check(r.status == pb.STATUS_OK and r.hello.version == 1, "hello answers version 1")
    check(r.hello.pid == os.getpid(), "the server sees our pid from SO_PEERCRED")

    # The renamed fields are plain attributes (no getattr for a keyword),
    # and keep the numbers they had on the wire.
    imp = pb.ImportCgroups(from_cgroup="/x")
    check(imp.from_cgroup == "/x" and imp.SerializeToString() == b"\x0a\x02/x",
          "ImportCgroups.from_cgroup is field 1")
    check(pb.Response.DESCRIPTOR.fields_by_name["import_reply"].number == 25
          and pb.Response.DESCRIPTOR.fields_by_name["move_reply"].number == 19
          and pb.Request.DESCRIPTOR.fields_by_name["move_session"].number == 19
          and pb.STATUS_OK == 0, "renamed fields and STATUS_OK keep their numbers")
    # On a connection of its own: the charges below attach this one.
    c2 = Conn(sock, pb)
    r = c2.call(attach=pb.Attach(path="/"))
    check(r.status == pb.STATUS_OK, f"attach to /: {r.message}")
    r = c2.call(move_session=pb.Move(path="/"))
    check(r.status == pb.STATUS_OK and r.WhichOneof("result") == "move_reply"
          and r.move_reply.sessions == 1, f"a move answers move_reply: {r.message}")

    r = c.call(create_group=pb.CreateGroup(path="/py", limits=pb.Limits(max=1 << 20)))
    check(r.status == pb.STATUS_OK, f"create /py: {r.message}")
    r = c.call(create_group=pb.CreateGroup(path="/py/child"))
    check(r.status == pb.STATUS_OK, f"create /py/child: {r.message}")

    # Charge to the limit in 256 KiB steps, then one byte more.
    for i in range(4):
        r = c.call(charge=pb.Charge(path="/py/child", bytes=256 << 10, stat="anon"))
        check(r.status == pb.STATUS_OK, f"charge {i} within the limit: {r.message}")
    r = c.call(charge=pb.Charge(path="/py/child", bytes=1))
    check(r.status == pb.STATUS_LIMIT_EXCEEDED, "a byte over max is refused")
    check(r.refused_path == "/py", f"the refusing group is named: {r.refused_path!r}")

    r = c.call(get_group=pb.GetGroup(path="/py", exact=True))
    check(r.status == pb.STATUS_OK and r.group.current == 1 << 20, "usage is exactly max")
    events = {e.name: e.value for e in r.group.events}
    check(events.get("max") == 1, f"one max event: {events}")
    stat = {e.name: e.value for e in r.group.stat}
    check(stat.get("anon") == 1 << 20, f"anon stat holds the charges: {stat}")

    # Pipeline 1,000 requests in one write: 500 charge/uncharge pairs.
    frames = bytearray()
    for i in range(500):
        frames += c.frame(uncharge=pb.Uncharge(bytes=4096))
        frames += c.frame(charge=pb.Charge(bytes=4096))
    first = c.next_id - 1000
    c.sock.sendall(bytes(frames))
    ids, oks = [], 0
    for _ in range(1000):
        r = c.read_response()
        ids.append(r.id)
        oks += r.status == pb.STATUS_OK
    check(ids == list(range(first, first + 1000)), "1,000 pipelined responses in order")
    check(oks == 1000, f"all 1,000 pipelined requests succeed ({oks})")

    # A second connection sees the first one's session charges.
    d = Conn(sock, pb)
    r = d.call(get_group=pb.GetGroup(path="/py/child"))
    check(r.group.current == 1 << 20, "another session sees the usage")

    # Garbage on a third connection ends that session only.
    e = Conn(sock, pb)
    e.sock.sendall(varint(5) + b"\xff\xff\xff\xff\xff")
    r = e.read_response()
    check(r is not None and r.status == pb.STATUS_PROTOCOL_ERROR, "garbage gets PROTOCOL_ERROR")
    check(e.read_response() is None, "then the connection is closed")
    r = d.call(get_group=pb.GetGroup(path="/py/child"))
    check(r.group.current == 1 << 20, "nobody else's accounting changed")

    # Ending the session releases what it held.
    c.sock.close()
    for _ in range(100):
        r = d.call(get_group=pb.GetGroup(path="/py/child"))
        if r.group.current == 0:
            break
        time.sleep(0.02)
    check(r.group.current == 0, "the session's charges are gone after it closes")


if __name__ == "__main__":
    sys.exit(main())
