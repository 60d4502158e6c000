#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Device memory regions on the real daemon, through an independent client:
Debian's python3-protobuf with classes protoc makes from memacct.proto, and
the length prefix by hand (rawproto.py). What each part checks:

- regions: AddRegion, ListRegions, RemoveRegion; the same add twice is OK,
  another capacity EXISTS; the name grammar, "memory" and the length bound
  refused; a region in use refused (BUSY); a non-root uid refused;
- charges: kept and session charges in a region and their uncharges; the
  group's entry in GetGroup and ListGroups, narrowed by region or not; a
  refusal at a group's max in the region names the group and the region,
  one at the capacity names the root; memory and a region do not limit
  each other;
- limits: SetLimits with a region, a max below usage taken (new charges
  refused, an oom event), events and events_local, ResetPeak in a region;
- events: a Subscribe names its region: a plain one gets memory's events
  only, one of a region that region's only, "*" both, in order;
- Transfer: success, a refusal at the destination's max and a source that
  keeps fewer change nothing on either side; under concurrent charges to
  the destination the totals add up exactly and never pass its max;
- EvictValuable: a table of cases worked out by hand from the kernel's
  dmem_cgroup_state_evict_valuable() and effective_protection(), checked
  against the same formulas computed here, and the effective protection
  GetGroup reports.

Usage: test-regions.py MEMACCTD PROTO_DIR
"""

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from pbconn import Conn as PbConn  # noqa: E402 (after the path it is found on)
from rawproto import Connector, Tally, wait_until  # noqa: E402

TALLY = Tally()
check = TALLY.check
pb = None  # memacct_pb2, compiled at start

K, M = 1024, 1024 * 1024
U64_MAX = (1 << 64) - 1
NOBODY = 65534
GPU = "gpu0"
GPU_CAPACITY = 64 * M


def Conn(path=None, fd=None):
    """A connection of this test's (pbconn.py), with the classes compiled at start."""
    return PbConn(pb, path, fd)

def ok(r):
    return r.status == pb.STATUS_OK


def get(c, path, region=None, reclaim_root=None):
    kw = {"path": path, "exact": True}
    if region is not None:
        kw["region"] = region
    if reclaim_root is not None:
        kw["reclaim_root"] = reclaim_root
    r = c.call(get_group=pb.GetGroup(**kw))
    if not ok(r):
        raise ValueError(f"GetGroup {path} {region}: {r.status} {r.message}")
    return r.group


def entry(c, path, region=GPU, reclaim_root=None):
    """@path's entry in @region, asked for by name: always exactly one."""
    g = get(c, path, region, reclaim_root)
    if len(g.regions) != 1 or g.regions[0].name != region:
        raise ValueError(f"GetGroup {path} region {region}: {list(g.regions)}")
    return g.regions[0]


def counters(cs):
    return {x.name: x.value for x in cs}


def charge(c, path, nbytes, region=GPU, keep=True, **kw):
    return c.call(charge=pb.Charge(path=path, bytes=nbytes, region=region, keep=keep, **kw))


def uncharge(c, path, nbytes, region=GPU, keep=True):
    return c.call(uncharge=pb.Uncharge(path=path, bytes=nbytes, region=region, keep=keep))


def create(c, path, **kw):
    r = c.call(create_group=pb.CreateGroup(path=path, **kw))
    check(ok(r), f"create {path}: {r.message}")


def set_limits(c, path, region=GPU, **limits):
    return c.call(set_limits=pb.SetLimits(path=path, region=region, limits=pb.Limits(**limits)))


def regions(c):
    r = c.call(list_regions=pb.ListRegions())
    check(ok(r) and r.WhichOneof("result") == "regions", f"ListRegions answers a RegionList: {r.message}")
    return {x.name: x for x in r.regions.regions}, [x.name for x in r.regions.regions]


# ---- registering regions ----

def test_registry(c, nobody):
    have, order = regions(c)
    check(order[:1] == ["memory"] and have["memory"].capacity == U64_MAX, f"memory is first, unbounded: {order}")

    r = c.call(add_region=pb.AddRegion(name=GPU, capacity=GPU_CAPACITY))
    check(ok(r), f"add {GPU}: {r.message}")
    r = c.call(add_region=pb.AddRegion(name=GPU, capacity=GPU_CAPACITY))
    check(ok(r), f"the same add again is OK: {r.message}")
    r = c.call(add_region=pb.AddRegion(name=GPU, capacity=GPU_CAPACITY // 2))
    check(r.status == pb.STATUS_EXISTS, f"another capacity is EXISTS: {r.status} {r.message}")
    # The kernel's names: a driver, a PCI address, a region of it.
    names = ["drm/0000:03:00.0/vram0", "nvidia/0000:3b:00.0/vidmem", "a.b_c:d@e+f-g", "x" * 63]
    for name in names:
        r = c.call(add_region=pb.AddRegion(name=name))
        check(ok(r), f"add {name!r}: {r.message}")
    have, order = regions(c)
    check(order[0] == "memory" and all(n in have for n in names + [GPU]), f"listed: {order}")
    check(have[GPU].capacity == GPU_CAPACITY, f"{GPU}'s capacity: {have[GPU].capacity}")
    check(have[names[0]].capacity == U64_MAX, "no capacity given: unlimited, UINT64_MAX")
    check(have[GPU].current == 0 and have[GPU].groups >= 1, f"nothing charged yet: {have[GPU]}")

    for bad in ["", "has space", "tab\tx", "memory", "x" * 64, "é"]:
        r = c.call(add_region=pb.AddRegion(name=bad))
        check(r.status == pb.STATUS_INVALID_ARGUMENT, f"add {bad!r} refused: {r.status} {r.message}")
    r = c.call(add_region=pb.AddRegion())
    check(r.status == pb.STATUS_INVALID_ARGUMENT, f"an add without a name refused: {r.status}")
    check(len(regions(c)[1]) == len(order), "no refused name was registered")

    r = c.call(remove_region=pb.RemoveRegion(name="memory"))
    check(r.status == pb.STATUS_INVALID_ARGUMENT, f"memory cannot be removed: {r.status} {r.message}")
    r = c.call(remove_region=pb.RemoveRegion(name="nosuch"))
    check(r.status == pb.STATUS_NOT_FOUND, f"an unknown region: NOT_FOUND: {r.status}")

    # Not root: may read, may not register or remove.
    r = nobody.call(add_region=pb.AddRegion(name="mine"))
    check(r.status == pb.STATUS_PERMISSION_DENIED, f"uid {NOBODY} may not add: {r.status} {r.message}")
    r = nobody.call(remove_region=pb.RemoveRegion(name=names[1]))
    check(r.status == pb.STATUS_PERMISSION_DENIED, f"uid {NOBODY} may not remove: {r.status} {r.message}")
    r = nobody.call(list_regions=pb.ListRegions())
    check(ok(r) and [x.name for x in r.regions.regions] == order, f"uid {NOBODY} lists them: {r.message}")

    # In use: refused until nothing is charged there.
    create(c, "/busy")
    check(ok(charge(c, "/busy", 4 * K, region=names[1])), "a kept charge in a region")
    r = c.call(remove_region=pb.RemoveRegion(name=names[1]))
    check(r.status == pb.STATUS_BUSY, f"a region in use is BUSY: {r.status} {r.message}")
    check(names[1] in regions(c)[0], "and stays")
    check(ok(uncharge(c, "/busy", 4 * K, region=names[1])), "released")
    for name in names[1:]:
        r = c.call(remove_region=pb.RemoveRegion(name=name))
        check(ok(r), f"remove {name}: {r.message}")
    have, _ = regions(c)
    check(not any(n in have for n in names[1:]), f"removed: {sorted(have)}")
    r = charge(c, "/busy", 1, region=names[1])
    check(r.status == pb.STATUS_NOT_FOUND, f"a charge in a removed region: NOT_FOUND: {r.status}")


# ---- charges ----

def test_charges(c, sock_path):
    create(c, "/ch")
    create(c, "/ch/a")
    create(c, "/ch/b")
    root0 = regions(c)[0][GPU].current

    check(ok(charge(c, "/ch/a", 1 * M)), "a kept charge in a region")
    a = entry(c, "/ch/a")
    check(a.current == 1 * M and a.kept == 1 * M and a.capacity == GPU_CAPACITY, f"its entry: {a}")
    check(entry(c, "/ch").current == 1 * M and entry(c, "/ch").kept == 0, "the parent's usage is hierarchical")
    check(regions(c)[0][GPU].current == root0 + 1 * M, "the region's usage in ListRegions")
    check(get(c, "/ch/a").current == 0, "memory's usage is untouched")
    g = get(c, "/ch/a")
    check([x.name for x in g.regions] == [GPU], f"without a region: every region with counters: {list(g.regions)}")
    check(len(get(c, "/ch/a", region="memory").regions) == 0, "region memory: no entry")
    check(len(get(c, "/ch/b").regions) == 0, "a group without counters lists none")
    b = entry(c, "/ch/b")
    check(b.current == 0 and b.max == U64_MAX and b.high == U64_MAX and b.capacity == GPU_CAPACITY,
          f"narrowed to a region it has no counters in: zeros and max: {b}")
    r = c.call(get_group=pb.GetGroup(path="/ch/a", region="nosuch"))
    check(r.status == pb.STATUS_NOT_FOUND, f"GetGroup of an unknown region: {r.status}")
    r = c.call(list_groups=pb.ListGroups(path="/ch", recursive=True, region=GPU))
    listed = {g.path: g for g in r.groups.groups} if ok(r) else {}
    check(set(listed) == {"/ch", "/ch/a", "/ch/b"} and all(len(g.regions) == 1 for g in listed.values())
          and listed["/ch/a"].regions[0].current == 1 * M and listed["/ch/b"].regions[0].current == 0,
          f"ListGroups narrowed: every group one entry: {r.message}")

    r = uncharge(c, "/ch/a", 2 * M)
    check(r.status == pb.STATUS_UNDERFLOW, f"an uncharge beyond what is kept: UNDERFLOW: {r.status}")
    check(entry(c, "/ch/a").current == 1 * M, "and nothing changed")
    r = charge(c, "/ch/a", 1, stat="file")
    check(r.status == pb.STATUS_INVALID_ARGUMENT, f"a region has no stat items: {r.status} {r.message}")
    r = charge(c, "/ch/a", 1, region="nosuch")
    check(r.status == pb.STATUS_NOT_FOUND, f"an unknown region: {r.status} {r.message}")
    check(ok(uncharge(c, "/ch/a", 1 * M)), "the kept charge released")
    check(entry(c, "/ch/a").current == 0 and entry(c, "/ch").current == 0, "all gone")

    # A session charge: the session's, released when it ends.
    s = Conn(sock_path)
    check(ok(s.call(attach=pb.Attach(path="/ch/a"))), "attach")
    r = s.call(charge=pb.Charge(bytes=512 * K, region=GPU))
    check(ok(r) and r.charge.margin == GPU_CAPACITY - regions(c)[0][GPU].current,
          f"a session charge in a region, its margin what the capacity still admits: {r.message} {r.charge}")
    a = entry(c, "/ch/a")
    check(a.current == 512 * K and a.kept == 0, f"the session's, not kept: {a}")
    r = s.call(uncharge=pb.Uncharge(bytes=1 * M, region=GPU))
    check(r.status == pb.STATUS_UNDERFLOW, f"more than the session holds: {r.status}")
    check(ok(s.call(uncharge=pb.Uncharge(bytes=256 * K, region=GPU))), "a session uncharge")
    check(entry(c, "/ch/a").current == 256 * K, "half left")
    s.close()
    check(wait_until(lambda: entry(c, "/ch/a").current == 0), "the rest released with the session")


# ---- refusals: a group's max, the capacity, memory apart ----

def test_refusals(c):
    create(c, "/lim")
    create(c, "/lim/c")
    r = set_limits(c, "/lim", max=1 * M)
    check(ok(r), f"a max in a region: {r.message}")
    check(entry(c, "/lim").max == 1 * M and get(c, "/lim").max == U64_MAX, "the region's, not memory's")
    root_events = counters(entry(c, "/").events)
    root_local = counters(entry(c, "/").events_local)

    check(ok(charge(c, "/lim/c", 768 * K)), "within the max")
    r = charge(c, "/lim/c", 512 * K)
    check(r.status == pb.STATUS_LIMIT_EXCEEDED and r.refused_path == "/lim" and f"region {GPU}" in r.message,
          f"past it: refused by /lim in {GPU}: {r.status} {r.refused_path!r} {r.message!r}")
    check(entry(c, "/lim/c").current == 768 * K, "nothing charged")
    lim = entry(c, "/lim")
    check(counters(lim.events_local).get("max") == 1 and counters(lim.events_local).get("oom") == 1,
          f"/lim counted max and oom, locally: {counters(lim.events_local)}")
    check(counters(lim.events).get("max") == 1, f"and hierarchically: {counters(lim.events)}")
    child = entry(c, "/lim/c")
    check(counters(child.events).get("max") == 0 and counters(child.events_local).get("max") == 0,
          "the child did not refuse: no event of its own")
    check(lim.failcnt >= 1, f"failcnt: {lim.failcnt}")
    check(counters(entry(c, "/").events).get("max") == root_events.get("max", 0) + 1,
          "the root's hierarchical count went up by one")
    check(counters(entry(c, "/").events_local) == root_local, "the root did not refuse: its own count is the same")

    # A region's limits do not limit memory, nor memory's a region.
    r = c.call(charge=pb.Charge(path="/lim/c", bytes=4 * M, keep=True))
    check(ok(r), f"memory is not held by {GPU}'s max: {r.message}")
    create(c, "/iso", limits=pb.Limits(max=1 * M))
    r = charge(c, "/iso", 4 * M)
    check(ok(r), f"nor {GPU} by memory's: {r.message}")
    r = c.call(charge=pb.Charge(path="/iso", bytes=2 * M, keep=True))
    check(r.status == pb.STATUS_LIMIT_EXCEEDED and r.refused_path == "/iso" and "region" not in r.message,
          f"memory's max still holds memory: {r.status} {r.message!r}")
    check(get(c, "/iso").current == 0 and entry(c, "/iso").current == 4 * M, "each counted apart")

    # The capacity bounds the root: the refusal says so and names it.
    check(ok(c.call(add_region=pb.AddRegion(name="small", capacity=1 * M))), "a small region")
    check(ok(charge(c, "/lim/c", 1 * M, region="small")), "its whole capacity")
    r = charge(c, "/iso", 1, region="small")
    check(r.status == pb.STATUS_LIMIT_EXCEEDED and "at its capacity" in r.message and r.refused_path == "/",
          f"past the capacity: {r.status} {r.refused_path!r} {r.message!r}")
    r = c.call(set_limits=pb.SetLimits(path="/", region="small", limits=pb.Limits(max=2 * M)))
    check(r.status == pb.STATUS_INVALID_ARGUMENT, f"the root's max in a region is its capacity: {r.status}")
    check(ok(uncharge(c, "/lim/c", 1 * M, region="small")), "released")
    check(ok(c.call(remove_region=pb.RemoveRegion(name="small"))), "and the region removed")


# ---- limits below usage, the other limits, peaks ----

def test_limits(c):
    create(c, "/below")
    check(ok(charge(c, "/below", 2 * M)), "2 MiB kept")
    oom0 = counters(entry(c, "/below").events_local).get("oom")
    r = set_limits(c, "/below", max=1 * M)
    check(ok(r), f"a max below usage is taken in a region, without force: {r.status} {r.message}")
    e = entry(c, "/below")
    check(e.max == 1 * M and e.current == 2 * M, f"usage stays above it: {e.max} {e.current}")
    check(counters(e.events_local).get("oom") == oom0 + 1, f"an oom event says so: {counters(e.events_local)}")
    r = charge(c, "/below", 1)
    check(r.status == pb.STATUS_LIMIT_EXCEEDED and r.refused_path == "/below", f"new charges refused: {r.status}")
    # Memory's max below usage still wants force.
    check(ok(c.call(charge=pb.Charge(path="/below", bytes=2 * M, keep=True))), "2 MiB of memory")
    r = c.call(set_limits=pb.SetLimits(path="/below", limits=pb.Limits(max=1 * M)))
    check(r.status == pb.STATUS_BUSY and get(c, "/below").max == U64_MAX,
          f"memory's max below usage is BUSY without force: {r.status}")
    r = set_limits(c, "/below", high=512 * K, low=256 * K, min=128 * K)
    e = entry(c, "/below")
    check(ok(r) and (e.max, e.high, e.low, e.min) == (1 * M, 512 * K, 256 * K, 128 * K),
          f"the other limits, the max kept: {r.message} {e}")
    r = set_limits(c, "/below", region="nosuch", max=1)
    check(r.status == pb.STATUS_NOT_FOUND, f"limits in an unknown region: {r.status}")
    r = set_limits(c, "/below", max=U64_MAX)
    check(ok(r) and entry(c, "/below").max == U64_MAX, "max back to none (UINT64_MAX)")

    # The peak of a region, reset apart from memory's.
    create(c, "/pk")
    check(ok(charge(c, "/pk", 3 * M)) and ok(uncharge(c, "/pk", 2 * M)), "up to 3 MiB and back to 1")
    check(ok(c.call(charge=pb.Charge(path="/pk", bytes=2 * M, keep=True)))
          and ok(c.call(uncharge=pb.Uncharge(path="/pk", bytes=2 * M, keep=True))), "memory up to 2 MiB and back")
    e = entry(c, "/pk")
    check(e.peak == 3 * M and e.current == 1 * M, f"the peak before: {e.peak}")
    r = c.call(reset_peak=pb.ResetPeak(path="/pk", region=GPU))
    check(ok(r), f"ResetPeak in the region: {r.message}")
    check(entry(c, "/pk").peak == 1 * M, f"the region's peak is its usage: {entry(c, '/pk').peak}")
    check(get(c, "/pk").peak == 2 * M, f"memory's is untouched: {get(c, '/pk').peak}")
    r = c.call(reset_peak=pb.ResetPeak(path="/pk", region="nosuch"))
    check(r.status == pb.STATUS_NOT_FOUND, f"ResetPeak in an unknown region: {r.status}")


# ---- subscriptions name their region ----

def test_events(c, sock_path):
    create(c, "/sub", limits=pb.Limits(max=64 * K))
    check(ok(set_limits(c, "/sub", max=64 * K)), "the same max in the region")
    subs = {}
    for name, region in (("plain", None), ("gpu", GPU), ("all", "*")):
        s = Conn(sock_path)
        kw = {"path": "/sub"} if region is None else {"path": "/sub", "region": region}
        r = s.call(subscribe=pb.Subscribe(**kw))
        check(ok(r), f"subscribe {name}: {r.message}")
        subs[name] = s
    other = Conn(sock_path)
    r = other.call(subscribe=pb.Subscribe(path="/sub", region="nosuch"))
    check(r.status == pb.STATUS_NOT_FOUND, f"a subscription to an unknown region: {r.status}")
    other.close()

    # Region, memory, region, memory, region: each a refusal at /sub's max.
    kinds = []
    for k in "RMRMR":
        if k == "R":
            r = charge(c, "/sub", 1 * M)
        else:
            r = c.call(charge=pb.Charge(path="/sub", bytes=1 * M, keep=True))
        check(r.status == pb.STATUS_LIMIT_EXCEEDED, f"refusal {k}: {r.status}")
        kinds.append(k)

    got = {name: s.drain_events() for name, s in subs.items()}
    for s in subs.values():
        s.close()

    def kind(e):
        return "R" if e.HasField("region") else "M"

    plain, gpu, every = got["plain"], got["gpu"], got["all"]
    check(plain and all(not e.HasField("region") for e in plain),
          f"a plain Subscribe gets memory's events only: {[(e.name, e.region) for e in plain]}")
    check(gpu and all(e.region == GPU for e in gpu),
          f"a Subscribe of {GPU} gets its events only: {[(e.name, e.region) for e in gpu]}")
    check(all(e.path == "/sub" and e.name in ("max", "oom") for e in plain + gpu), "max and oom of /sub")
    check(sum(e.name == "max" for e in gpu) == 3 and sum(e.name == "oom" for e in gpu) == 3,
          f"one max and one oom for each region refusal: {[e.name for e in gpu]}")
    # "*" gets both, in the order they happened, as the others got them.
    runs = "".join(kind(e) for i, e in enumerate(every) if i == 0 or kind(e) != kind(every[i - 1]))
    check(runs == "".join(kinds), f"region * gets both, in order: {runs}")
    check([(e.name, e.count) for e in every if kind(e) == "R"] == [(e.name, e.count) for e in gpu]
          and [(e.name, e.count) for e in every if kind(e) == "M"] == [(e.name, e.count) for e in plain],
          "the same events as the other two")
    lim = entry(c, "/sub")
    check(counters(lim.events_local).get("max") == 3, f"GetGroup's count agrees: {counters(lim.events_local)}")


# ---- Transfer ----

def test_transfer(c):
    create(c, "/tr")
    create(c, "/tr/src")
    create(c, "/tr/dst")
    check(ok(charge(c, "/tr/src", 4 * M)), "4 MiB kept at the source")
    check(ok(set_limits(c, "/tr/dst", max=3 * M)), "a 3 MiB max at the destination")

    def state():
        s, d = entry(c, "/tr/src"), entry(c, "/tr/dst")
        return (s.current, s.kept, d.current, d.kept)

    r = c.call(transfer=pb.Transfer(from_group="/tr/src", to_group="/tr/dst", bytes=2 * M, region=GPU))
    check(ok(r), f"a transfer: {r.message}")
    check(state() == (2 * M, 2 * M, 2 * M, 2 * M), f"moved, kept on both sides: {state()}")
    check(entry(c, "/tr").current == 4 * M, "the parent's usage is the same")

    before = state()
    r = c.call(transfer=pb.Transfer(from_group="/tr/src", to_group="/tr/dst", bytes=2 * M, region=GPU))
    check(r.status == pb.STATUS_LIMIT_EXCEEDED and r.refused_path == "/tr/dst",
          f"past the destination's max: refused by it: {r.status} {r.refused_path!r} {r.message!r}")
    check(state() == before, f"and nothing changed on either side: {state()}")
    r = c.call(transfer=pb.Transfer(from_group="/tr/dst", to_group="/tr/src", bytes=3 * M, region=GPU))
    check(r.status == pb.STATUS_UNDERFLOW, f"the source keeps fewer: UNDERFLOW: {r.status} {r.message!r}")
    check(state() == before, f"and nothing changed on either side: {state()}")

    r = c.call(transfer=pb.Transfer(from_group="/tr/src", to_group="/tr/dst", region=GPU))
    check(r.status == pb.STATUS_INVALID_ARGUMENT, f"bytes is required: {r.status}")
    r = c.call(transfer=pb.Transfer(from_group="/tr/src", to_group="/tr/nosuch", bytes=1, region=GPU))
    check(r.status == pb.STATUS_NOT_FOUND and state() == before, f"an unknown destination: {r.status}")
    r = c.call(transfer=pb.Transfer(from_group="/tr/src", to_group="/tr/dst", bytes=1, region=GPU, stat="file"))
    check(r.status == pb.STATUS_INVALID_ARGUMENT, f"a region has no stat items: {r.status}")
    # Memory, with its stat item.
    check(ok(c.call(charge=pb.Charge(path="/tr/src", bytes=1 * M, stat="file", keep=True))), "1 MiB file kept")
    r = c.call(transfer=pb.Transfer(from_group="/tr/src", to_group="/tr/dst", bytes=1 * M, stat="file"))
    check(ok(r), f"a memory transfer: {r.message}")
    src, dst = get(c, "/tr/src"), get(c, "/tr/dst")
    check(src.current == 0 and dst.current == 1 * M and dst.kept == 1 * M
          and counters(dst.stat).get("file") == 1 * M, f"memory moved with its item: {dst}")
    check(state() == before, "the region's untouched by memory's")


class Worker(threading.Thread):
    def __init__(self, sock_path, fn):
        super().__init__(daemon=True)
        self.conn = Conn(sock_path)
        self.fn = fn
        self.result = None
        self.error = None

    def run(self):
        try:
            self.result = self.fn(self.conn)
        except Exception as e:  # reported by the main thread
            self.error = repr(e)


def test_transfer_concurrent(c, sock_path):
    """Chargers race transfers at the destination's max: every success is
    counted, and afterwards the usage is exactly what the successes say,
    never above the max, at any read or in the peak."""
    region, chunk, dst_max, initial = "conc", 64 * K, 4 * M, 4 * M
    check(ok(c.call(add_region=pb.AddRegion(name=region))), "a region of its own")
    create(c, "/cc")
    create(c, "/cc/src")
    create(c, "/cc/dst")
    check(ok(charge(c, "/cc/src", initial, region=region)), "the source's kept charge")
    check(ok(set_limits(c, "/cc/dst", region=region, max=dst_max)), "the destination's max")
    stop = threading.Event()

    def charger(conn):
        net, refused = 0, 0
        for i in range(400):
            if i % 3 == 2 and net > 0:
                r = uncharge(conn, "/cc/dst", chunk, region=region)
                # Transfers may have taken what it kept: then nothing changed.
                net -= chunk if ok(r) else 0
                continue
            r = charge(conn, "/cc/dst", chunk, region=region)
            if ok(r):
                net += chunk
            elif r.status == pb.STATUS_LIMIT_EXCEEDED:
                refused += 1
            else:
                raise ValueError(f"charge: {r.status} {r.message}")
        return net, refused

    def mover(src, dst):
        def fn(conn):
            moved = 0
            for _ in range(300):
                r = conn.call(transfer=pb.Transfer(from_group=src, to_group=dst, bytes=chunk, region=region))
                if ok(r):
                    moved += chunk
                elif r.status not in (pb.STATUS_LIMIT_EXCEEDED, pb.STATUS_UNDERFLOW):
                    raise ValueError(f"transfer: {r.status} {r.message}")
            return moved
        return fn

    def watcher(conn):
        worst = 0
        while not stop.is_set():
            worst = max(worst, entry(conn, "/cc/dst", region=region).current)
        return worst

    chargers = [Worker(sock_path, charger) for _ in range(3)]
    movers = [Worker(sock_path, mover("/cc/src", "/cc/dst")), Worker(sock_path, mover("/cc/dst", "/cc/src"))]
    watch = Worker(sock_path, watcher)
    for w in movers + chargers + [watch]:
        w.start()
    for w in chargers + movers:
        w.join(120)
    stop.set()
    watch.join(30)
    errors = [w.error for w in chargers + movers + [watch] if w.error or w.is_alive()]
    check(not errors, f"every worker finished: {errors}")
    if errors:
        return
    charged = sum(w.result[0] for w in chargers)
    refused = sum(w.result[1] for w in chargers)
    into, back = movers[0].result, movers[1].result
    src, dst = entry(c, "/cc/src", region=region), entry(c, "/cc/dst", region=region)
    check(refused > 0 and into > 0 and back > 0, f"it raced: {refused} refusals, {into} in, {back} back")
    check(dst.current == charged + into - back and dst.kept == dst.current,
          f"the destination holds what succeeded: {dst.current} == {charged} + {into} - {back}")
    check(src.current == initial - into + back and src.kept == src.current,
          f"the source too: {src.current} == {initial} - {into} + {back}")
    check(dst.current <= dst_max and dst.peak <= dst_max and watch.result <= dst_max,
          f"never above the max: now {dst.current}, peak {dst.peak}, seen {watch.result}")
    check(entry(c, "/cc", region=region).current == src.current + dst.current, "the parent's adds up")
    for w in chargers + movers + [watch]:
        w.conn.close()


# ---- EvictValuable ----

def effective_protection(usage, parent_usage, setting, parent_effective, siblings_protected, recursive=True):
    """The kernel's mm/page_counter.c effective_protection(), line by line."""
    protected = min(usage, setting)
    if siblings_protected > parent_effective:
        return protected * parent_effective // siblings_protected
    ep = protected
    if not recursive:
        return ep
    if parent_effective > siblings_protected and parent_usage > siblings_protected and usage > protected:
        ep += (parent_effective - siblings_protected) * (usage - protected) // (parent_usage - siblings_protected)
    return ep


class Tree:
    """The groups of one region as the kernel's page counters see them."""

    def __init__(self, spec):
        self.spec = spec  # path: (min, low, kept)

    def parent(self, path):
        return path.rsplit("/", 1)[0] or "/"

    def children(self, path):
        return [p for p in self.spec if p != "/" and self.parent(p) == path]

    def usage(self, path):
        return self.spec[path][2] + sum(self.usage(ch) for ch in self.children(path))

    def has_counters(self, path):
        # Created by a charge or a limit there, with every ancestor's.
        return path in self.spec

    def children_usage(self, path, which):
        # parent->children_min_usage / children_low_usage:
        # propagate_protected_usage() adds min(usage, min) of each child.
        return sum(min(self.usage(ch), self.spec[ch][which]) for ch in self.children(path))

    def effective(self, limit, path):
        """page_counter_calculate_protection() from @limit (None: the root)
        down to @path, as dmem_cgroup_state_evict_valuable() runs it."""
        top = limit or "/"
        chain = []
        p = path
        while p != top:
            chain.append(p)
            p = self.parent(p)
        emin = elow = 0
        for p in reversed(chain):
            usage = self.usage(p)
            if usage == 0:
                emin = elow = 0  # the kernel leaves them stale; used 0 is "no" either way
            elif self.parent(p) == top:
                emin, elow = self.spec[p][0], self.spec[p][1]
            else:
                par = self.parent(p)
                emin = effective_protection(usage, self.usage(par), self.spec[p][0], emin,
                                            self.children_usage(par, 0))
                elow = effective_protection(usage, self.usage(par), self.spec[p][1], elow,
                                            self.children_usage(par, 1))
        return emin, elow

    def evict(self, limit, candidate, ignore_low):
        """dmem_cgroup_state_evict_valuable(), with memacctd's answer for
        groups with no counters in the region (nothing there to take)."""
        if limit == candidate:
            return "YES"
        if limit == "/":
            return "YES"
        if limit and not (candidate + "/").startswith(limit + "/"):
            return "NO"
        if not self.has_counters(candidate) or (limit and not self.has_counters(limit)):
            return "NO"
        emin, elow = self.effective(limit, candidate)
        used = self.usage(candidate)
        if used <= emin:
            return "NO"
        if ignore_low or used > elow:
            return "YES"
        return "HIT_LOW"


def test_evict(c):
    region = "ev"
    check(ok(c.call(add_region=pb.AddRegion(name=region))), "a region of its own")
    # path: (min, low, kept), M = 1 MiB; /ev/e has no counters in the region.
    tree = Tree({
        "/": (0, 0, 0),
        "/ev": (6 * M, 10 * M, 0),
        "/ev/a": (2 * M, 4 * M, 3 * M),
        "/ev/b": (0, 8 * M, 5 * M),
        "/ev/c": (0, 0, 4 * M),
        "/ev/d": (3 * M, 0, 1 * M),
        "/ov": (2 * M, 0, 0),
        "/ov/p": (2 * M, 0, 2 * M),
        "/ov/q": (2 * M, 0, 2 * M),
    })
    for path in ["/ev", "/ev/a", "/ev/b", "/ev/c", "/ev/d", "/ev/e", "/ov", "/ov/p", "/ov/q"]:
        create(c, path)
    for path, (mn, lo, kept) in tree.spec.items():
        if path == "/":
            continue
        check(ok(set_limits(c, path, region=region, min=mn, low=lo)), f"min and low of {path}")
        if kept:
            check(ok(charge(c, path, kept, region=region)), f"{kept} kept on {path}")

    # Worked by hand from effective_protection(), M = 1048576 bytes:
    #   /ev: usage 13M; children_min_usage = min(3M,2M) + min(1M,3M) = 3M;
    #        children_low_usage = min(3M,4M) + min(5M,8M) = 8M.
    #   /ov: usage 4M; children_min_usage = 2M + 2M = 4M; children_low_usage = 0.
    # Limit absent (the root): /ev and /ov are on the first level, so their
    # effective values are their settings: /ev emin 6M elow 10M; /ov emin 2M elow 0.
    #   /ev/a emin = 2M + (6M-3M)*(3M-2M)/(13M-3M) = 2097152 + 314572 = 2411724 < used 3M;
    #         elow = min(3M,4M) = 3M, nothing unclaimed (usage == protected): used 3M <= 3M: HIT_LOW.
    #   /ev/b emin = 0 + 3M*5M/10M = 1572864 < 5M; elow = 5M (usage == protected): HIT_LOW.
    #   /ev/c emin = 3M*4M/10M = 1258291 < 4M; elow = (10M-8M)*4M/(13M-8M) = 1677721 < 4M: YES.
    #   /ev/d emin = min(1M,3M) = 1M, usage == protected: used 1M <= 1M: NO, even ignoring low.
    #   /ov/p siblings claim 4M > /ov's 2M: emin = 2M*2M/4M = 1M < used 2M; elow 0: YES.
    # Limit /ev: its children are on the first level below it, emin = min, elow = low:
    #   /ev/a 2M < 3M <= 4M: HIT_LOW; /ev/b 0 < 5M <= 8M: HIT_LOW; /ev/c 0, 0: YES;
    #   /ev/d used 1M <= min 3M: NO.
    # Limit /ov: /ov/p emin = min 2M >= used 2M: NO.
    cases = [
        # limit, candidate, ignore_low, answer
        ("/ev/a", "/ev/a", False, "YES"),    # limit == candidate: always
        ("/", "/ev/d", False, "YES"),        # limit is the root: always
        ("/ev/a", "/ev/b", False, "NO"),     # outside the limit's subtree
        ("/ov", "/ev/c", False, "NO"),       # outside too
        ("/ev", "/ev/d", False, "NO"),       # usage <= effective min
        ("/ev", "/ev/d", True, "NO"),        # min protects past ignore_low
        ("", "/ev/d", False, "NO"),          # the same from the root, min shared out
        ("/ov", "/ov/p", False, "NO"),       # min, as set, below /ov
        ("/ev", "/ev/a", False, "HIT_LOW"),  # usage <= effective low
        ("/ev", "/ev/a", True, "YES"),       # ... ignoring low
        ("/ev", "/ev/b", False, "HIT_LOW"),
        ("", "/ev/a", False, "HIT_LOW"),     # usage == recursive elow
        ("", "/ev/a", True, "YES"),
        ("", "/ev/b", False, "HIT_LOW"),
        ("/ev", "/ev/c", False, "YES"),      # usage above effective low
        ("", "/ev/c", False, "YES"),         # above the low floated to it
        ("", "/ov/p", False, "YES"),         # overcommitted min shared: 1M < 2M
        ("/ev", "/ev/e", False, "NO"),       # no counters in the region
        ("", "/ev/e", True, "NO"),
    ]
    names = {pb.EVICT_ANSWER_YES: "YES", pb.EVICT_ANSWER_NO: "NO", pb.EVICT_ANSWER_HIT_LOW: "HIT_LOW"}
    for limit, cand, ignore_low, want in cases:
        model = tree.evict(limit or None, cand, ignore_low)
        check(model == want, f"the formulas agree with the hand: {limit!r} {cand} {ignore_low}: {model} {want}")
        kw = {"candidate": cand, "region": region, "ignore_low": ignore_low}
        if limit:
            kw["limit"] = limit
        r = c.call(evict_valuable=pb.EvictValuable(**kw))
        got = names.get(r.evict.answer) if ok(r) and r.WhichOneof("result") == "evict" else None
        check(got == want, f"EvictValuable limit={limit!r} candidate={cand} ignore_low={ignore_low}: "
              f"{got} ({r.status} {r.message}), want {want}")
    check({w for *_, w in cases} == {"YES", "NO", "HIT_LOW"}, "the table has every answer")

    # GetGroup's effective protection is the same computation.
    for root in (None, "/ev", "/ov"):
        for path in ("/ev/a", "/ev/b", "/ev/c", "/ev/d", "/ov/p"):
            if root and not path.startswith(root + "/"):
                continue
            e = entry(c, path, region=region, reclaim_root=root)
            want = tree.effective(root, path)
            check((e.effective_min, e.effective_low) == want,
                  f"{path} relative to {root or '/'}: {(e.effective_min, e.effective_low)}, want {want}")

    r = c.call(evict_valuable=pb.EvictValuable(candidate="/ev/a", region="nosuch"))
    check(r.status == pb.STATUS_NOT_FOUND, f"an unknown region: {r.status}")
    r = c.call(evict_valuable=pb.EvictValuable(candidate="/ev/nosuch", region=region))
    check(r.status == pb.STATUS_NOT_FOUND, f"an unknown group: {r.status}")
    r = c.call(evict_valuable=pb.EvictValuable(candidate="/ev/c"))
    check(ok(r) and r.evict.answer == pb.EVICT_ANSWER_NO, "memory: nothing used there, nothing to take")


# ---- a delegate, not root ----

def test_nobody(c, nobody):
    create(c, "/nr", owner=NOBODY)
    r = nobody.call(create_group=pb.CreateGroup(path="/nr/x"))
    check(ok(r), f"uid {NOBODY} creates in its subtree: {r.message}")
    r = charge(nobody, "/nr", 2 * M)
    check(ok(r), f"uid {NOBODY} keeps a region charge in its group: {r.message}")
    r = charge(nobody, "/ch", 1)
    check(r.status == pb.STATUS_PERMISSION_DENIED, f"but not outside it: {r.status}")
    r = nobody.call(set_limits=pb.SetLimits(path="/nr/x", region=GPU, limits=pb.Limits(max=1 * M)))
    check(ok(r), f"limits on its own child: {r.message}")
    r = nobody.call(transfer=pb.Transfer(from_group="/nr", to_group="/nr/x", bytes=2 * M, region=GPU))
    check(r.status == pb.STATUS_LIMIT_EXCEEDED and r.refused_path == "/nr/x", f"its child's max: {r.status}")
    r = nobody.call(transfer=pb.Transfer(from_group="/nr", to_group="/nr/x", bytes=1 * M, region=GPU))
    check(ok(r), f"a transfer within its subtree: {r.message}")
    r = nobody.call(transfer=pb.Transfer(from_group="/nr", to_group="/ch", bytes=1 * M, region=GPU))
    check(r.status == pb.STATUS_PERMISSION_DENIED and entry(c, "/nr").kept == 1 * M,
          f"not out of it: {r.status}")
    r = nobody.call(evict_valuable=pb.EvictValuable(limit="/nr", candidate="/nr/x", region=GPU))
    check(ok(r) and r.evict.answer == pb.EVICT_ANSWER_YES, f"it may ask about what it reads: {r.message}")
    check(ok(uncharge(nobody, "/nr/x", 1 * M)) and ok(uncharge(nobody, "/nr", 1 * M)), "its charges released")


def main():
    global pb
    memacctd, proto_dir = sys.argv[1], sys.argv[2]
    if os.geteuid() != 0:
        print("SKIP: not root: the non-root part needs setuid")
        return 77
    tmp = tempfile.mkdtemp(prefix="memacct-regions.")
    os.chmod(tmp, 0o755)  # uid nobody reaches the socket through it
    subprocess.run(["protoc", f"--proto_path={proto_dir}", f"--python_out={tmp}",
                    os.path.join(proto_dir, "memacct.proto")], check=True)
    sys.path.insert(0, tmp)
    import memacct_pb2
    pb = memacct_pb2

    sock_path = os.path.join(tmp, "memacctd.sock")
    log = open(os.path.join(tmp, "daemon.log"), "w+")
    daemon = subprocess.Popen([memacctd, "--socket", sock_path, "--state-dir", os.path.join(tmp, "state"),
                               "--workers", "2", "--bus", "none"], stdout=log, stderr=subprocess.STDOUT)
    connector = None
    try:
        if not wait_until(lambda: os.path.exists(sock_path) or daemon.poll() is not None, 30) \
                or daemon.poll() is not None:
            raise RuntimeError("memacctd did not start")
        # Forked before any thread: a connection of uid nobody, handed back.
        connector = Connector(sock_path, uid=NOBODY)
        nobody = Conn(fd=connector.connect().sock.detach())
        c = Conn(sock_path)
        test_registry(c, nobody)
        test_charges(c, sock_path)
        test_refusals(c)
        test_limits(c)
        test_events(c, sock_path)
        test_transfer(c)
        test_transfer_concurrent(c, sock_path)
        test_evict(c)
        test_nobody(c, nobody)
    except Exception as e:  # counted, and the daemon still stopped
        import traceback
        traceback.print_exc()
        check(False, f"stopped early: {type(e).__name__}: {e}")
    finally:
        if connector:
            connector.close()
        daemon.send_signal(signal.SIGTERM)
        try:
            rc = daemon.wait(timeout=30)
        except subprocess.TimeoutExpired:
            daemon.kill()
            rc = daemon.wait()
        check(rc == 0, f"memacctd exits 0 on SIGTERM (status {rc})")
        if TALLY.failed:
            log.seek(0)
            sys.stderr.write("--- daemon log ---\n" + log.read()[-20000:])
        log.close()
        shutil.rmtree(tmp, ignore_errors=True)
    return TALLY.summary()


if __name__ == "__main__":
    sys.exit(main())
