#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Writes tests/fuzz/corpus/wire-hot/: Request bodies for the hand codec
(fuzz-wire-hot.c), the usual ones made with Debian's python3-protobuf from
proto/memacct/v1/memacct.proto, and the odd encodings it must decode as
protobuf-c does or decline, written byte by byte: non-minimal and ten-byte
varints, two-byte tags, repeated fields, unknown fields, wrong wire types,
NUL in a string. Each body read the other way round is a set of reply
values too. Run from the source root; the output is committed."""

import os

from corpus_proto import pb, root, varint


def ld(tag, data):
    """A length-delimited field of a one- or two-byte tag."""
    return varint(tag << 3 | 2) + varint(len(data)) + data


U64_MAX = (1 << 64) - 1
R = pb.Request
cases = {
    "charge": R(id=1, charge=pb.Charge(bytes=4096)).SerializeToString(),
    "uncharge": R(id=2, uncharge=pb.Uncharge(bytes=4096)).SerializeToString(),
    "charge-all": R(id=U64_MAX, charge=pb.Charge(path="/a/b", bytes=U64_MAX, stat="file", keep=True,
                                                 force=True, stock=True)).SerializeToString(),
    "uncharge-all": R(id=7, uncharge=pb.Uncharge(path="/a", bytes=0, stat="", keep=True)).SerializeToString(),
    "charge-empty": R(charge=pb.Charge()).SerializeToString(),
    "hello": R(id=3, hello=pb.Hello(version=1)).SerializeToString(),
    "charge-region": R(id=8, charge=pb.Charge(path="/g", bytes=4096, keep=True,
                                               region="drm/0000:03:00.0/vram0")).SerializeToString(),
    "uncharge-region": R(id=9, uncharge=pb.Uncharge(bytes=4096, region="gpu0")).SerializeToString(),
    # Odd, hand-written: what protobuf-c accepts in its own way.
    "nonminimal-id": b"\x08\x81\x80\x80\x00" + ld(16, b"\x10\x80\x20"),
    "ten-byte-bytes": b"\x08\x01" + ld(16, b"\x10" + b"\xff" * 9 + b"\x7f"),
    "ten-byte-bool": b"\x08\x01" + ld(16, b"\x20" + b"\x80" * 9 + b"\x02"),
    "long-length": b"\x08\x01\x82\x01\x83\x80\x00\x10\x80\x20",
    "two-byte-id-tag": b"\x88\x00\x05" + ld(17, b"\x10\x01"),
    "dup-id": b"\x08\x01\x08\x02" + ld(16, b"\x10\x01"),
    "dup-op": ld(16, b"\x10\x01") + ld(16, b"\x10\x02"),
    "dup-field": ld(16, b"\x10\x01\x10\x02"),
    "charge-then-uncharge": ld(16, b"\x10\x01") + ld(17, b"\x10\x02"),
    "unknown-field": b"\x08\x01" + ld(16, b"\x10\x01\x38\x01"),
    "unknown-top": b"\x08\x01\x10\x05" + ld(16, b"\x10\x01"),
    "wrong-wire-type": ld(16, b"\x11" + b"\x00" * 8),
    "bool-fixed": ld(16, b"\x25\x01\x00\x00\x00"),
    "nul-path": ld(16, ld(1, b"/a\x00b") + b"\x10\x01"),
    "long-stat": ld(16, ld(3, b"x" * 40) + b"\x10\x01"),
    "truncated": b"\x08\x01\x82\x01\x05\x10",
    "tag-zero": b"\x00\x01",
    "force-in-uncharge": ld(17, b"\x28\x01"),
    "stock-in-uncharge": ld(17, b"\x30\x01"),
    "region-varint": ld(16, b"\x38\x01"),
    "dup-region": ld(16, ld(7, b"a") + ld(7, b"b")),
    "long-region": ld(16, ld(7, b"r" * 64) + b"\x10\x01"),
    "nul-region": ld(16, ld(7, b"gpu\x000")),
    "unknown-field-8": ld(16, b"\x10\x01\x40\x01"),
}
out_dir = os.path.join(root, "tests/fuzz/corpus/wire-hot")
os.makedirs(out_dir, exist_ok=True)
for name, data in cases.items():
    with open(os.path.join(out_dir, name), "wb") as f:
        f.write(data)
