#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Writes tests/fuzz/corpus/bus/: call sequences for fuzz-bus.c covering every
method of org.memacct1.Manager, the Group properties, the ObjectManager and
introspection, from each sender, with right and wrong arguments; and
tests/fuzz/bus.dict, the names the daemon compares strings with, each as
fuzz-bus.c reads a string (a length byte first), for libFuzzer's -dict.
The encoding is fuzz-bus.c's (its take_*() functions). Run from the
source root; the output is committed."""

import os
import struct

root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
out = os.path.join(root, "tests", "fuzz", "corpus", "bus")

# In the order of fuzz-bus.c's ops[]: a call's first byte indexes it.
OPS = ["CreateGroup", "RemoveGroup", "SetLimits", "Charge", "Uncharge", "Attach", "GetGroup",
       "ListGroups", "MoveProcess", "GetClient", "ResetPeak", "ImportCgroups", "PruneMirrors",
       "ListPlacementRules", "ListAllPlacementRules", "Get", "GetAll", "Set", "IntrospectGroup",
       "GetManagedObjects", "IntrospectPrefix", "IntrospectManager", "ListGroupsPage", "AddRegion",
       "RemoveRegion", "ListRegions", "ChargeRegion", "UnchargeRegion", "SetRegionLimits", "ResetRegionPeak",
       "Transfer", "EvictValuable"]
assert len(OPS) <= 32  # a call's bits 0-4 pick its method
GROUP_OPS = {"Get", "GetAll", "Set", "IntrospectGroup"}
SENDERS = {"root": 0, "user": 1, "stranger": 2, "none": 3}
ACCESS = {"all": 0, "owner": 1, "root": 2}
TOKENS = ["s", "o", "t", "u", "b", "i", "y", "a{st}", "a{ss}", "as", "(st)", "v", "a{sv}", "d"]
VARIANTS = ["s", "t", "u", "b", "as", "a{st}"]
MAX = (1 << 64) - 1


def u64(v):
    if v == MAX:
        return b"\xff"
    if v < 32:
        return bytes([v << 3])
    raw = v.to_bytes(8, "little").rstrip(b"\0")
    assert len(raw) <= 7
    return bytes([len(raw)]) + raw


def s(text):
    raw = text.encode() if isinstance(text, str) else text
    if len(raw) < 255:
        return bytes([len(raw)]) + raw
    return b"\xff" + struct.pack("<H", len(raw) - 255) + raw


def b(v):
    return bytes([1 if v else 0])


def limits(*pairs):
    return bytes([len(pairs)]) + b"".join(s(k) + u64(v) for k, v in pairs)


def call(op, sender="root", args=b"", group=None, wrong=None):
    """One call; @wrong: a list of TOKENS to send instead of the method's arguments."""
    head = OPS.index(op) | SENDERS[sender] << 5 | (0x80 if wrong is not None else 0)
    body = s(group) if op in GROUP_OPS else b""
    if wrong is not None:
        body += bytes([len(wrong)]) + bytes(TOKENS.index(t) for t in wrong)
    return bytes([head]) + body + args


def variant(kind, value):
    return bytes([VARIANTS.index(kind)]) + value


def write(name, access, *calls):
    with open(os.path.join(out, name), "wb") as f:
        f.write(bytes([ACCESS[access]]) + b"".join(calls))


def charge(path, nbytes, stat="", keep=False):
    return s(path) + u64(nbytes) + s(stat) + b(keep)


os.makedirs(out, exist_ok=True)
write("lifecycle", "all",
      call("CreateGroup", args=s("/a") + limits(("max", 1 << 20), ("high", 1 << 19)) + u64(1000)),
      call("CreateGroup", "user", s("/a/b") + limits(("low", 4096)) + u64(MAX)),
      call("Charge", "user", charge("/a/b", 8192, "anon", True)),
      call("Charge", "user", charge("/a/b", 4096, "file")),
      call("Get", args=s("org.memacct1.Group") + s("MemoryCurrent"), group="/a"),
      call("GetAll", args=s("org.memacct1.Group"), group="/a/b"),
      call("GetAll", args=s(""), group="/"),
      call("GetManagedObjects"),
      call("ListGroups", args=s("/") + b(True)),
      call("ListGroups", "user", s("/a") + b(False)),
      call("ListGroupsPage", args=s("/") + b(True) + s("") + u64(2)),
      call("ListGroupsPage", args=s("/") + b(True) + s("/a") + u64(0)),
      call("ListGroupsPage", "user", s("/a") + b(False) + s("/gone") + u64(1)),
      call("GetGroup", args=s("/a/b")),
      call("GetClient", "user", u64(0) + b(True)),
      call("ResetPeak", args=s("/a")),
      call("Uncharge", "user", charge("/a/b", 8192, "anon", True)),
      call("RemoveGroup", args=s("/a/b")),
      call("RemoveGroup", args=s("/a")))
write("limits", "all",
      call("CreateGroup", args=s("/l") + limits() + u64(MAX)),
      call("SetLimits", args=s("/l") + limits(("max", 4096), ("min", 1024)) + b(False)),
      call("SetLimits", args=s("/l") + limits(("max", 1), ("max", 2)) + b(False)),
      call("SetLimits", args=s("/l") + limits(("swap", 1)) + b(False)),
      call("Charge", "root", charge("/l", 8192, "anon", True)),
      call("Charge", "root", charge("/l", 2048, "anon", True)),
      call("SetLimits", args=s("/l") + limits(("max", 1024)) + b(False)),
      call("SetLimits", args=s("/l") + limits(("max", 1024)) + b(True)),
      call("SetLimits", args=s("/") + limits(("high", 1 << 30)) + b(False)),
      call("Charge", "root", charge("/l", 10, "bogus", True)),
      call("Uncharge", "root", charge("/l", 1 << 40, "anon", True)))
write("session", "all",
      call("CreateGroup", args=s("/s") + limits() + u64(1000)),
      call("Attach", "user", s("/s")),
      call("Charge", "user", charge("", 4096)),
      call("Attach", "user", s("/s")),
      call("MoveProcess", "root", u64(4243) + s("/")),
      call("MoveProcess", "user", u64(0) + s("/s")),
      call("MoveProcess", "user", u64(4242) + s("/s")),
      call("GetClient", "root", u64(4243) + b(False)),
      call("Attach", "user", s("auto")),
      call("Uncharge", "user", charge("", 4096)))
write("refused", "all",
      call("CreateGroup", "user", s("/u") + limits() + u64(MAX)),
      call("CreateGroup", "stranger", s("/u") + limits() + u64(MAX)),
      call("CreateGroup", "none", s("/u") + limits() + u64(MAX)),
      call("CreateGroup", "root", s("/u") + limits() + u64(0)),
      call("CreateGroup", "root", s("/u") + limits() + u64(MAX)),
      call("CreateGroup", "root", s("no-slash") + limits() + u64(MAX)),
      call("CreateGroup", "root", s("/x/" + "d/" * 10 + "e") + limits() + u64(MAX)),
      call("CreateGroup", "root", s("/" + "n" * 5000) + limits() + u64(MAX)),
      call("RemoveGroup", "user", s("/u")),
      call("ImportCgroups", "root", s("/") + s("")),
      call("ImportCgroups", "user", s("/") + s("")),
      call("GetGroup", "root", s("/missing")),
      call("Set", args=s("org.memacct1.Group") + s("MemoryMax") + variant("t", u64(1)), group="/u"))
write("restricted", "owner",
      call("CreateGroup", args=s("/mine") + limits() + u64(1000)),
      call("CreateGroup", args=s("/theirs") + limits() + u64(MAX)),
      call("Get", "user", s("org.memacct1.Group") + s("Path"), group="/theirs"),
      call("Get", "user", s("org.memacct1.Group") + s("Stats"), group="/mine"),
      call("GetAll", "stranger", s("org.memacct1.Group"), group="/mine"),
      call("GetManagedObjects", "user"),
      call("IntrospectPrefix", "user"),
      call("ListGroups", "user", s("/") + b(True)),
      call("GetClient", "user", u64(4242) + b(False)))
write("root-only", "root",
      call("CreateGroup", args=s("/r") + limits() + u64(1000)),
      call("Get", "user", s("org.memacct1.Group") + s("Events"), group="/r"),
      call("GetManagedObjects", "none"),
      call("GetGroup", "user", s("/r")))
write("wrong", "all",
      call("CreateGroup", args=s("/w"), wrong=["s"]),
      call("CreateGroup", args=s("/w") + bytes([1]) + s("max") + s("1") + u64(0), wrong=["s", "a{ss}", "u"]),
      call("Charge", args=s("/w") + u64(1), wrong=["s", "u"]),
      call("SetLimits", args=variant("s", s("x")), wrong=["v"]),
      call("ListGroups", args=s("/") + u64(3), wrong=["(st)"]),
      call("Get", args=b"", group="/", wrong=[]),
      call("GetManagedObjects", args=s("x"), wrong=["s"]))
write("introspect", "all",
      call("CreateGroup", args=s("/i") + limits() + u64(MAX)),
      call("IntrospectGroup", group="/i"),
      call("IntrospectGroup", group="/nonesuch"),
      call("IntrospectGroup", group=""),
      call("IntrospectPrefix"),
      call("IntrospectManager"),
      call("Get", args=s("org.memacct1.Group") + s("KernelMemoryCurrent"), group="/i"),
      call("Get", args=s("org.memacct1.Group") + s("NoSuchProperty"), group="/i"))

GPU = "gpu0"
VRAM = "drm/0000:03:00.0/vram0"


def region_charge(path, region, nbytes, keep=False):
    return s(path) + s(region) + u64(nbytes) + b(keep)


write("regions", "all",
      call("AddRegion", args=s(GPU) + u64(1 << 20)),
      call("AddRegion", args=s(GPU) + u64(1 << 20)),
      call("AddRegion", args=s(GPU) + u64(1)),
      call("AddRegion", args=s("memory") + u64(1)),
      call("AddRegion", args=s("bad name") + u64(1)),
      call("AddRegion", args=s("r" * 64) + u64(1)),
      call("AddRegion", "user", s("gpu1") + u64(MAX)),
      call("AddRegion", args=s(VRAM) + u64(MAX)),
      call("ListRegions"),
      call("ListRegions", "stranger"),
      call("CreateGroup", args=s("/g") + limits() + u64(1000)),
      call("CreateGroup", "user", s("/g/c") + limits() + u64(MAX)),
      call("SetRegionLimits", args=s("/g") + s(GPU) + limits(("max", 65536), ("low", 4096))),
      call("SetRegionLimits", "user", s("/g/c") + s(GPU) + limits(("min", 4096), ("high", MAX))),
      call("SetRegionLimits", args=s("/") + s(GPU) + limits(("max", 1))),
      call("SetRegionLimits", args=s("/g") + s("nope") + limits(("max", 1))),
      call("SetRegionLimits", args=s("/g") + s("memory") + limits(("high", 1 << 20))),
      call("SetRegionLimits", args=s("/g") + s(VRAM) + limits(("swap", 1))),
      call("ChargeRegion", "user", region_charge("/g/c", GPU, 8192, True)),
      call("ChargeRegion", "user", region_charge("/g/c", GPU, 4096)),
      call("ChargeRegion", "user", region_charge("", GPU, 4096)),
      call("ChargeRegion", "user", region_charge("/g/c", GPU, 1 << 30, True)),
      call("ChargeRegion", args=region_charge("/", GPU, 4096, True)),
      call("ChargeRegion", args=region_charge("/g", GPU, 1 << 21, True)),
      call("ChargeRegion", args=region_charge("/g", "memory", 4096, True)),
      call("ChargeRegion", args=region_charge("/g", VRAM, 4096)),
      call("Get", args=s("org.memacct1.Group") + s("DeviceMemoryCurrent"), group="/g"),
      call("Get", args=s("org.memacct1.Group") + s("DeviceMemoryEvents"), group="/g/c"),
      call("GetAll", args=s("org.memacct1.Group"), group="/g/c"),
      call("GetAll", args=s("org.memacct1.Group"), group="/"),
      call("ResetRegionPeak", args=s("/g") + s(GPU)),
      call("ResetRegionPeak", "user", s("/g/c") + s("nope")),
      call("Transfer", "user", s("/g/c") + s("/g") + s(GPU) + u64(4096)),
      call("Transfer", args=s("/g") + s("/") + s(GPU) + u64(1 << 40)),
      call("Transfer", args=s("/g") + s("/g/c") + s("") + u64(4096)),
      call("EvictValuable", args=s("/g") + s("/g/c") + s(GPU) + b(False)),
      call("EvictValuable", "user", s("") + s("/g/c") + s(GPU) + b(True)),
      call("EvictValuable", args=s("/g/c") + s("/g") + s("nope") + b(False)),
      call("RemoveRegion", args=s(GPU)),
      call("RemoveRegion", args=s("memory")),
      call("RemoveRegion", "user", s(VRAM)),
      call("UnchargeRegion", "user", region_charge("/g/c", GPU, 4096)),
      call("UnchargeRegion", "user", region_charge("/g/c", GPU, 1 << 40, True)),
      call("RemoveRegion", args=s(VRAM)),
      call("ChargeRegion", args=s("/g") + u64(1), wrong=["s", "t"]),
      call("SetRegionLimits", args=s("/g") + s(GPU) + bytes([1]) + s("max") + s("1"),
           wrong=["s", "s", "a{ss}"]))
write("regions-restricted", "root",
      call("AddRegion", args=s(GPU) + u64(MAX)),
      call("CreateGroup", args=s("/r") + limits() + u64(1000)),
      call("ListRegions", "user"),
      call("ChargeRegion", "user", region_charge("/r", GPU, 4096, True)),
      call("Get", "user", s("org.memacct1.Group") + s("DeviceMemoryMax"), group="/r"),
      call("EvictValuable", "user", s("/") + s("/r") + s(GPU) + b(False)),
      call("EvictValuable", "stranger", s("/") + s("/r") + s(GPU) + b(False)))

NAMES = ["max", "high", "low", "min", "anon", "file", "shmem", "kernel", "sock", "swap", "device",
         "other", "auto", "/", "/a", "/a/b", "org.memacct1.Group", "Path", "MemoryCurrent",
         "MemoryPeak", "MemoryMax", "MemoryHigh", "MemoryLow", "MemoryMin", "EffectiveMemoryMin",
         "EffectiveMemoryLow", "FailCount", "Events", "EventsLocal", "Stats", "KernelMemoryCurrent",
         "memory", GPU, VRAM, "DeviceMemoryCurrent", "DeviceMemoryPeak", "DeviceMemoryMax", "DeviceMemoryHigh",
         "DeviceMemoryLow", "DeviceMemoryMin", "EffectiveDeviceMemoryMin", "EffectiveDeviceMemoryLow",
         "DeviceMemoryFailCount", "DeviceMemoryEvents", "DeviceMemoryEventsLocal", "DeviceMemoryKept",
         "DeviceMemoryCapacity"]
with open(os.path.join(root, "tests", "fuzz", "bus.dict"), "w") as f:
    f.write("# Written by make-bus-corpus.py: a length byte, then the name.\n")
    for name in NAMES:
        f.write('"%s"\n' % "".join("\\x%02x" % c if c < 32 or c > 126 or c in b'"\\' else chr(c)
                                   for c in s(name)))
