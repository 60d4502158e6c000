#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Durability: every acknowledged change survives kill -9, and a state that
cannot be written refuses durable changes while everything else goes on.

- kill -9 in a loop: clients make durable changes (groups created, limits
  set, kept charges) one at a time and note each OK; the daemon is killed
  at a random moment; after the restart every acknowledged change must be
  there (a change that was in flight may or may not be).
- a read-only state directory (a tmpfs remounted read-only): the daemon
  starts from the state it finds, refuses durable changes with
  RESOURCE_EXHAUSTED naming the cause, serves reads and session charges,
  and accepts durable changes again once the directory is writable.
- a full state directory (a small tmpfs filled up): every OK is on disk
  when it arrives; once the room for the next save cannot be kept, durable
  changes are refused; freeing space brings them back.

Uses Debian's python3-protobuf with classes protoc makes from the .proto.
Usage: test-durable.py MEMACCTD PROTO_DIR
"""

import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

SKIPPED = []
KILL_RUNS = int(os.environ.get("DURABLE_KILL_RUNS", "20"))
CLIENTS = 4


# The frames' length prefix only: the messages themselves go through
# python3-protobuf, a codec independent of the daemon's.
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from rawproto import varint, Tally  # noqa: E402 (after the path it is found on)

TALLY = Tally()
check = TALLY.check


class Conn:
    def __init__(self, path, pb):
        self.pb = pb
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.connect(path)
        self.sock.settimeout(10)
        self.buf = b""
        self.next_id = 1

    def close(self):
        self.sock.close()

    def call(self, **op):
        req = self.pb.Request(id=self.next_id, **op)
        self.next_id += 1
        body = req.SerializeToString()
        self.sock.sendall(varint(len(body)) + body)
        return self.read_response()

    def read_response(self):
        while True:
            n, shift, i = 0, 0, 0
            while i < len(self.buf):
                b = self.buf[i]
                n |= (b & 0x7F) << shift
                shift += 7
                i += 1
                if not b & 0x80:
                    if len(self.buf) - i >= n:
                        body = self.buf[i:i + n]
                        self.buf = self.buf[i + n:]
                        resp = self.pb.Response()
                        resp.ParseFromString(body)
                        return resp
                    break
            chunk = self.sock.recv(65536)
            if not chunk:
                return None
            self.buf += chunk


class Daemon:
    def __init__(self, memacctd, sock, state, log):
        self.sock = sock
        if os.path.exists(sock):
            os.unlink(sock)
        self.proc = subprocess.Popen([memacctd, "--socket", sock, "--state-dir", state, "--workers", "2"],
                                     stdout=log, stderr=subprocess.STDOUT)
        # Ready when it accepts (the socket file appears at bind, a moment before listen).
        for _ in range(400):
            if self.proc.poll() is not None:
                break
            try:
                s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                s.connect(sock)
                s.close()
                break
            except OSError:
                s.close()
                time.sleep(0.01)

    def kill(self):
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()

    def stop(self):
        self.proc.terminate()
        return self.proc.wait(timeout=20)


def kept(group):
    # /d/cK holds kept charges only (no session attaches there, its
    # children hold nothing): its usage is what it keeps.
    return group.current


def get(c, path):
    r = c.call(get_group=c.pb.GetGroup(path=path, exact=True))
    return r.group if r and r.status == c.pb.STATUS_OK else None


# ---- kill -9 in a loop ---------------------------------------------------

class Writer(threading.Thread):
    """One client: durable changes one at a time, noting each OK."""

    def __init__(self, pb, sock, k, run):
        super().__init__(daemon=True)
        self.pb, self.sock, self.k, self.runno = pb, sock, k, run
        self.acked = []     # (kind, path, value)
        self.inflight = None

    def run(self):
        pb = self.pb
        try:
            c = Conn(self.sock, pb)
        except OSError:
            return
        base = f"/d/c{self.k}"
        n = 0
        try:
            while True:
                n += 1
                kind = n % 3
                if kind == 0:
                    path = f"{base}/r{self.runno}n{n}"
                    self.inflight = ("group", path, None)
                    r = c.call(create_group=pb.CreateGroup(path=path))
                elif kind == 1:
                    value = (self.runno << 20) + n * 4096
                    self.inflight = ("max", base, value)
                    r = c.call(set_limits=pb.SetLimits(path=base, limits=pb.Limits(max=value)))
                else:
                    self.inflight = ("kept", base, 4096)
                    r = c.call(charge=pb.Charge(path=base, bytes=4096, keep=True))
                if r is None:
                    return
                if r.status != pb.STATUS_OK:
                    print(f"unexpected refusal: {r.message}", file=sys.stderr)
                    return
                self.acked.append(self.inflight)
                self.inflight = None
        except OSError:
            return


def kill_loop(pb, memacctd, tmp, log):
    state = os.path.join(tmp, "kill-state")
    sock = os.path.join(tmp, "kill.sock")
    d = Daemon(memacctd, sock, state, log)
    c = Conn(sock, pb)
    c.call(create_group=pb.CreateGroup(path="/d"))
    for k in range(CLIENTS):
        c.call(create_group=pb.CreateGroup(path=f"/d/c{k}"))
    c.close()
    d.stop()

    expect_groups = set()
    expect_kept = {k: 0 for k in range(CLIENTS)}
    maybe_kept = {k: 0 for k in range(CLIENTS)}
    expect_max = {k: None for k in range(CLIENTS)}
    total_acked = lost = 0
    for run in range(KILL_RUNS):
        d = Daemon(memacctd, sock, state, log)
        writers = [Writer(pb, sock, k, run) for k in range(CLIENTS)]
        for w in writers:
            w.start()
        time.sleep(random.uniform(0.05, 0.4))
        d.kill()
        for w in writers:
            w.join(timeout=10)

        d = Daemon(memacctd, sock, state, log)
        c = Conn(sock, pb)
        for w in writers:
            k = w.k
            maybe_max = None
            for kind, path, value in w.acked:
                total_acked += 1
                if kind == "group":
                    expect_groups.add(path)
                elif kind == "max":
                    expect_max[k] = value
                else:
                    expect_kept[k] += value
            maybe_kept[k] = 0
            if w.inflight:
                kind, path, value = w.inflight
                if kind == "kept":
                    maybe_kept[k] = value
                elif kind == "max":
                    maybe_max = value
            g = get(c, f"/d/c{k}")
            have = kept(g) if g else -1
            if not expect_kept[k] <= have <= expect_kept[k] + maybe_kept[k]:
                lost += 1
                print(f"run {run}: /d/c{k} keeps {have}, acknowledged {expect_kept[k]}", file=sys.stderr)
            expect_kept[k] = have  # an unacknowledged charge that landed is now part of the state
            if expect_max[k] is not None and g and g.max not in (expect_max[k], maybe_max):
                lost += 1
                print(f"run {run}: /d/c{k} max {g.max}, acknowledged {expect_max[k]}", file=sys.stderr)
            if g and maybe_max is not None and g.max == maybe_max:
                expect_max[k] = maybe_max
        for path in expect_groups:
            if get(c, path) is None:
                lost += 1
                print(f"run {run}: acknowledged group {path} is gone", file=sys.stderr)
        c.close()
        d.stop()
    check(total_acked > 100 * KILL_RUNS // 20, f"the clients made changes ({total_acked} acknowledged)")
    check(lost == 0, f"{lost} acknowledged changes lost over {KILL_RUNS} kill -9 runs")
    print(f"kill -9: {KILL_RUNS} runs, {total_acked} acknowledged changes, {lost} lost")


# ---- a state directory that cannot be written ----------------------------

def saved(state_dir, path):
    """Is group @path in the state file or the journal after it?"""
    text = ""
    for name in ("state", "journal"):
        try:
            with open(os.path.join(state_dir, name)) as f:
                text += f.read()
        except FileNotFoundError:
            pass
    return f" {path} owner=" in text


def mount_tmpfs(path, size):
    os.makedirs(path, exist_ok=True)
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size},mode=0700", "tmpfs", path],
                       capture_output=True, text=True)
    return r.returncode == 0, r.stderr.strip()


def remount(path, mode):
    subprocess.run(["mount", "-o", f"remount,{mode}", path], check=True)


def eventually(fn, seconds=5.0):
    deadline = time.monotonic() + seconds
    while True:
        v = fn()
        if v or time.monotonic() > deadline:
            return v
        time.sleep(0.05)


def read_only(pb, memacctd, tmp, log):
    mnt = os.path.join(tmp, "ro")
    ok, why = mount_tmpfs(mnt, "8m")
    if not ok:
        SKIPPED.append(f"read-only state directory: cannot mount a tmpfs ({why})")
        return
    try:
        sock = os.path.join(tmp, "ro.sock")
        d = Daemon(memacctd, sock, mnt, log)
        c = Conn(sock, pb)
        check(c.call(create_group=pb.CreateGroup(path="/before")).status == pb.STATUS_OK, "create before read-only")
        c.close()
        check(d.stop() == 0, "the daemon stops cleanly")
        remount(mnt, "ro")

        d = Daemon(memacctd, sock, mnt, log)
        check(d.proc.poll() is None, "the daemon starts on a read-only state directory")
        c = Conn(sock, pb)
        check(get(c, "/before") is not None, "the saved state was restored")
        r = c.call(create_group=pb.CreateGroup(path="/after"))
        check(r.status == pb.STATUS_RESOURCE_EXHAUSTED, f"a durable change is refused: {r.status}")
        check("Read-only" in r.message, f"the refusal names the cause: {r.message!r}")
        r = c.call(charge=pb.Charge(path="/before", bytes=4096, keep=True))
        check(r.status == pb.STATUS_RESOURCE_EXHAUSTED, "a kept charge is refused")
        check(get(c, "/after") is None, "the refused group does not exist")
        r = c.call(attach=pb.Attach(path="/before"))
        check(r.status == pb.STATUS_OK, f"attach goes on: {r.message}")
        r = c.call(charge=pb.Charge(bytes=8192))
        check(r.status == pb.STATUS_OK, f"a session charge goes on: {r.message}")
        g = get(c, "/before")
        check(g is not None and g.current == 8192, "reads go on and see the session charge")

        remount(mnt, "rw")
        r = eventually(lambda: c.call(create_group=pb.CreateGroup(path="/after")).status == pb.STATUS_OK)
        check(r, "durable changes are accepted again once the directory is writable")
        check(saved(mnt, "/after"), "the acknowledged create is saved")
        c.close()
        check(d.stop() == 0, "the daemon stops cleanly")
    finally:
        subprocess.run(["umount", "-l", mnt])


def full_disk(pb, memacctd, tmp, log):
    mnt = os.path.join(tmp, "full")
    ok, why = mount_tmpfs(mnt, "4m")
    if not ok:
        SKIPPED.append(f"full state directory: cannot mount a tmpfs ({why})")
        return
    try:
        sock = os.path.join(tmp, "full.sock")
        d = Daemon(memacctd, sock, mnt, log)
        c = Conn(sock, pb)
        check(c.call(create_group=pb.CreateGroup(path="/f")).status == pb.STATUS_OK, "create on a roomy disk")
        c.call(attach=pb.Attach(path="/f"))
        # Fill what is left.
        subprocess.run(["dd", "if=/dev/zero", f"of={mnt}/fill", "bs=64k"], capture_output=True)
        # The room kept ahead (the journal's, the next state's) takes
        # what it holds; then durable changes are refused.
        oks = refused = wrong = 0
        last_ok = None
        for i in range(5000):
            r = c.call(create_group=pb.CreateGroup(path=f"/f/n{i}"))
            if r.status == pb.STATUS_OK:
                oks += 1
                last_ok = f"/f/n{i}"
                if i % 100 == 0 and not saved(mnt, last_ok):
                    wrong += 1
            elif r.status == pb.STATUS_RESOURCE_EXHAUSTED and "No space" in r.message:
                refused += 1
                # The last OK before the refusals is on disk too.
                if refused == 1 and last_ok and not saved(mnt, last_ok):
                    wrong += 1
                if refused >= 5:
                    break
            else:
                wrong += 1
                print(f"unexpected answer on a full disk: {r.status} {r.message}", file=sys.stderr)
                break
        check(wrong == 0, "every OK on a full disk is saved; every refusal names the cause")
        check(refused > 0, f"durable changes are refused once the disk is full ({oks} OK first)")
        r = c.call(charge=pb.Charge(bytes=4096))
        check(r.status == pb.STATUS_OK, "session charges go on on a full disk")
        os.unlink(os.path.join(mnt, "fill"))
        r = eventually(lambda: c.call(create_group=pb.CreateGroup(path="/f/again")).status == pb.STATUS_OK)
        check(r, "durable changes are accepted again once there is room")
        c.close()
        check(d.stop() == 0, "the daemon stops cleanly")
        print(f"full disk: {oks} OK before the first refusal, then {refused} refused")
    finally:
        subprocess.run(["umount", "-l", mnt])


def main():
    memacctd, proto_dir = sys.argv[1], sys.argv[2]
    tmp = tempfile.mkdtemp(prefix="memacct-durable-")
    log = open(os.path.join(tmp, "daemon.log"), "w")
    try:
        subprocess.run(["protoc", f"--proto_path={proto_dir}", f"--python_out={tmp}",
                        os.path.join(proto_dir, "memacct.proto")], check=True)
        sys.path.insert(0, tmp)
        import memacct_pb2 as pb

        try:
            kill_loop(pb, memacctd, tmp, log)
            if os.geteuid() == 0:
                read_only(pb, memacctd, tmp, log)
                full_disk(pb, memacctd, tmp, log)
            else:
                SKIPPED.append("read-only and full state directories: not root (mount)")
        except Exception as e:
            check(False, f"{type(e).__name__}: {e}")
            raise
    finally:
        log.close()
        if TALLY.failed:
            with open(os.path.join(tmp, "daemon.log")) as f:
                sys.stderr.write(f.read()[-4000:])
        shutil.rmtree(tmp, ignore_errors=True)
    for s in SKIPPED:
        print(f"SKIP: {s}")
    return TALLY.summary()


if __name__ == "__main__":
    sys.exit(main())
