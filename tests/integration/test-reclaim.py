#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Reclaim before refusal, on the real daemon, through independent
clients on either transport (reclaimclient.py: python3-protobuf on the
socket, GDBus on the bus). Each holder is a client of its own that
charges its session, declares it reclaimable (SetReclaimable) and, on
every ReclaimRequest, gives back what it is asked by Uncharge, then
answers ReclaimDone. With "bus", the holders and the chargers are bus
peers of a private dbus-daemon (the system bus's policy and the
project's), and the tree is set up and read on the socket.

- the kernel's selftest, test_memcontrol.c test_memcg_min and
  test_memcg_low, with reclaimable holders: A (max 200M), A/B (min or low
  50M), B's children C, D, E, F with 75M, 25M, 0, 500M; C, D and E hold
  50M each; a client in A/G charges 148M. B ends near 50M, C near 29M
  and D near 21M within the selftest's values_close() margins, F at 0.
  G goes; A/G then charges 170M: with min it is refused and B stays near
  50M; with low it succeeds, B near 30M, low events in C and D only, no
  oom in B's children;
- holders that answer late, that say they cannot, and that die when
  asked: the charge is answered in every case, the late one counts late
  and is asked no more until it answers;
- no_wait: refused at once, nothing asked;
- a stat item declared alone: only what the session holds of it is asked;
- lowering max below usage, waiting and not; a proactive reclaim of a
  protected target.

Usage: test-reclaim.py MEMACCTD PROTO_DIR [socket|bus]
"""

import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from pbconn import Conn as PbConn  # noqa: E402 (after the path it is found on)
from rawproto import Tally, stop_daemon, wait_until  # noqa: E402
from reclaimclient import BusClient, SockClient  # noqa: E402

TALLY = Tally()
check = TALLY.check
pb = None  # memacct_pb2, compiled at start

M = 1024 * 1024


def Conn(path=None, fd=None):
    """A connection of this test's (pbconn.py), with the classes compiled at start."""
    return PbConn(pb, path, fd)

def ok(r):
    return r.status == pb.STATUS_OK


# The transport the holders and chargers use: a new client of it (main() sets it).
client = None


class Holder(threading.Thread):
    """A cache in @group holding @nbytes, reclaimable; @mode says how it
    answers: "good", "late" (after @delay s), "cannot", "die"."""

    def __init__(self, group, nbytes, mode="good", delay=0.0):
        super().__init__(daemon=True)
        self.c = client()
        self.group, self.held, self.mode, self.delay = group, nbytes, mode, delay
        self.asked = []
        self.giving = []  # when it began to give back, each time
        self.stop = False
        s = self.c.attach(group)
        check(s == "OK", f"holder attaches to {group}: {s}")
        s = self.c.charge(nbytes, no_wait=True)
        check(s == "OK", f"holder charges {nbytes} in {group}: {s}")
        s = self.c.set_reclaimable()
        check(s == "OK", f"holder declares itself reclaimable: {s}")

    def run(self):
        while not self.stop:
            req = self.c.next_request(0.2)
            if req is None:
                continue
            rid, nbytes = req
            self.asked.append(nbytes)
            if self.mode == "die":
                self.c.close()
                return
            if self.mode == "late":
                time.sleep(self.delay)
            give = 0 if self.mode == "cannot" else min(nbytes, self.held)
            self.giving.append(time.monotonic())
            if give > 0 and self.c.uncharge(give) == "OK":
                self.held -= give
            self.c.reclaim_done(rid, cannot=give == 0)

    def finish(self):
        self.stop = True
        self.join(5)
        if self.mode != "die":
            self.c.close()


def usage(c, path):
    r = c.call(get_group=pb.GetGroup(path=path, exact=True))
    if not ok(r):
        raise ValueError(f"GetGroup {path}: {r.message}")
    return r.group


def values_close(a, b, err):
    """The selftest's: |a - b| within err % of a + b."""
    return abs(a - b) <= (a + b) / 100 * err


def create(c, path, **limits):
    r = c.call(create_group=pb.CreateGroup(path=path, limits=pb.Limits(**limits) if limits else None))
    check(ok(r), f"create {path}: {r.message}")


def events(c, path, local=True):
    g = usage(c, path)
    return {x.name: x.value for x in (g.events_local if local else g.events)}


def selftest(c, low):
    attr = "low" if low else "min"
    top = f"/{attr}"
    create(c, top)
    create(c, f"{top}/A", max=200 * M)
    create(c, f"{top}/A/B", **{attr: 50 * M})
    for name, prot in (("C", 75), ("D", 25), ("E", 0), ("F", 500)):
        create(c, f"{top}/A/B/{name}", **{attr: prot * M})
    create(c, f"{top}/A/G")
    holders = [Holder(f"{top}/A/B/{n}", 50 * M) for n in "CDE"]
    for h in holders:
        h.start()

    g = client()
    check(g.attach(f"{top}/A/G") == "OK", "G attaches")
    s = g.charge(148 * M)
    check(s == "OK", f"{attr}: G's 148M fit once C, D and E gave back: {s}")
    b = usage(c, f"{top}/A/B").current
    cur = {n: usage(c, f"{top}/A/B/{n}").current for n in "CDEF"}
    print(f"{attr}, after 148M: B {b / M:.1f}M " + " ".join(f"{n} {v / M:.1f}M" for n, v in cur.items()))
    check(values_close(b, 50 * M, 3), f"{attr}: B near 50M: {b / M:.1f}M")
    check(values_close(cur["C"], 29 * M, 15), f"{attr}: C near 29M: {cur['C'] / M:.1f}M")
    check(values_close(cur["D"], 21 * M, 20), f"{attr}: D near 21M: {cur['D'] / M:.1f}M")
    check(cur["E"] < 2 * M, f"{attr}: E near 0: {cur['E'] / M:.1f}M")
    check(cur["F"] == 0, f"{attr}: F 0: {cur['F']}")
    check(all(h.asked for h in holders), f"{attr}: C, D and E were each asked: {[len(h.asked) for h in holders]}")
    g.close()  # G's process exits: its 148M go
    check(wait_until(lambda: usage(c, f"{top}/A/G").current == 0, 10), f"{attr}: G's charge went with it")

    g = client()
    check(g.attach(f"{top}/A/G") == "OK", "G attaches again")
    s = g.charge(170 * M)
    b = usage(c, f"{top}/A/B").current
    print(f"{attr}, after 170M: B {b / M:.1f}M, status {s}")
    if low:
        check(s == "OK", f"low: 170M fit, low giving way: {s}")
        check(values_close(b, 30 * M, 9), f"low: B near 30M: {b / M:.1f}M")
        ev = {n: events(c, f"{top}/A/B/{n}") for n in "CDEF"}
        check(ev["C"]["low"] > 0 and ev["D"]["low"] > 0, f"low: low events in C and D: {ev}")
        check(ev["E"]["low"] == 0 and ev["F"]["low"] == 0, f"low: none in E and F: {ev}")
        check(all(ev[n]["oom"] == 0 for n in "CDEF"), f"low: no oom below B: {ev}")
    else:
        check(s == "LIMIT_EXCEEDED", f"min: 170M refused: {s}")
        check(values_close(b, 50 * M, 3), f"min: B stays near 50M: {b / M:.1f}M")
        check(events(c, f"{top}/A", local=True)["oom"] >= 1, "min: the refusal is an oom of A")
    g.close()
    for h in holders:
        h.finish()


def test_misbehaving(c):
    create(c, "/bad", max=100 * M)
    create(c, "/bad/late")
    create(c, "/bad/cannot")
    create(c, "/bad/die")
    create(c, "/bad/new")
    # Late by the configured 200 ms deadline, in time by the default 1 s.
    late = Holder("/bad/late", 30 * M, mode="late", delay=0.9)
    cannot = Holder("/bad/cannot", 30 * M, mode="cannot")
    die = Holder("/bad/die", 30 * M, mode="die")
    for h in (late, cannot, die):
        h.start()
    n = client()
    check(n.attach("/bad/new") == "OK", "the charger attaches")

    s = n.charge(30 * M, no_wait=True)
    check(s == "LIMIT_EXCEEDED", f"no_wait: refused at once: {s}")
    time.sleep(0.3)
    check(not late.asked and not cannot.asked and not die.asked, "no_wait: nobody was asked")

    start = time.monotonic()
    s = n.charge(30 * M, timeout=60)
    took = time.monotonic() - start
    check(s == "OK", f"the dead holder's 30M made room: {s} after {took:.1f}s")
    check(die.asked and cannot.asked and late.asked, "each holder was asked")
    check(usage(c, "/bad/die").current == 0, "the dead holder's charges went with it")
    check(usage(c, "/bad/cannot").current == 30 * M, "the holder that cannot keeps its charges")

    r = c.call(list_sessions=pb.ListSessions(path="/bad/late"))
    if check(ok(r) and len(r.sessions.sessions) == 1, f"the late holder is listed: {r.message}"):
        s = r.sessions.sessions[0]
        check(s.reclaimable and s.reclaim_asked > 0, f"asked, as sessions shows: {s}")
    check(wait_until(lambda: usage(c, "/bad/late").current < 30 * M, 10), "the late holder gave back in the end")
    r = c.call(list_sessions=pb.ListSessions(path="/bad/late"))
    if ok(r) and r.sessions.sessions:
        s = r.sessions.sessions[0]
        check(s.reclaim_late >= 1, f"it counts late by [accounting] reclaim-timeout: {s.reclaim_late}")
    n.close()
    for h in (late, cannot, die):
        h.finish()


def test_stat_items(c):
    """Declared item by item: only what the session holds of those is asked for."""
    create(c, "/items", max=100 * M)
    create(c, "/items/cache")
    create(c, "/items/app")
    h = client()
    check(h.attach("/items/cache") == "OK", "the cache attaches")
    check(h.charge(40 * M, stat="file", no_wait=True) == "OK", "it holds 40M of file")
    check(h.charge(40 * M, stat="anon", no_wait=True) == "OK", "and 40M of anon")
    s = h.set_reclaimable(stat="file")
    check(s == "OK", f"file alone is reclaimable: {s}")
    s = h.set_reclaimable(stat="nosuch")
    check(s == "INVALID_ARGUMENT", f"an unknown item is refused: {s}")
    asked = []

    def serve():
        req = h.next_request(10)
        if req is None:
            return
        asked.append(req[1])
        h.uncharge(min(req[1], 40 * M), stat="file")
        h.reclaim_done(req[0])

    t = threading.Thread(target=serve)
    t.start()
    a = client()
    check(a.attach("/items/app") == "OK", "the app attaches")
    s = a.charge(70 * M, timeout=60)
    t.join(15)
    check(asked and asked[0] <= 40 * M, f"asked for no more than its file: {asked}")
    check(s == "LIMIT_EXCEEDED", f"anon is not given: 70M does not fit: {s}")
    check(usage(c, "/items/cache").current >= 40 * M, "its anon stays")
    a.close()
    h.close()


def test_lower_max(c):
    """A max below usage: waiting, it asks the holders for the difference
    (forced: taken first; not forced: tried after, Busy if still above);
    no_reclaim asks nobody."""
    create(c, "/shrink")
    create(c, "/shrink/cache")
    h = Holder("/shrink/cache", 60 * M)
    h.start()
    admin = client()
    s = admin.set_max("/shrink", 50 * M, no_reclaim=True)
    check(s == "BUSY", f"no_reclaim, not forced: a max below usage is refused at once: {s}")
    check(not h.asked, "no_reclaim: nobody was asked")
    s = admin.set_max("/shrink", 50 * M)
    check(s == "OK", f"waiting: the holder gave back 10M and the max is taken: {s}")
    check(h.asked and usage(c, "/shrink").current <= 50 * M,
          f"asked {h.asked}, usage now {usage(c, '/shrink').current / M:.1f}M")
    s = admin.set_max("/shrink", 20 * M, force=True, no_reclaim=True)
    check(s == "OK" and usage(c, "/shrink").max == 20 * M, f"forced, no_reclaim: taken, nobody asked: {s}")
    check(len(h.asked) == 1, f"no_reclaim asked nobody: {h.asked}")
    s = admin.set_max("/shrink", 10 * M, force=True)
    check(s == "OK" and len(h.asked) == 2, f"forced and waiting: taken, then asked: {s} {h.asked}")
    check(usage(c, "/shrink").current <= 10 * M, f"and the holder gave back to 10M: {usage(c, '/shrink').current}")
    admin.close()
    h.finish()


def test_proactive(c):
    """memory.reclaim of a protected target: its own min does not count."""
    create(c, "/pro", min=100 * M)
    create(c, "/pro/cache")
    h = Holder("/pro/cache", 40 * M)
    h.start()
    admin = client()
    s, released = admin.reclaim("/pro", 16 * M)
    check(s == "OK" and released >= 16 * M, f"reclaim 16M of a group with min 100M: {s}, {released} back")
    check(usage(c, "/pro/cache").current <= 24 * M, f"the holder holds 24M: {usage(c, '/pro/cache').current}")
    admin.close()
    h.finish()


def test_waiter_leaves(c):
    """A client whose request waits for a round goes away: a Reclaim by
    an admin with no session, and a charge; the daemon forgets them and
    serves the next one."""
    create(c, "/leave", max=40 * M)
    create(c, "/leave/cache")
    create(c, "/leave/app")
    h = Holder("/leave/cache", 40 * M, mode="late", delay=0.5)
    h.start()
    for what in ("reclaim", "charge"):
        w = client()
        if what == "charge":
            check(w.attach("/leave/app") == "OK", "the charger attaches")
        asked = len(h.asked)

        def wait(w=w, what=what):
            try:
                if what == "reclaim":
                    w.reclaim("/leave", 4 * M, timeout=10)
                else:
                    w.charge(8 * M, timeout=10)
            except Exception:  # its connection closed under it: expected
                pass

        t = threading.Thread(target=wait)
        t.start()
        check(wait_until(lambda: len(h.asked) > asked, 10), f"{what}: the holder is asked")
        w.close()
        t.join(15)
        time.sleep(0.7)  # the late answer comes after the waiter went
    admin = client()
    s, released = admin.reclaim("/leave", 4 * M)
    check(s == "OK", f"the next Reclaim is served: {s}, {released} back")
    admin.close()
    h.finish()


def test_order(c):
    """A client's requests are served in order while one waits for
    reclaim: a second call of the same bus peer is held behind the first
    (the socket's frames are read in order by construction)."""
    create(c, "/order", max=10 * M)
    create(c, "/order/cache")
    create(c, "/order/app")
    h = Holder("/order/cache", 10 * M, mode="late", delay=0.15)
    h.start()
    a = client()
    check(a.attach("/order/app") == "OK", "the app attaches")
    done = {}

    def first():
        done["first"] = (a.charge(5 * M), time.monotonic())

    t = threading.Thread(target=first)
    t.start()
    check(wait_until(lambda: h.asked, 10), "the holder is asked for the first charge")
    second = a.charge(1 * M, no_wait=True)
    done["second"] = (second, time.monotonic())
    t.join(30)
    check(done.get("first", ("",))[0] == "OK", f"the first charge waited and fit: {done}")
    check(h.giving and done["second"][1] >= h.giving[0],
          f"the second call was answered once the holder gave back, not before: {done}, {h.giving}")
    a.close()
    h.finish()


def start_bus(tmp):
    """A private dbus-daemon with the system bus's policy and the project's
    (tests/bus-conf.sh): its process and address; None when one cannot run."""
    here = os.path.dirname(os.path.abspath(__file__))
    root = os.path.dirname(os.path.dirname(here))
    if not shutil.which("dbus-daemon"):
        return None, "no dbus-daemon"
    try:
        import gi  # noqa: F401 (only whether GDBus is there)
        from gi.repository import Gio  # noqa: F401
    except ImportError:
        return None, "no python3-gi"
    sock = os.path.join(tmp, "bus.sock")
    conf = os.path.join(tmp, "bus.conf")
    with open(conf, "w") as f:
        f.write(subprocess.run(["sh", os.path.join(root, "tests", "bus-conf.sh"), "system", sock,
                                os.path.join(root, "units", "org.memacct1.conf")],
                               check=True, capture_output=True, text=True).stdout)
    bus = subprocess.Popen(["dbus-daemon", f"--config-file={conf}", "--nofork", "--print-address=1"],
                           stdout=subprocess.PIPE, text=True)
    address = bus.stdout.readline().strip()
    return bus, address


def main():
    global pb, client
    memacctd, proto_dir = sys.argv[1], sys.argv[2]
    transport = sys.argv[3] if len(sys.argv) > 3 else "socket"
    tmp = tempfile.mkdtemp(prefix="memacct-reclaim.")
    subprocess.run(["protoc", f"--proto_path={proto_dir}", f"--python_out={tmp}",
                    os.path.join(proto_dir, "memacct.proto")], check=True)
    sys.path.insert(0, tmp)
    import memacct_pb2
    pb = memacct_pb2

    sock_path = os.path.join(tmp, "memacctd.sock")
    bus, bus_opt = None, "none"
    if transport == "bus":
        bus, address = start_bus(tmp)
        if bus is None:
            print(f"SKIP: reclaim over the bus: {address}")
            shutil.rmtree(tmp, ignore_errors=True)
            return 77
        bus_opt = address
        client = lambda: BusClient(address)  # noqa: E731
    else:
        client = lambda: SockClient(pb, sock_path)  # noqa: E731
    conf = os.path.join(tmp, "memacctd.conf")
    with open(conf, "w") as f:
        # A deadline shorter than the default, so the late holder is late sooner.
        f.write("[accounting]\nrecursive-protection = yes\nreclaim-timeout = 200\n")
    log = open(os.path.join(tmp, "daemon.log"), "w+")
    daemon = subprocess.Popen([memacctd, "--socket", sock_path, "--state-dir", os.path.join(tmp, "state"),
                               "--config", conf, "--workers", "2", "--bus", bus_opt],
                              stdout=log, stderr=subprocess.STDOUT)
    try:
        if not wait_until(lambda: os.path.exists(sock_path) or daemon.poll() is not None, 30) \
                or daemon.poll() is not None:
            raise RuntimeError("memacctd did not start")
        c = Conn(sock_path)
        print(f"holders and chargers on the {transport}")
        selftest(c, low=False)
        selftest(c, low=True)
        test_misbehaving(c)
        test_stat_items(c)
        test_lower_max(c)
        test_proactive(c)
        test_waiter_leaves(c)
        if transport == "bus":
            test_order(c)
        c.close()
    except Exception as e:  # counted, and the daemon still stopped
        import traceback
        traceback.print_exc()
        check(False, f"stopped early: {type(e).__name__}: {e}")
    finally:
        stop_daemon(daemon, log, TALLY, timeout=30)
        if bus:
            bus.terminate()
            bus.wait()
        shutil.rmtree(tmp, ignore_errors=True)
    return TALLY.summary()


if __name__ == "__main__":
    sys.exit(main())
