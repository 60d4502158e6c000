#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Pressure figures moving under a reclaim-bound load, on the real daemon,
through an independent client (python3-protobuf, as test-reclaim.py).

/p/g has a max; a reclaimable holder in /p/g/cache fills it and answers
every ReclaimRequest late (it sleeps before it uncharges and answers);
a charger in /p/g/app charges past the max again and again, and waits
for each round. The test measures, from the holder's side, how long each
request was held: every such interval lies within the charge's stall
(but for the moment between the request's sending and the stall's
beginning; the stall ends after the answer is served), so their sum
bounds from below what some must have counted, in /p/g/app and every ancestor. Nothing here bounds a latency
from above: the test must pass on a busy machine.

- some rises by at least half that (the stall begins when the request is
  already on its way: a preempted daemon thread could begin it after
  the holder started its clock) in /p/g/app, /p/g, /p and /; avg10 > 0;
  the sibling /p/sib, which never waits, stays at 0;
- full: the charger alone in /p/g/app stalls it fully; /p/g has the
  holder's session too, running, so full stays there while some moves;
- with an idle session attached to /p/g/app as well, full stays in
  /p/g/app while some moves;
- the same figures through `memacctctl show` (the kernel's text and
  --json) and the metrics endpoint's counters.

Usage: test-pressure.py MEMACCTD MEMACCTCTL PROTO_DIR
"""

import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from pbconn import Conn as PbConn  # noqa: E402 (after the path it is found on)
from rawproto import Tally, stop_daemon, wait_until  # noqa: E402

TALLY = Tally()
check = TALLY.check
pb = None  # memacct_pb2, compiled at start

M = 1024 * 1024
DELAY = 0.25  # how long the holder sits on each request: well within the 1 s deadline


def Conn(path):
    return PbConn(pb, path)


def ok(r):
    return r.status == pb.STATUS_OK


class Holder(threading.Thread):
    """A cache in @group holding @nbytes, reclaimable, answering each
    request after DELAY. held_for: for each request, the seconds from
    reading it to sending the answer."""

    def __init__(self, sock_path, group, nbytes):
        super().__init__(daemon=True)
        self.c = Conn(sock_path)
        self.held = nbytes
        self.held_for = []
        self.got = threading.Event()  # a request was read
        self.stop = False
        check(ok(self.c.call(attach=pb.Attach(path=group))), f"holder attaches to {group}")
        r = self.c.call(charge=pb.Charge(bytes=nbytes, no_wait=True))
        check(ok(r), f"holder charges {nbytes}: {r.message}")
        check(ok(self.c.call(set_reclaimable=pb.SetReclaimable())), "holder declares itself reclaimable")

    def run(self):
        while not self.stop:
            f = self.c.read(timeout=0.2, unsolicited=True)
            if f is None or f.WhichOneof("result") != "reclaim":
                continue
            start = time.monotonic()
            self.got.set()
            time.sleep(DELAY)
            give = min(f.reclaim.bytes, self.held)
            if give > 0 and ok(self.c.call(uncharge=pb.Uncharge(bytes=give))):
                self.held -= give
            # Before the answer is sent: the stall ends after it is served.
            self.held_for.append(time.monotonic() - start)
            self.c.call(reclaim_done=pb.ReclaimDone(id=f.reclaim.id))

    def finish(self):
        self.stop = True
        self.join(10)
        self.c.close()


def group(c, path):
    r = c.call(get_group=pb.GetGroup(path=path))
    if not ok(r):
        raise ValueError(f"GetGroup {path}: {r.message}")
    return r.group


def pressure(c, path):
    """{"some": (avg10, avg60, avg300, total µs), "full": ...} from GetGroup."""
    g = group(c, path)
    check(g.HasField("pressure_some") and g.HasField("pressure_full"), f"{path}: GetGroup carries pressure")
    return {k: (p.avg10, p.avg60, p.avg300, p.total)
            for k, p in (("some", g.pressure_some), ("full", g.pressure_full))}


def create(c, path, **limits):
    r = c.call(create_group=pb.CreateGroup(path=path, limits=pb.Limits(**limits) if limits else None))
    check(ok(r), f"create {path}: {r.message}")


def waits(sock_path, charger, n):
    """@n charges of @charger that each wait for a round of a fresh holder
    (8M of /p/g's 10M); return the seconds the holders held requests."""
    held = 0.0
    for i in range(n):
        h = Holder(sock_path, "/p/g/cache", 8 * M)
        h.start()
        r = charger.call(charge=pb.Charge(bytes=4 * M), timeout=120)
        check(ok(r), f"charge {i} fits once the holder gave back: {r.status} {r.message}")
        h.finish()
        check(len(h.held_for) >= 1, f"charge {i} waited for the holder: asked {len(h.held_for)} times")
        held += sum(h.held_for)
        if ok(r):
            check(ok(charger.call(uncharge=pb.Uncharge(bytes=4 * M))), f"uncharge {i}")
    return held


def ctl(memacctctl, sock_path, *args):
    return subprocess.run([memacctctl, "--socket", sock_path, *args], capture_output=True, text=True,
                          timeout=120)


def show_text(memacctctl, sock_path, path):
    """memory.pressure's two lines of `memacctctl show`, parsed: {"some": (avg10, ..., total)}."""
    r = ctl(memacctctl, sock_path, "show", path)
    check(r.returncode == 0, f"show {path}: {r.stderr}")
    line = r"avg10=(\d+\.\d\d) avg60=(\d+\.\d\d) avg300=(\d+\.\d\d) total=(\d+)\n"
    m = re.search(r"^memory\.pressure: some " + line + r"\tfull " + line, r.stdout, re.M)
    if not check(m is not None, f"show {path} prints memory.pressure in the kernel's text:\n{r.stdout}"):
        return None
    v = m.groups()
    return {"some": tuple(float(x) for x in v[0:3]) + (int(v[3]),),
            "full": tuple(float(x) for x in v[4:7]) + (int(v[7]),)}


def scrape(metrics_path):
    """GET /metrics over the unix socket: {(family, group): value}."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(60)
    s.connect(metrics_path)
    s.sendall(b"GET /metrics HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
    data = b""
    while True:
        chunk = s.recv(65536)
        if not chunk:
            break
        data += chunk
    s.close()
    head, _, body = data.decode().partition("\r\n\r\n")
    check(head.startswith("HTTP/1.1 200"), f"scrape: {head.splitlines()[:1]}")
    out = {}
    for m in re.finditer(r'^(memacct_pressure_\w+)\{group="([^"]*)"\} (\S+)$', body, re.M):
        out[(m.group(1), m.group(2))] = float(m.group(3))
    for fam in ("memacct_pressure_waiting_seconds_total", "memacct_pressure_stalled_seconds_total"):
        check(f"# TYPE {fam} counter" in body, f"{fam} is a counter")
    return out


def run(c, sock_path, memacctctl, metrics_path):
    create(c, "/p")
    create(c, "/p/g", max=10 * M)
    create(c, "/p/g/cache")
    create(c, "/p/g/app")
    create(c, "/p/sib")
    path_up = ["/p/g/app", "/p/g", "/p", "/"]
    before = {p: pressure(c, p) for p in path_up + ["/p/sib"]}
    for p, v in before.items():
        check(v["some"] == (0, 0, 0, 0) and v["full"] == (0, 0, 0, 0), f"{p}: no pressure before any wait: {v}")

    # The charger alone in /p/g/app.
    charger = Conn(sock_path)
    check(ok(charger.call(attach=pb.Attach(path="/p/g/app"))), "the charger attaches")
    held = waits(sock_path, charger, 4)
    bound = int(held * 1e6 / 2)
    print(f"the holders held requests for {held:.3f} s in all")
    now = {p: pressure(c, p) for p in path_up + ["/p/sib"]}
    for p in path_up:
        print(f"{p}: {now[p]}")
        check(now[p]["some"][3] >= bound, f"{p}: some total {now[p]['some'][3]} µs >= the {bound} µs measured")
    check(now["/p/g/app"]["full"][3] >= bound,
          f"/p/g/app: the charger alone there: full {now['/p/g/app']['full'][3]} µs >= {bound} µs")
    check(now["/p/g/app"]["full"][3] <= now["/p/g/app"]["some"][3], "/p/g/app: full never exceeds some")
    check(now["/p/g"]["full"][3] == 0, f"/p/g: the holder's session runs there: full stays 0: {now['/p/g']}")
    check(now["/"]["full"][3] == 0, f"/: full stays 0: {now['/']}")
    check(now["/p/sib"]["some"] == (0, 0, 0, 0) and now["/p/sib"]["full"] == (0, 0, 0, 0),
          f"/p/sib never waited: {now['/p/sib']}")
    # The averages move at the end of a 2 s period; the clock brings it.
    check(wait_until(lambda: pressure(c, "/p/g/app")["some"][0] > 0, 30), "/p/g/app: avg10 of some > 0")
    check(pressure(c, "/p/g")["some"][0] > 0, "/p/g: avg10 of some > 0")
    check(pressure(c, "/p/sib")["some"][0] == 0, "/p/sib: avg10 stays 0")

    # The same through memacctctl: the text, and --json.
    snap = pressure(c, "/p/g/app")
    text = show_text(memacctctl, sock_path, "/p/g/app")
    if text:
        check(text["some"][3] >= snap["some"][3] and text["full"][3] >= snap["full"][3],
              f"show's totals are at least the socket's read before: {text} {snap}")
        check(text["some"][0] > 0, f"show's avg10 > 0: {text}")
    text = show_text(memacctctl, sock_path, "/p/sib")
    if text:
        check(text["some"] == (0.0, 0.0, 0.0, 0) and text["full"] == (0.0, 0.0, 0.0, 0),
              f"show /p/sib: all 0: {text}")
    r = ctl(memacctctl, sock_path, "-P", "pressure.some.total", "show", "/p/g")
    check(r.returncode == 0 and int(r.stdout) >= bound, f"show -P pressure.some.total of /p/g: {r.stdout!r}")

    # And the metrics' counters, in seconds.
    if metrics_path:
        m = scrape(metrics_path)
        w = m.get(("memacct_pressure_waiting_seconds_total", "/p/g"))
        check(w is not None and w >= bound / 1e6, f"waiting seconds of /p/g >= {bound / 1e6}: {w}")
        s = m.get(("memacct_pressure_stalled_seconds_total", "/p/g/app"))
        check(s is not None and s >= bound / 1e6, f"stalled seconds of /p/g/app >= {bound / 1e6}: {s}")
        check(m.get(("memacct_pressure_waiting_seconds_total", "/p/sib")) == 0, "waiting seconds of /p/sib: 0")
        check(m.get(("memacct_pressure_stalled_seconds_total", "/p/g")) == 0, "stalled seconds of /p/g: 0")

    # An idle session in /p/g/app too: some moves there, full does not.
    idle = Conn(sock_path)
    check(ok(idle.call(attach=pb.Attach(path="/p/g/app"))), "an idle session attaches to /p/g/app")
    first = pressure(c, "/p/g/app")
    held = waits(sock_path, charger, 3)
    bound = int(held * 1e6 / 2)
    second = pressure(c, "/p/g/app")
    check(second["some"][3] - first["some"][3] >= bound,
          f"/p/g/app: some moves by >= {bound} µs with the idle session: {first} -> {second}")
    check(second["full"][3] == first["full"][3],
          f"/p/g/app: full stays while the idle session runs: {first['full'][3]} -> {second['full'][3]}")
    idle.close()

    # The charger goes while it waits (or just after: either way), and
    # leaves no stall behind: the totals stop.
    h = Holder(sock_path, "/p/g/cache", 8 * M)
    h.start()
    charger.send(charge=pb.Charge(bytes=4 * M))
    check(h.got.wait(60), "the holder is asked for the charger's last charge")
    charger.close()
    check(wait_until(lambda: group(c, "/p/g/app").nr_sessions == 0, 60), "the charger's session is gone")
    h.finish()
    a = pressure(c, "/p/g/app")
    time.sleep(0.5)
    b = pressure(c, "/p/g/app")
    check(a["some"][3] == b["some"][3] and a["full"][3] == b["full"][3],
          f"no stall left behind by a charger that went: {a} -> {b}")


def main():
    global pb
    memacctd, memacctctl, proto_dir = sys.argv[1], sys.argv[2], sys.argv[3]
    tmp = tempfile.mkdtemp(prefix="memacct-pressure.")
    subprocess.run(["protoc", f"--proto_path={proto_dir}", f"--python_out={tmp}",
                    os.path.join(proto_dir, "memacct.proto")], check=True)
    sys.path.insert(0, tmp)
    import memacct_pb2
    pb = memacct_pb2

    sock_path = os.path.join(tmp, "memacctd.sock")
    metrics_path = os.path.join(tmp, "metrics.sock")
    conf = os.path.join(tmp, "memacctd.conf")
    with open(conf, "w") as f:
        f.write("# every key at its default: a 1 s reclaim deadline, well above DELAY\n")
    log = open(os.path.join(tmp, "daemon.log"), "w+")
    daemon = subprocess.Popen([memacctd, "--socket", sock_path, "--state-dir", os.path.join(tmp, "state"),
                               "--config", conf, "--workers", "2", "--bus", "none",
                               "--metrics", "unix:" + metrics_path],
                              stdout=log, stderr=subprocess.STDOUT)
    try:
        if not wait_until(lambda: (os.path.exists(sock_path) and os.path.exists(metrics_path))
                          or daemon.poll() is not None, 30) or daemon.poll() is not None:
            raise RuntimeError("memacctd did not start")
        c = Conn(sock_path)
        run(c, sock_path, memacctctl, metrics_path)
        c.close()
    except Exception as e:  # counted, and the daemon still stopped
        import traceback
        traceback.print_exc()
        check(False, f"stopped early: {type(e).__name__}: {e}")
    finally:
        stop_daemon(daemon, log, TALLY, timeout=60)
        shutil.rmtree(tmp, ignore_errors=True)
    return TALLY.summary()


if __name__ == "__main__":
    sys.exit(main())
