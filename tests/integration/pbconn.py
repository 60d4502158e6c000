# SPDX-License-Identifier: LGPL-2.1-or-later
"""One connection to memacctd through python3-protobuf (classes protoc makes
from memacct.proto, given to Conn as `pb`), for the tests that speak the
protocol as an independent client would. The length prefix is written by
hand (rawproto.varint). Unsolicited frames (id 0: events, Moved,
ReclaimRequest) are kept apart from the replies, in arrival order."""

import socket
import time

from rawproto import varint


class Conn:
    def __init__(self, pb, path=None, fd=None):
        self.pb = pb
        if fd is not None:
            self.sock = socket.socket(fileno=fd)
        else:
            self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            self.sock.connect(path)
        self.buf = b""
        self.next_id = 1
        self.unsolicited = []

    def close(self):
        self.sock.close()

    def _frame(self):
        """The next whole Response in the buffer, or None."""
        n, shift, i = 0, 0, 0
        while i < len(self.buf):
            b = self.buf[i]
            n |= (b & 0x7F) << shift
            shift += 7
            i += 1
            if not b & 0x80:
                if len(self.buf) - i < n:
                    return None
                resp = self.pb.Response()
                resp.ParseFromString(self.buf[i:i + n])
                self.buf = self.buf[i + n:]
                return resp
        return None

    def read(self, timeout=30, unsolicited=False):
        """The next reply (with @unsolicited: the next unsolicited frame);
        None on EOF or timeout."""
        deadline = time.monotonic() + timeout
        while True:
            if unsolicited and self.unsolicited:
                return self.unsolicited.pop(0)
            r = self._frame()
            while r is not None:
                if r.id != 0:
                    return r
                self.unsolicited.append(r)
                if unsolicited:
                    return self.unsolicited.pop(0)
                r = self._frame()
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            self.sock.settimeout(left)
            try:
                chunk = self.sock.recv(65536)
            except socket.timeout:
                return None
            if not chunk:
                return None
            self.buf += chunk

    def send(self, **op):
        rid = self.next_id
        self.next_id += 1
        body = self.pb.Request(id=rid, **op).SerializeToString()
        self.sock.sendall(varint(len(body)) + body)
        return rid

    def call(self, timeout=30, **op):
        rid = self.send(**op)
        r = self.read(timeout)
        if r is None:
            raise ConnectionError("the daemon closed the connection")
        if r.id != rid:
            raise ValueError(f"reply {r.id} to request {rid}")
        return r

    def drain_events(self, quiet=0.5, limit=10):
        """Every Event that arrives until no frame has for @quiet seconds
        (other unsolicited frames are dropped)."""
        deadline = time.monotonic() + limit
        while time.monotonic() < deadline:
            n = len(self.unsolicited)
            self.read(timeout=quiet)
            if len(self.unsolicited) == n:
                break
        out = [f.event for f in self.unsolicited if f.WhichOneof("result") == "event"]
        self.unsolicited = []
        return out
