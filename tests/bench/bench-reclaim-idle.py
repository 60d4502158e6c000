#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Idle CPU of memacctd with N reclaimable sessions, against the same N
sessions before they declared anything (the peer, in the same run).

Starts its own memacctd (a socket in a temporary folder, no bus), opens N
socket connections (python3-protobuf, pbconn.py), each attached to a group
of its own with 64 KiB charged; measures the daemon's CPU time
(/proc/PID/stat utime + stime) over --seconds while nobody asks anything;
then every session declares itself reclaimable and the same is measured
again. Reclaim keeps no timer and no per-session work between rounds, so
both figures should be the daemon's housekeeping alone.

Output, one line per figure:
  idle_cpu_plain <N> <ms of CPU per s>
  idle_cpu_reclaimable <N> <ms of CPU per s>
  ratio <reclaimable / plain>  (plain 0: the difference in ms per s)

Usage: bench-reclaim-idle.py MEMACCTD PROTO_DIR [--sessions 1000] [--seconds 5]
"""

import argparse
import os
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "integration"))
from pbconn import Conn  # noqa: E402 (after the path it is found on)
from rawproto import wait_until  # noqa: E402


def cpu_ms(pid):
    """The process's user + system CPU time, in ms."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) * 1000 / os.sysconf("SC_CLK_TCK")


def idle(pid, seconds):
    before = cpu_ms(pid)
    time.sleep(seconds)
    return (cpu_ms(pid) - before) / seconds


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("memacctd")
    ap.add_argument("proto_dir")
    ap.add_argument("--sessions", type=int, default=1000)
    ap.add_argument("--seconds", type=float, default=5)
    a = ap.parse_args()

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    need = a.sessions + 64
    if soft < need:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(max(need, soft), hard), hard))
    tmp = tempfile.mkdtemp(prefix="memacct-reclaim-idle.")
    subprocess.run(["protoc", f"--proto_path={a.proto_dir}", f"--python_out={tmp}",
                    os.path.join(a.proto_dir, "memacct.proto")], check=True)
    sys.path.insert(0, tmp)
    import memacct_pb2 as pb

    sock = os.path.join(tmp, "memacctd.sock")
    conf = os.path.join(tmp, "memacctd.conf")
    with open(conf, "w") as f:
        f.write(f"[limits]\nconnections-per-uid = {need}\nsessions-per-uid = {need}\n")
    daemon = subprocess.Popen([a.memacctd, "--socket", sock, "--state-dir", os.path.join(tmp, "state"),
                               "--config", conf, "--bus", "none"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    conns = []
    try:
        if not wait_until(lambda: os.path.exists(sock) or daemon.poll() is not None, 30) or daemon.poll():
            raise RuntimeError("memacctd did not start")
        admin = Conn(pb, sock)
        admin.call(create_group=pb.CreateGroup(path="/idle"))
        for i in range(a.sessions):
            c = Conn(pb, sock)
            path = f"/idle/h{i}"
            for op in (dict(create_group=pb.CreateGroup(path=path)), dict(attach=pb.Attach(path=path)),
                       dict(charge=pb.Charge(bytes=65536, no_wait=True))):
                r = c.call(**op)
                if r.status != pb.STATUS_OK:
                    raise RuntimeError(f"session {i}: {r.message}")
            conns.append(c)
        time.sleep(1)  # the set-up's own work settles
        plain = idle(daemon.pid, a.seconds)
        for c in conns:
            r = c.call(set_reclaimable=pb.SetReclaimable())
            if r.status != pb.STATUS_OK:
                raise RuntimeError(f"SetReclaimable: {r.message}")
        time.sleep(1)
        reclaimable = idle(daemon.pid, a.seconds)
        print(f"idle_cpu_plain {a.sessions} {plain:.2f}")
        print(f"idle_cpu_reclaimable {a.sessions} {reclaimable:.2f}")
        print(f"ratio {reclaimable / plain:.2f}" if plain > 0 else
              f"ratio n/a (plain 0; difference {reclaimable - plain:.2f} ms/s)")
        admin.close()
    finally:
        for c in conns:
            c.close()
        daemon.send_signal(signal.SIGTERM)
        try:
            daemon.wait(timeout=30)
        except subprocess.TimeoutExpired:
            daemon.kill()
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
