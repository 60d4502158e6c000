#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Reclaim before refusal, on the real daemon, through an independent
client (python3-protobuf, classes protoc makes from memacct.proto). Each
holder is a connection of its own that charges its session, declares it
reclaimable (SetReclaimable) and, on every ReclaimRequest, gives back
what it is asked by Uncharge, then answers ReclaimDone.

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
- a stat item declared alone: only what the session holds of it is asked.

Usage: test-reclaim.py MEMACCTD PROTO_DIR
"""

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from pbconn import Conn as PbConn  # noqa: E402 (after the path it is found on)
from rawproto import Tally, wait_until  # noqa: E402

TALLY = Tally()
check = TALLY.check
pb = None  # memacct_pb2, compiled at start

M = 1024 * 1024


def Conn(path=None, fd=None):
    """A connection of this test's (pbconn.py), with the classes compiled at start."""
    return PbConn(pb, path, fd)

def ok(r):
    return r.status == pb.STATUS_OK


class Holder(threading.Thread):
    """A cache in @group holding @nbytes, reclaimable; @mode says how it
    answers: "good", "late" (after @delay s), "cannot", "die"."""

    def __init__(self, sock_path, group, nbytes, mode="good", delay=0.0):
        super().__init__(daemon=True)
        self.c = Conn(sock_path)
        self.group, self.held, self.mode, self.delay = group, nbytes, mode, delay
        self.asked = []
        self.stop = False
        r = self.c.call(attach=pb.Attach(path=group))
        check(ok(r), f"holder attaches to {group}: {r.message}")
        r = self.c.call(charge=pb.Charge(bytes=nbytes, no_wait=True))
        check(ok(r), f"holder charges {nbytes} in {group}: {r.message}")
        r = self.c.call(set_reclaimable=pb.SetReclaimable())
        check(ok(r), f"holder declares itself reclaimable: {r.message}")

    def run(self):
        while not self.stop:
            f = self.c.read(timeout=0.2, unsolicited=True)
            if f is None or f.WhichOneof("result") != "reclaim":
                continue
            req = f.reclaim
            self.asked.append(req.bytes)
            if self.mode == "die":
                self.c.close()
                return
            if self.mode == "late":
                time.sleep(self.delay)
            give = 0 if self.mode == "cannot" else min(req.bytes, self.held)
            if give > 0:
                r = self.c.call(uncharge=pb.Uncharge(bytes=give))
                if ok(r):
                    self.held -= give
            self.c.call(reclaim_done=pb.ReclaimDone(id=req.id, cannot=give == 0))

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


def selftest(c, sock_path, low):
    attr = "low" if low else "min"
    top = f"/{attr}"
    create(c, top)
    create(c, f"{top}/A", max=200 * M)
    create(c, f"{top}/A/B", **{attr: 50 * M})
    for name, prot in (("C", 75), ("D", 25), ("E", 0), ("F", 500)):
        create(c, f"{top}/A/B/{name}", **{attr: prot * M})
    create(c, f"{top}/A/G")
    holders = [Holder(sock_path, f"{top}/A/B/{n}", 50 * M) for n in "CDE"]
    for h in holders:
        h.start()

    g = Conn(sock_path)
    check(ok(g.call(attach=pb.Attach(path=f"{top}/A/G"))), "G attaches")
    r = g.call(charge=pb.Charge(bytes=148 * M))
    check(ok(r), f"{attr}: G's 148M fit once C, D and E gave back: {r.status} {r.message}")
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

    g = Conn(sock_path)
    check(ok(g.call(attach=pb.Attach(path=f"{top}/A/G"))), "G attaches again")
    r = g.call(charge=pb.Charge(bytes=170 * M))
    b = usage(c, f"{top}/A/B").current
    print(f"{attr}, after 170M: B {b / M:.1f}M, status {r.status}")
    if low:
        check(ok(r), f"low: 170M fit, low giving way: {r.status} {r.message}")
        check(values_close(b, 30 * M, 9), f"low: B near 30M: {b / M:.1f}M")
        ev = {n: events(c, f"{top}/A/B/{n}") for n in "CDEF"}
        check(ev["C"]["low"] > 0 and ev["D"]["low"] > 0, f"low: low events in C and D: {ev}")
        check(ev["E"]["low"] == 0 and ev["F"]["low"] == 0, f"low: none in E and F: {ev}")
        check(all(ev[n]["oom"] == 0 for n in "CDEF"), f"low: no oom below B: {ev}")
    else:
        check(r.status == pb.STATUS_LIMIT_EXCEEDED, f"min: 170M refused: {r.status} {r.message}")
        check(values_close(b, 50 * M, 3), f"min: B stays near 50M: {b / M:.1f}M")
        check(events(c, f"{top}/A", local=True)["oom"] >= 1, "min: the refusal is an oom of A")
    g.close()
    for h in holders:
        h.finish()


def test_misbehaving(c, sock_path):
    create(c, "/bad", max=100 * M)
    late = Holder(sock_path, "/bad/late", 0) if False else None
    create(c, "/bad/late")
    create(c, "/bad/cannot")
    create(c, "/bad/die")
    create(c, "/bad/new")
    # Late by the configured 200 ms deadline, in time by the default 1 s.
    late = Holder(sock_path, "/bad/late", 30 * M, mode="late", delay=0.9)
    cannot = Holder(sock_path, "/bad/cannot", 30 * M, mode="cannot")
    die = Holder(sock_path, "/bad/die", 30 * M, mode="die")
    for h in (late, cannot, die):
        h.start()
    n = Conn(sock_path)
    check(ok(n.call(attach=pb.Attach(path="/bad/new"))), "the charger attaches")

    r = n.call(charge=pb.Charge(bytes=30 * M, no_wait=True))
    check(r.status == pb.STATUS_LIMIT_EXCEEDED, f"no_wait: refused at once: {r.status}")
    time.sleep(0.3)
    check(not late.asked and not cannot.asked and not die.asked, "no_wait: nobody was asked")

    start = time.monotonic()
    r = n.call(charge=pb.Charge(bytes=30 * M), timeout=60)
    took = time.monotonic() - start
    check(ok(r), f"the dead holder's 30M made room: {r.status} {r.message} after {took:.1f}s")
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


def test_stat_items(c, sock_path):
    """Declared item by item: only what the session holds of those is asked for."""
    create(c, "/items", max=100 * M)
    create(c, "/items/cache")
    create(c, "/items/app")
    h = Conn(sock_path)
    check(ok(h.call(attach=pb.Attach(path="/items/cache"))), "the cache attaches")
    check(ok(h.call(charge=pb.Charge(bytes=40 * M, stat="file", no_wait=True))), "it holds 40M of file")
    check(ok(h.call(charge=pb.Charge(bytes=40 * M, stat="anon", no_wait=True))), "and 40M of anon")
    r = h.call(set_reclaimable=pb.SetReclaimable(stat="file"))
    check(ok(r), f"file alone is reclaimable: {r.message}")
    r = h.call(set_reclaimable=pb.SetReclaimable(stat="nosuch"))
    check(r.status == pb.STATUS_INVALID_ARGUMENT, f"an unknown item is refused: {r.status}")
    asked = []

    def serve():
        f = h.read(timeout=10, unsolicited=True)
        while f is not None and f.WhichOneof("result") != "reclaim":
            f = h.read(timeout=10, unsolicited=True)
        if f is None:
            return
        asked.append(f.reclaim.bytes)
        give = min(f.reclaim.bytes, 40 * M)
        h.call(uncharge=pb.Uncharge(bytes=give, stat="file"))
        h.call(reclaim_done=pb.ReclaimDone(id=f.reclaim.id))

    t = threading.Thread(target=serve)
    t.start()
    a = Conn(sock_path)
    check(ok(a.call(attach=pb.Attach(path="/items/app"))), "the app attaches")
    r = a.call(charge=pb.Charge(bytes=70 * M), timeout=60)
    t.join(15)
    check(asked and asked[0] <= 40 * M, f"asked for no more than its file: {asked}")
    check(r.status == pb.STATUS_LIMIT_EXCEEDED, f"anon is not given: 70M does not fit: {r.status}")
    check(usage(c, "/items/cache").current >= 40 * M, "its anon stays")
    a.close()
    h.close()


def main():
    global pb
    memacctd, proto_dir = sys.argv[1], sys.argv[2]
    tmp = tempfile.mkdtemp(prefix="memacct-reclaim.")
    subprocess.run(["protoc", f"--proto_path={proto_dir}", f"--python_out={tmp}",
                    os.path.join(proto_dir, "memacct.proto")], check=True)
    sys.path.insert(0, tmp)
    import memacct_pb2
    pb = memacct_pb2

    sock_path = os.path.join(tmp, "memacctd.sock")
    conf = os.path.join(tmp, "memacctd.conf")
    with open(conf, "w") as f:
        # A deadline shorter than the default, so the late holder is late sooner.
        f.write("[accounting]\nrecursive-protection = yes\nreclaim-timeout = 200\n")
    log = open(os.path.join(tmp, "daemon.log"), "w+")
    daemon = subprocess.Popen([memacctd, "--socket", sock_path, "--state-dir", os.path.join(tmp, "state"),
                               "--config", conf, "--workers", "2", "--bus", "none"],
                              stdout=log, stderr=subprocess.STDOUT)
    try:
        if not wait_until(lambda: os.path.exists(sock_path) or daemon.poll() is not None, 30) \
                or daemon.poll() is not None:
            raise RuntimeError("memacctd did not start")
        c = Conn(sock_path)
        selftest(c, sock_path, low=False)
        selftest(c, sock_path, low=True)
        test_misbehaving(c, sock_path)
        test_stat_items(c, sock_path)
        c.close()
    except Exception as e:  # counted, and the daemon still stopped
        import traceback
        traceback.print_exc()
        check(False, f"stopped early: {type(e).__name__}: {e}")
    finally:
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
