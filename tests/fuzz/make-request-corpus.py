#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Writes tests/fuzz/corpus/request/: frame streams (first byte: uid switch)
covering every operation, made with Debian's python3-protobuf from
proto/memacct/v1/memacct.proto. Run from the source root; the output is committed."""

import os
import subprocess
import sys
import tempfile

root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
tmp = tempfile.mkdtemp()
subprocess.run(["protoc", f"--proto_path={root}/proto/memacct/v1", f"--python_out={tmp}",
                f"{root}/proto/memacct/v1/memacct.proto"], check=True)
sys.path.insert(0, tmp)
import memacct_pb2 as pb  # noqa: E402


def varint(n):
    out = bytearray()
    while True:
        b, n = n & 0x7F, n >> 7
        out.append(b | (0x80 if n else 0))
        if not n:
            return bytes(out)


def stream(uid_bit, *reqs):
    out = bytearray([uid_bit])
    for i, r in enumerate(reqs, 1):
        r.id = i
        body = r.SerializeToString()
        out += varint(len(body)) + body
    return bytes(out)


R = pb.Request
cases = {
    "hello": stream(0, R(hello=pb.Hello(version=1, agent="corpus"))),
    "tree": stream(0,
                   R(create_group=pb.CreateGroup(path="/a", limits=pb.Limits(max=1 << 20, low=4096))),
                   R(create_group=pb.CreateGroup(path="/a/b")),
                   R(set_limits=pb.SetLimits(path="/a/b", limits=pb.Limits(high=65536, min=1))),
                   R(get_group=pb.GetGroup(path="/a/b", reclaim_root="/a", exact=True)),
                   R(list_groups=pb.ListGroups(path="/", recursive=True)),
                   R(reset_peak=pb.ResetPeak(path="/a")),
                   R(remove_group=pb.RemoveGroup(path="/a/b"))),
    "charges": stream(0,
                      R(create_group=pb.CreateGroup(path="/c", limits=pb.Limits(max=8192))),
                      R(charge=pb.Charge(path="/c", bytes=4096, stat="file", keep=True)),
                      R(charge=pb.Charge(path="/c", bytes=4096)),
                      R(charge=pb.Charge(bytes=1)),
                      R(charge=pb.Charge(bytes=100, force=True, stat="swap")),
                      R(uncharge=pb.Uncharge(bytes=4096)),
                      R(uncharge=pb.Uncharge(path="/c", bytes=99999, keep=True)),
                      R(get_client=pb.GetClient(exact=True)),
                      R(charge=pb.Charge(bytes=4096, stock=True)),
                      R(stock_setup=pb.StockSetup())),
    "moves": stream(0,
                    R(create_group=pb.CreateGroup(path="/m")),
                    R(create_group=pb.CreateGroup(path="/n", limits=pb.Limits(max=10))),
                    R(attach=pb.Attach(path="/m")),
                    R(charge=pb.Charge(bytes=100, stat="shmem")),
                    R(move_session=pb.Move(path="/n")),
                    R(move_session=pb.Move(pid=4242, path="/")),
                    R(subscribe=pb.Subscribe(path="/"))),
    "unprivileged": stream(1,
                           R(create_group=pb.CreateGroup(path="/u")),
                           R(charge=pb.Charge(path="/", bytes=1, keep=True)),
                           R(get_group=pb.GetGroup(path="/"))),
    "unknown-op": stream(0, R()),
    "bad-paths": stream(0,
                        R(create_group=pb.CreateGroup(path="/a//b")),
                        R(create_group=pb.CreateGroup(path="/" + "x" * 300)),
                        R(charge=pb.Charge(path="relative", bytes=1, stat="nonsense"))),
}
out_dir = os.path.join(root, "tests/fuzz/corpus/request")
os.makedirs(out_dir, exist_ok=True)
for name, data in cases.items():
    with open(os.path.join(out_dir, name), "wb") as f:
        f.write(data)
