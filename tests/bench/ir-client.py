#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""A fixed load for run-instructions.sh: N charge/uncharge requests of
4 KiB, DEPTH per write, on one connection attached to /b/a/c (/b/a has a
max, so each is a checked charge of four levels). Exactly N, so that an
instruction count divides by a known number. With $IR_REGION set, the
charges are in that device region (registered here, /b/a's max set in
it), so that a region's charge is counted against memory's. protoc-generated
classes from proto/memacct/v1/memacct.proto are imported from the directory
in $IR_PB."""

import os
import socket
import sys

sys.path.insert(0, os.environ["IR_PB"])
import memacct_pb2 as pb  # noqa: E402


def varint(n):
    out = bytearray()
    while True:
        b, n = n & 0x7F, n >> 7
        out.append(b | (0x80 if n else 0))
        if not n:
            return bytes(out)


def frame(msg):
    body = msg.SerializeToString()
    return varint(len(body)) + body


class Conn:
    def __init__(self, path):
        self.s = socket.socket(socket.AF_UNIX)
        self.s.connect(path)
        self.buf = b""

    def reply(self):
        while True:
            n = shift = i = 0
            while i < len(self.buf):
                b = self.buf[i]
                n |= (b & 0x7F) << shift
                shift += 7
                i += 1
                if not b & 0x80:
                    if len(self.buf) >= i + n:
                        r = pb.Response()
                        r.ParseFromString(self.buf[i:i + n])
                        self.buf = self.buf[i + n:]
                        if r.status != pb.STATUS_OK:
                            sys.exit(f"ir-client: request failed: {r.message}")
                        return r
                    break
            data = self.s.recv(65536)
            if not data:
                sys.exit("ir-client: the daemon closed the connection")
            self.buf += data

    def call(self, **op):
        self.s.sendall(frame(pb.Request(id=1, **op)))
        return self.reply()


def main():
    path, n, depth = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    c = Conn(path)
    c.call(create_group=pb.CreateGroup(path="/b"))
    c.call(create_group=pb.CreateGroup(path="/b/a", limits=pb.Limits(max=1 << 30)))
    c.call(create_group=pb.CreateGroup(path="/b/a/c"))
    c.call(attach=pb.Attach(path="/b/a/c"))
    region = os.environ.get("IR_REGION")
    if region:
        c.call(add_region=pb.AddRegion(name=region))
        c.call(set_limits=pb.SetLimits(path="/b/a", region=region, limits=pb.Limits(max=1 << 30)))
        ch = frame(pb.Request(id=2, charge=pb.Charge(bytes=4096, region=region)))
        un = frame(pb.Request(id=3, uncharge=pb.Uncharge(bytes=4096, region=region)))
    else:
        ch = frame(pb.Request(id=2, charge=pb.Charge(bytes=4096)))
        un = frame(pb.Request(id=3, uncharge=pb.Uncharge(bytes=4096)))
    batch = b"".join(ch if i % 2 == 0 else un for i in range(depth))
    for _ in range(n // depth):
        c.s.sendall(batch)
        for _ in range(depth):
            c.reply()


main()
