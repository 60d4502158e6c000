#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Writes tests/fuzz/corpus/request/: frame streams (first byte: uid switch)
covering every operation, made with Debian's python3-protobuf from
proto/memacct/v1/memacct.proto. Run from the source root; the output is committed."""

import os

from corpus_proto import pb, root, varint


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
    "list-pages": stream(0,
                         R(create_group=pb.CreateGroup(path="/p")),
                         R(create_group=pb.CreateGroup(path="/p/q")),
                         R(list_groups=pb.ListGroups(path="/", recursive=True, limit=1)),
                         R(list_groups=pb.ListGroups(path="/", recursive=True, after="/p", limit=1)),
                         R(list_groups=pb.ListGroups(path="/p", after="/p/q")),
                         R(list_groups=pb.ListGroups(path="/p", after="/elsewhere", limit=2)),
                         R(list_groups=pb.ListGroups(path="/", recursive=True, after="/gone"))),
    "regions": stream(0,
                      R(add_region=pb.AddRegion(name="drm/0000:03:00.0/vram0", capacity=1 << 20)),
                      R(add_region=pb.AddRegion(name="gpu0")),
                      R(add_region=pb.AddRegion(name="gpu0", capacity=4096)),
                      R(list_regions=pb.ListRegions()),
                      R(create_group=pb.CreateGroup(path="/g")),
                      R(create_group=pb.CreateGroup(path="/g/h")),
                      R(set_limits=pb.SetLimits(path="/g", region="gpu0",
                                                limits=pb.Limits(max=8192, high=4096, low=1024, min=512))),
                      R(charge=pb.Charge(path="/g/h", bytes=4096, region="gpu0", keep=True)),
                      R(charge=pb.Charge(path="/g/h", bytes=1 << 20, region="gpu0", keep=True)),
                      R(charge=pb.Charge(path="/g/h", bytes=1 << 21, region="drm/0000:03:00.0/vram0",
                                         keep=True)),
                      R(charge=pb.Charge(path="/g/h", bytes=100, region="gpu0")),
                      R(charge=pb.Charge(bytes=1, region="gpu0", stock=True)),
                      R(charge=pb.Charge(bytes=1, region="gpu0", stat="file")),
                      R(get_group=pb.GetGroup(path="/g/h", region="gpu0", reclaim_root="/g")),
                      R(get_group=pb.GetGroup(path="/g", region="drm/0000:03:00.0/vram0")),
                      R(get_group=pb.GetGroup(path="/g")),
                      R(list_groups=pb.ListGroups(path="/", recursive=True, region="gpu0")),
                      R(list_groups=pb.ListGroups(path="/", region="memory", limit=1)),
                      R(subscribe=pb.Subscribe(path="/g", region="gpu0")),
                      R(subscribe=pb.Subscribe(path="/", region="*")),
                      R(reset_peak=pb.ResetPeak(path="/g", region="gpu0")),
                      R(transfer=pb.Transfer(from_group="/g/h", to_group="/g", bytes=2048, region="gpu0")),
                      R(transfer=pb.Transfer(from_group="/g/h", to_group="/g", bytes=1 << 30, region="gpu0")),
                      R(transfer=pb.Transfer(from_group="/g", to_group="/", bytes=1, stat="anon")),
                      R(transfer=pb.Transfer(from_group="/g", to_group="/g/h")),
                      R(evict_valuable=pb.EvictValuable(limit="/g", candidate="/g/h", region="gpu0")),
                      R(evict_valuable=pb.EvictValuable(candidate="/g/h", region="gpu0", ignore_low=True)),
                      R(evict_valuable=pb.EvictValuable(limit="/g/h", candidate="/g", region="gpu0")),
                      R(uncharge=pb.Uncharge(path="/g/h", bytes=2048, region="gpu0", keep=True)),
                      R(uncharge=pb.Uncharge(bytes=100, region="gpu0")),
                      R(remove_region=pb.RemoveRegion(name="gpu0")),
                      R(remove_region=pb.RemoveRegion(name="memory")),
                      R(remove_region=pb.RemoveRegion(name="drm/0000:03:00.0/vram0"))),
    "regions-refused": stream(1,
                              R(add_region=pb.AddRegion(name="gpu1")),
                              R(remove_region=pb.RemoveRegion(name="gpu1")),
                              R(list_regions=pb.ListRegions()),
                              R(charge=pb.Charge(path="/", bytes=1, region="nope", keep=True)),
                              R(get_group=pb.GetGroup(path="/", region="nope")),
                              R(evict_valuable=pb.EvictValuable(candidate="/", region="gpu1"))),
    "region-names": stream(0,
                           R(add_region=pb.AddRegion(name="")),
                           R(add_region=pb.AddRegion(name="memory")),
                           R(add_region=pb.AddRegion(name="has space")),
                           R(add_region=pb.AddRegion(name="r" * 64)),
                           R(add_region=pb.AddRegion()),
                           R(remove_region=pb.RemoveRegion()),
                           R(charge=pb.Charge(path="/", bytes=1, region="r" * 64, keep=True))),
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
