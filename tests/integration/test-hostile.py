#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Hostile clients against bystanders, on a raw socket with a hand-written
protobuf encoder (no protobuf library).

Bystanders: four client processes (one session each, each its own pid)
holding session charges of several stat items in the groups of /by, kept
charges in three of them, a max and a high that have already counted
events, and one bystander subscribed to /victim's events. Each hostile
case runs while they are there, and must end at most its own connection
and session: before and after every case every group of /by (usage, peak,
limits, failcnt, events, statistics, sessions), the kept charges the
state file holds for them and every bystander's client counters (GetClient
exact) are compared for equality, and the bystanders are asked questions
during the case, which they must answer within a bound. Each case's own
victim session charges 1 MiB to /victim first: that charge must be gone
once its connection is.

The cases: frames cut short by a close, a 2^63 length prefix, overlong
varints (the length prefix, tags, ids, sizes, string lengths), seeded
random and mutated bodies (as uid nobody, with a delegated group of its
own), a NUL and an oversized value in every string field, a flood of
subscribes beyond the per-connection cap, a subscriber that never reads
its events (closed, while one that reads gets them all), a reader that
pipelines List requests and never reads (the daemon stops reading it, its
memory stays bounded, the others are served), a slow writer (one byte at a
time: cut off by frame-timeout, others served meanwhile; one whose every
frame is within the timeout is served), clients that connect and say
nothing, and clients that half-close.

Usage: test-hostile.py (MEMACCTD in the environment)
"""

import faulthandler
import os
import random
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from rawproto import (  # noqa: E402 (after the path it is found on)
    OK, INVALID_ARGUMENT, LIMIT_EXCEEDED, RESOURCE_EXHAUSTED, PROTOCOL_ERROR, FRAME_MAX, K, M,
    REQ_ID, REQ_HELLO, REQ_CREATE, REQ_REMOVE, REQ_SET_LIMITS, REQ_GET_GROUP, REQ_LIST,
    REQ_CHARGE, REQ_UNCHARGE, REQ_ATTACH, REQ_MOVE, REQ_GET_CLIENT, REQ_RESET_PEAK,
    REQ_SUBSCRIBE, REQ_STOCK_SETUP, REQ_IMPORT, RESP_ID, varint, overlong, f_varint, f_bytes,
    frame, request, first, status, message, Conn, Connector, charge_body, get_group,
    list_groups, usage, client_info, wait_until, rss_kib, sanitized, QUARANTINE_KIB, Tally,
)

TALLY = Tally()
check = TALLY.check

START = time.monotonic()

FRAME_TIMEOUT = 2          # seconds, in the daemon's configuration below
SUBSCRIPTIONS_MAX = 64     # SERVICE_SUBSCRIPTIONS_MAX
NOBODY = 65534


class World:
    """The daemon, the bystanders, and what must not change."""

    def __init__(self, sock_path, state_file, daemon):
        self.sock_path = sock_path
        self.state_file = state_file
        self.daemon = daemon
        self.root = None
        self.bystanders = []   # (name, Connector, Conn, group)
        self.nobody = None
        self.clients = {}      # each bystander's client counters, once set up
        # RSS the sanitizers' quarantine may add (freed, not returned), KiB.
        self.quarantine = QUARANTINE_KIB if sanitized(os.environ["MEMACCTD"]) else 0

    # -- what must not change --

    def kept(self):
        """The kept charges saved for /by (the state file, then the
        journal's later records of the same groups), by group."""
        saved = {}
        for name in (self.state_file, os.path.join(os.path.dirname(self.state_file), "journal")):
            try:
                with open(name) as f:
                    for line in f:
                        words = line.split()
                        if len(words) >= 2 and words[0] in ("group", "set") and (
                                words[1] == "/by" or words[1].startswith("/by/")):
                            saved[words[1]] = tuple(w for w in words[2:] if w.startswith("kept."))
                        elif len(words) == 2 and words[0] == "del":
                            saved.pop(words[1], None)
            except FileNotFoundError:
                pass
        return sorted(saved.items())

    def snapshot(self):
        return {
            "groups": list_groups(self.root, "/by"),
            "clients": {name: client_info(self.root, c.pid) for name, c, _, _ in self.bystanders},
            "kept": self.kept(),
        }

    def compare(self, name, before, after):
        for b, a in zip(before["groups"], after["groups"]):
            for key in b:
                check(b[key] == a[key],
                      f"{name}: {b['path']} {key} is {a[key]}, was {b[key]}")
        check(len(before["groups"]) == len(after["groups"]),
              f"{name}: /by has {len(after['groups'])} groups, had {len(before['groups'])}")
        for who, info in before["clients"].items():
            check(after["clients"][who] == info,
                  f"{name}: bystander {who}'s client counters {after['clients'][who]}, were {info}")
        check(before["kept"] == after["kept"],
              f"{name}: the saved kept charges {after['kept']}, were {before['kept']}")

    def probe(self, name, bound=3.0):
        """Every bystander answers, each within @bound seconds, and its
        own view of its client is what it was."""
        for who, _, conn, group in self.bystanders:
            t0 = time.monotonic()
            try:
                mine = client_info(conn, 0)
                g = get_group(conn, group, exact=False)
                ok = g["path"] == group
                check(mine == self.clients[who], f"{name}: bystander {who} sees its client "
                      f"counters unchanged: {mine}, were {self.clients[who]}")
            except (OSError, ValueError) as e:
                ok = False
                print(f"{name}: bystander {who}: {e!r}", file=sys.stderr)
            took = time.monotonic() - t0
            check(ok and took < bound, f"{name}: bystander {who} answers within {bound} s "
                  f"(ok={ok}, {took:.2f} s)")

    # -- the hostile side --

    def victim(self):
        """A root connection holding a 1 MiB session charge in /victim."""
        v = Conn(self.sock_path)
        v.hello()
        r = v.call(REQ_CHARGE, charge_body("/victim", M))
        if status(r) != OK:
            raise ValueError(f"the victim's charge: {status(r)} {message(r)}")
        return v

    def released(self, name):
        ok = wait_until(lambda: usage(self.root, "/victim") == 0)
        check(ok, f"{name}: the ended sessions' charges in /victim are released "
              f"(usage {usage(self.root, '/victim')})")

    def run_case(self, name, fn):
        before = self.snapshot()
        t0 = time.monotonic()
        try:
            fn(self, name)
        except Exception as e:  # counted; the next case still runs
            check(False, f"{name}: stopped early: {type(e).__name__}: {e}")
        self.released(name)
        check(self.daemon.poll() is None, f"{name}: the daemon is still running")
        self.compare(name, before, self.snapshot())
        self.probe(name + " (after)")
        print(f"# {name}: {time.monotonic() - t0:.2f} s")


# ---- the cases ----

def expect_error_then_eof(name, conn, want_id=0):
    r = conn.read()
    check(r is not None and status(r) == PROTOCOL_ERROR,
          f"{name}: a PROTOCOL_ERROR response, got {r}")
    check(first(r, RESP_ID, 0) == want_id, f"{name}: the error's id is {want_id}: {r}")
    check(len(message(r)) > 0, f"{name}: the error has a message")
    check(conn.at_eof(), f"{name}: then the daemon closes the connection")


def case_truncated(w, name):
    hello = request(1, REQ_HELLO, f_varint(1, 1))
    cuts = [
        ("a length prefix alone", varint(100)),
        ("a prefix and part of the body", varint(100) + b"\x08"),
        ("half a varint prefix", b"\x80"),
        ("four bytes of a five-byte prefix", b"\xff\xff\xff\x80"),
        ("a Hello cut one byte short", hello[:-1]),
        ("a frame of exactly the limit, half sent", varint(FRAME_MAX) + b"\x08\x01" * 1000),
    ]
    for what, data in cuts:
        v = w.victim()
        v.send(data)
        w.probe(f"{name}: {what}")
        check(not v.readable(0.2), f"{name}: {what}: nothing is answered to a partial frame")
        v.close()
    # Complete frames before the cut are answered first.
    v = w.victim()
    v.send(hello + request(2, REQ_GET_GROUP, f_bytes(1, "/by"))[:-3])
    r = v.reply()
    check(r is not None and status(r) == OK and first(r, RESP_ID) == 1,
          f"{name}: the complete Hello before the cut is answered: {r}")
    v.close()


def case_huge_prefix(w, name):
    for what, data in (("2^63", varint(1 << 63)),
                       ("2^63 and a body", varint(1 << 63) + b"\x08\x01" * 64),
                       ("2^64-1", varint((1 << 64) - 1)),
                       ("2^32", varint(1 << 32) + b"\x00" * 8)):
        v = w.victim()
        v.send(data)
        w.probe(f"{name}: {what}")
        expect_error_then_eof(f"{name}: {what}", v)
        v.close()


def case_overlong(w, name):
    hello_body = f_varint(REQ_ID, 1) + f_bytes(REQ_HELLO, f_varint(1, 1))

    # The length prefix: up to five bytes are read by value, as protobuf's
    # 32-bit varints; a sixth is a framing error.
    v = w.victim()
    v.send(overlong(len(hello_body), 5) + hello_body)
    r = v.reply()
    check(r is not None and status(r) == OK and first(r, RESP_ID) == 1,
          f"{name}: a five-byte prefix of a small length is read by its value: {r}")
    v.close()
    for width in (6, 10, 11):
        v = w.victim()
        v.send(overlong(len(hello_body), width) + hello_body)
        expect_error_then_eof(f"{name}: a {width}-byte length prefix", v)
        v.close()

    # Fields: a ten-byte varint is a varint; an eleventh byte is malformed.
    v = w.victim()
    body = varint(REQ_ID << 3) + overlong(7, 10) + f_bytes(REQ_HELLO, f_varint(1, 1))
    v.send(frame(body))
    r = v.reply()
    check(r is not None and status(r) == OK and first(r, RESP_ID) == 7,
          f"{name}: an id of 7 in ten bytes is id 7: {r}")
    charge = (f_bytes(1, "/victim") + varint(2 << 3) + overlong(4096, 10))
    r = v.call(REQ_CHARGE, charge)
    check(status(r) == OK, f"{name}: a charge of 4096 in a ten-byte varint is taken: {r}")
    # The string's length prefix in five bytes: the path is still "/victim".
    charge = varint(1 << 3 | 2) + overlong(len(b"/victim"), 5) + b"/victim" + f_varint(2, 4096)
    r = v.call(REQ_CHARGE, charge)
    check(status(r) == OK, f"{name}: a path whose length takes five bytes is taken: {r}")
    # The tag of the id in five bytes.
    v.send(frame(overlong(REQ_ID << 3, 5) + varint(9) + f_bytes(REQ_HELLO, b"")))
    r = v.reply()
    check(r is not None and status(r) == OK and first(r, RESP_ID) == 9,
          f"{name}: an id whose tag takes five bytes: {r}")
    check(usage(w.root, "/victim") == M + 2 * 4096,
          f"{name}: /victim holds exactly the charges sent: {usage(w.root, '/victim')}")
    v.close()

    for what, body in (
            ("an id of eleven bytes", varint(REQ_ID << 3) + overlong(7, 11)),
            ("a tag of six bytes", overlong(REQ_ID << 3, 6) + varint(7)),
            ("a string length of six bytes",
             f_varint(REQ_ID, 3) + varint(REQ_CHARGE << 3 | 2) + varint(13)
             + varint(1 << 3 | 2) + overlong(7, 6) + b"/victim"),
            ("a submessage length beyond its frame",
             f_varint(REQ_ID, 3) + varint(REQ_CHARGE << 3 | 2) + overlong(1 << 30, 5))):
        v = w.victim()
        v.send(frame(body))
        w.probe(f"{name}: {what}")
        expect_error_then_eof(f"{name}: {what}", v)
        v.close()

    # A uint32 given 64 bits, and a varint of ten bytes with bits past
    # the 64th: whatever the decoder makes of them, an answer and the
    # connection goes on.
    v = w.victim()
    for what, body in (
            ("a version above 2^32", f_varint(REQ_ID, 4) + f_bytes(REQ_HELLO, f_varint(1, (1 << 40) + 1))),
            ("a charge size with bits past the 64th",
             f_varint(REQ_ID, 5) + f_bytes(REQ_CHARGE, f_bytes(1, "/victim") + varint(2 << 3)
                                           + b"\xff" * 9 + b"\x7f"))):
        v.send(frame(body))
        r = v.reply()
        check(r is not None and first(r, RESP_ID, 0) in (4, 5) and status(r) != PROTOCOL_ERROR,
              f"{name}: {what}: answered, not a framing error: {r}")
    check(status(v.hello()) == OK, f"{name}: and the connection goes on")
    v.close()


# Valid requests of uid nobody, mutated by the random case.
def nobody_templates():
    return [
        (REQ_HELLO, f_varint(1, 1) + f_bytes(2, "rnd")),
        (REQ_CREATE, f_bytes(1, "/rnd/x") + f_bytes(2, f_varint(1, 8 * M) + f_varint(2, 4 * M))),
        (REQ_REMOVE, f_bytes(1, "/rnd/x")),
        (REQ_SET_LIMITS, f_bytes(1, "/rnd/x") + f_bytes(2, f_varint(1, M)) + f_varint(3, 1)),
        (REQ_GET_GROUP, f_bytes(1, "/by/a") + f_bytes(2, "/by") + f_varint(3, 1)),
        (REQ_LIST, f_bytes(1, "/") + f_varint(2, 1)),
        (REQ_CHARGE, charge_body("/rnd", 64 * K, "file")),
        (REQ_CHARGE, charge_body("/rnd/x", 4 * K, "anon", keep=True)),
        (REQ_UNCHARGE, charge_body("/rnd", 4 * K, "file")),
        (REQ_ATTACH, f_bytes(1, "/rnd")),
        (REQ_MOVE, f_varint(1, 0) + f_bytes(2, "/rnd/x")),
        (REQ_GET_CLIENT, f_varint(1, 0) + f_varint(2, 1)),
        (REQ_RESET_PEAK, f_bytes(1, "/rnd")),
        (REQ_SUBSCRIBE, f_bytes(1, "/rnd")),
        (REQ_STOCK_SETUP, b""),
        (REQ_IMPORT, f_bytes(1, "/") + f_bytes(2, "/rnd")),
    ]


def mutate(rng, data):
    data = bytearray(data)
    for _ in range(rng.choice((1, 1, 1, 2, 3))):
        what = rng.randrange(5)
        if what == 0 and data:
            data[rng.randrange(len(data))] ^= 1 << rng.randrange(8)
        elif what == 1:
            at = rng.randrange(len(data) + 1)
            data[at:at] = rng.randbytes(rng.randint(1, 6))
        elif what == 2 and data:
            at = rng.randrange(len(data))
            del data[at:at + rng.randint(1, 4)]
        elif what == 3 and data:
            data[rng.randrange(len(data))] = rng.choice((0x00, 0x7f, 0x80, 0xff))
        elif data:
            at = rng.randrange(len(data))
            data[at:at] = data[at:at + rng.randint(1, 8)]
    return bytes(data)


def case_random(w, name):
    rng = random.Random(0x6d656d61)   # seeded: the same bodies every run
    templates = nobody_templates()
    nframes, conns, answered, errors = 1500, 0, 0, 0
    sent = 0
    while sent < nframes:
        c = w.nobody.connect()
        conns += 1
        batch = []
        for i in range(rng.randint(1, 3)):
            if rng.random() < 0.25:
                body = rng.randbytes(rng.randint(0, 120))
            else:
                op, b = rng.choice(templates)
                body = mutate(rng, f_varint(REQ_ID, i + 1) + f_bytes(op, b))
            batch.append(frame(body))
        sent += len(batch)
        c.send(b"".join(batch))
        c.sock.shutdown(socket.SHUT_WR)
        got, ended_by_error = 0, False
        while True:
            try:
                r = c.reply()
            except (socket.timeout, ConnectionResetError, ValueError) as e:
                check(False, f"{name}: connection {conns}: {e!r}")
                break
            if r is None:
                break
            got += 1
            if status(r) == PROTOCOL_ERROR:
                ended_by_error = True
                errors += 1
        answered += got
        check(got <= len(batch), f"{name}: connection {conns}: {got} replies to {len(batch)} frames")
        check(ended_by_error or got == len(batch),
              f"{name}: connection {conns}: every frame answered unless a framing error ended it "
              f"({got} of {len(batch)})")
        c.close()
        if conns % 20 == 0:
            w.probe(f"{name}: after {conns} connections", bound=3.0)
    print(f"# {name}: {sent} frames on {conns} connections, {answered} answered, "
          f"{errors} framing errors")
    check(errors > 0 and answered > errors, f"{name}: the bodies reach both the decoder's "
          f"refusals ({errors}) and the operations ({answered - errors})")


# Every string field of every request: (where the refusal names it, op, body builder).
STRING_FIELDS = [
    ("hello.agent", REQ_HELLO, lambda s: f_varint(1, 1) + f_bytes(2, s)),
    ("create_group.path", REQ_CREATE, lambda s: f_bytes(1, s)),
    ("remove_group.path", REQ_REMOVE, lambda s: f_bytes(1, s)),
    ("set_limits.path", REQ_SET_LIMITS, lambda s: f_bytes(1, s) + f_bytes(2, f_varint(1, 0)) + f_varint(3, 1)),
    ("get_group.path", REQ_GET_GROUP, lambda s: f_bytes(1, s)),
    ("get_group.reclaim_root", REQ_GET_GROUP, lambda s: f_bytes(1, "/by/a") + f_bytes(2, s)),
    ("list_groups.path", REQ_LIST, lambda s: f_bytes(1, s)),
    ("charge.path", REQ_CHARGE, lambda s: charge_body(s, 4096, keep=True)),
    ("charge.stat", REQ_CHARGE, lambda s: charge_body("/by/a", 4096, keep=True) + f_bytes(3, s)),
    ("uncharge.path", REQ_UNCHARGE, lambda s: charge_body(s, 4096, keep=True)),
    ("uncharge.stat", REQ_UNCHARGE, lambda s: charge_body("/by/a", 4096, keep=True) + f_bytes(3, s)),
    ("attach.path", REQ_ATTACH, lambda s: f_bytes(1, s)),
    ("move_session.path", REQ_MOVE, lambda s: f_varint(1, 0) + f_bytes(2, s)),
    ("reset_peak.path", REQ_RESET_PEAK, lambda s: f_bytes(1, s)),
    ("subscribe.path", REQ_SUBSCRIBE, lambda s: f_bytes(1, s)),
    ("import_cgroups.from_cgroup", REQ_IMPORT, lambda s: f_bytes(1, s) + f_bytes(2, "/victim/imp")),
    ("import_cgroups.under", REQ_IMPORT, lambda s: f_bytes(1, "/") + f_bytes(2, s)),
]


def case_strings(w, name):
    ngroups = len(list_groups(w.root, "/"))
    v = w.victim()   # root: every operation gets past authorisation
    big = "/by/a/" + "x" * (60 * K)
    for field, op, build in STRING_FIELDS:
        # A NUL: cut there, "/by/a" would be acted on (removed, its max set
        # to 0, charged, a session moved there).
        for value in (b"/by/a\0/x", b"\0", b"anon\0"):
            r = v.call(op, build(value))
            check(status(r) == INVALID_ARGUMENT and message(r).startswith(field + ":"),
                  f"{name}: a NUL in {field} ({value!r}): INVALID_ARGUMENT naming it, "
                  f"got {status(r)} {message(r)!r}")
        r = v.call(op, build(big))
        if field == "hello.agent":   # free text, never used: taken
            check(status(r) == OK, f"{name}: a 60 KiB {field} is taken: {status(r)} {message(r)!r}")
        else:
            check(status(r) not in (OK, PROTOCOL_ERROR, None),
                  f"{name}: a 60 KiB {field} is refused, the session kept: {status(r)} {message(r)!r}")
    check(status(v.hello()) == OK, f"{name}: the connection goes on")
    check(len(list_groups(w.root, "/")) == ngroups, f"{name}: no group was made or removed")
    # One more than the frame takes: a framing error, for this one alone.
    v.send(request(99, REQ_CREATE, f_bytes(1, "/by/" + "x" * FRAME_MAX)))
    expect_error_then_eof(f"{name}: a path longer than the frame limit", v)
    v.close()


def case_subscribe_flood(w, name):
    v = w.victim()
    n = 3 * SUBSCRIPTIONS_MAX
    v.send(b"".join(request(i + 1, REQ_SUBSCRIBE, f_bytes(1, "/victim" if i % 2 else "/by"))
                    for i in range(n)))
    got = []
    for _ in range(n):
        r = v.reply()
        if r is None:
            break
        got.append((first(r, RESP_ID, 0), status(r)))
    check([s for _, s in got] == [OK] * SUBSCRIPTIONS_MAX + [RESOURCE_EXHAUSTED] * (n - SUBSCRIPTIONS_MAX),
          f"{name}: {SUBSCRIPTIONS_MAX} subscriptions taken, the rest RESOURCE_EXHAUSTED: {got[60:70]}...")
    check([i for i, _ in got] == list(range(1, n + 1)), f"{name}: every subscribe answered in order")
    w.probe(name)
    check(status(v.hello()) == OK, f"{name}: the flooding connection goes on")

    # An event in /victim/ev (max 4 KiB refuses 8 KiB): the bystander that
    # subscribed to /victim hears of it once, with the flooder still there
    # and after it left.
    sub = w.bystanders[0][2]
    for when in ("with the flooder", "after the flooder"):
        r = w.root.call(REQ_CHARGE, charge_body("/victim/ev", 8 * K, keep=True))
        check(status(r) == LIMIT_EXCEEDED, f"{name}: the event's charge is refused: {status(r)}")
        # A refused charge counts max, then oom: both, once each.
        seen = []
        while (e := sub.wait_event(5 if not seen else 0.3)) is not None:
            seen.append((first(e, 1), first(e, 2)))
        check(sorted(seen) == [(b"/victim/ev", b"max"), (b"/victim/ev", b"oom")],
              f"{name}: the subscribed bystander hears of the max and oom events once {when}: {seen}")
        if when == "with the flooder":
            # However many of its subscriptions cover the group, a
            # connection gets an event once (memacct(7)).
            copies = []
            while (e := v.wait_event(5 if not copies else 0.5)) is not None:
                copies.append(first(e, 2))
            check(sorted(copies) == [b"max", b"oom"],
                  f"{name}: the flooder's 32 subscriptions of /victim get one copy of each: {copies}")
            v.close()
            # Its subscriptions are gone once its session is.
            wait_until(lambda: usage(w.root, "/victim") == 0)


def case_unread_events(w, name):
    """A subscriber that never reads its events loses its connection, not
    the daemon's memory; a subscriber that reads gets every event."""
    v = w.victim()
    r = [v.call(REQ_SUBSCRIBE, f_bytes(1, "/victim")) for _ in range(SUBSCRIPTIONS_MAX)]
    check(all(status(x) == OK for x in r), f"{name}: {SUBSCRIPTIONS_MAX} subscriptions of /victim")
    rss0 = rss_kib(w.daemon.pid)
    sub = w.bystanders[0][2]
    n, heard = 0, 0
    t0 = time.monotonic()
    # Each refused charge is two events, a frame each for the flooder
    # (however many of its subscriptions cover the group): its output
    # passes the bound (output-buffer) within some ten thousands.
    while usage(w.root, "/victim") != 0 and time.monotonic() - t0 < 20:
        batch = 500
        w.root.send(b"".join(request(100000 + i, REQ_CHARGE, charge_body("/victim/ev", 8 * K, keep=True))
                             for i in range(batch)))
        refused = sum(status(w.root.reply()) == LIMIT_EXCEEDED for _ in range(batch))
        check(refused == batch, f"{name}: {refused} of {batch} charges over max refused")
        n += batch
        # The reading subscriber keeps up: everything so far, before more.
        while heard < 2 * n and sub.wait_event(5) is not None:
            heard += 1
    rss1 = rss_kib(w.daemon.pid)
    print(f"# {name}: the flooder was closed after {n} refused charges, "
          f"{time.monotonic() - t0:.2f} s; daemon RSS {rss0} -> {rss1} KiB")
    check(usage(w.root, "/victim") == 0, f"{name}: the subscriber that does not read is closed "
          f"(its session's charge released) after {n} refused charges")
    check(rss1 - rss0 < 96 * K + w.quarantine, f"{name}: the daemon's memory stays bounded: +{rss1 - rss0} KiB")
    w.probe(name)
    while heard < 2 * n and sub.wait_event(5) is not None:
        heard += 1
    check(heard == 2 * n, f"{name}: the bystander that reads hears of all {2 * n} events: {heard}")
    v.close()


def case_never_reads(w, name):
    v = w.victim()
    v.sock.setblocking(False)
    one = request(1, REQ_LIST, f_bytes(1, "/") + f_varint(2, 1))
    chunk = one * (64 * K // len(one))
    total_max = 64 * M
    rss0 = rss_kib(w.daemon.pid)
    accepted, last_progress = 0, time.monotonic()
    t0 = time.monotonic()
    while accepted < total_max and time.monotonic() - last_progress < 1.0:
        try:
            n = v.sock.send(chunk)
            accepted += n
            last_progress = time.monotonic()
        except BlockingIOError:
            select.select([], [v.sock], [], 0.2)
            w.probe(f"{name}: while it writes", bound=3.0)
    rss1 = rss_kib(w.daemon.pid)
    print(f"# {name}: {accepted} bytes ({accepted // len(one)} requests) taken in "
          f"{time.monotonic() - t0:.2f} s, daemon RSS {rss0} -> {rss1} KiB")
    check(accepted < 16 * M, f"{name}: the daemon stopped reading: it took {accepted} bytes")
    check(rss1 - rss0 < 64 * K + w.quarantine, f"{name}: the daemon's memory stays bounded: +{rss1 - rss0} KiB")
    time.sleep(0.5)
    check(rss_kib(w.daemon.pid) - rss1 < 8 * K, f"{name}: and does not grow while it waits")
    w.probe(f"{name}: while it does not read", bound=2.0)
    v.close()


def case_slow_writer(w, name):
    v = w.victim()
    data = request(1, REQ_HELLO, f_varint(1, 1) + f_bytes(2, "one byte at a time, " * 4))
    t0 = time.monotonic()
    sent, cut, broke = 0, None, False
    while sent < len(data) and time.monotonic() - t0 < 4 * FRAME_TIMEOUT:
        try:
            v.sock.send(data[sent:sent + 1])
        except (BrokenPipeError, ConnectionResetError):
            broke = True
            break
        sent += 1
        w.probe(f"{name}: after {sent} bytes", bound=2.0)
        if v.readable(0.25):
            cut = time.monotonic() - t0
            break
    check(cut is not None or broke, f"{name}: the daemon cut the writer off ({sent} of {len(data)} bytes)")
    check(sent < len(data), f"{name}: before the frame was complete")
    if cut is not None:
        check(FRAME_TIMEOUT * 0.7 <= cut <= FRAME_TIMEOUT + 2.5,
              f"{name}: after about frame-timeout ({FRAME_TIMEOUT} s): {cut:.2f} s")
        r = v.read()
        check(status(r) == PROTOCOL_ERROR and "incomplete" in message(r),
              f"{name}: with a PROTOCOL_ERROR that says why: {r}")
        check(v.at_eof(), f"{name}: then the connection is closed")
    v.close()

    # Slow, but each frame within the timeout: the timeout counts from a
    # frame's first byte, not the connection's, so this one is served.
    v = w.victim()
    frames = [request(i + 1, REQ_GET_CLIENT, b"") for i in range(4)]
    step = FRAME_TIMEOUT * 0.45 / len(frames[0])
    t0 = time.monotonic()
    for data in frames:
        for i in range(len(data)):
            v.send(data[i:i + 1])
            time.sleep(step)
    took = time.monotonic() - t0
    got = [(first(r, RESP_ID, 0), status(r)) for r in (v.reply() for _ in frames)]
    check(got == [(i + 1, OK) for i in range(len(frames))],
          f"{name}: frames each within the timeout, {took:.1f} s in all, are served: {got}")
    check(took > FRAME_TIMEOUT, f"{name}: (the whole took longer than the timeout: {took:.1f} s)")
    v.close()


def case_silent(w, name):
    quiet = [Conn(w.sock_path) for _ in range(20)]
    v = w.victim()   # says something first, then nothing
    t0 = time.monotonic()
    while time.monotonic() - t0 < FRAME_TIMEOUT + 1.0:
        w.probe(name, bound=2.0)
        time.sleep(0.3)
    check(not any(q.readable(0) for q in quiet + [v]),
          f"{name}: a silent connection is neither answered nor closed (no frame begun, "
          "no idle-timeout)")
    check(status(quiet[7].hello()) == OK, f"{name}: and is served when it speaks")
    for q in quiet + [v]:
        q.close()


def case_half_close(w, name):
    v = w.victim()
    v.sock.shutdown(socket.SHUT_WR)
    check(v.at_eof(), f"{name}: nothing, then a half-close: the daemon closes")
    v.close()

    v = w.victim()
    v.send(b"".join(request(i + 1, REQ_GET_GROUP, f_bytes(1, "/by")) for i in range(3)))
    v.sock.shutdown(socket.SHUT_WR)
    ids = []
    while (r := v.reply()) is not None:
        ids.append((first(r, RESP_ID, 0), status(r)))
    check(ids == [(1, OK), (2, OK), (3, OK)], f"{name}: three requests then a half-close: "
          f"all answered, then the close: {ids}")
    v.close()

    v = w.victim()
    v.send(request(1, REQ_HELLO, f_varint(1, 1)) + varint(50) + b"\x08")
    v.sock.shutdown(socket.SHUT_WR)
    t0 = time.monotonic()
    r = v.reply()
    check(status(r) == OK and first(r, RESP_ID) == 1, f"{name}: a frame, part of one, a half-close: "
          f"the frame is answered: {r}")
    check(v.at_eof() and time.monotonic() - t0 < FRAME_TIMEOUT,
          f"{name}: and the close follows at once, not at the frame timeout")
    v.close()

    # Half-closed with more to say than the socket holds: every reply
    # still comes, then the close.
    n = 3000
    v = w.victim()
    v.send(b"".join(request(i + 1, REQ_LIST, f_bytes(1, "/") + f_varint(2, 1)) for i in range(n)))
    v.sock.shutdown(socket.SHUT_WR)
    w.probe(f"{name}: a large backlog half-closed")
    count = 0
    while (r := v.reply()) is not None:
        count += first(r, RESP_ID, 0) == count + 1 and status(r) == OK
    check(count == n, f"{name}: {n} Lists then a half-close: {count} answered in order")
    v.close()


CASES = [
    ("truncated frames", case_truncated),
    ("a huge length prefix", case_huge_prefix),
    ("overlong varints", case_overlong),
    ("random bodies", case_random),
    ("NUL and oversized strings", case_strings),
    ("a flood of subscribes", case_subscribe_flood),
    ("a subscriber that never reads", case_unread_events),
    ("a reader that never reads", case_never_reads),
    ("a slow writer", case_slow_writer),
    ("silent clients", case_silent),
    ("half-closed clients", case_half_close),
]


# ---- the bystanders ----

def setup(w):
    root = w.root = Conn(w.sock_path)
    check(status(root.hello()) == OK, "hello")
    for path, limits, owner in (
            ("/by", b"", None),
            ("/by/a", b"", None),
            ("/by/b", f_varint(2, 512 * K), None),          # high: counts high events
            ("/by/c", f_varint(1, 2 * M), None),            # max: counts max events
            ("/by/c/deep", b"", None),
            ("/victim", b"", None),
            ("/victim/ev", f_varint(1, 4 * K), None),
            ("/rnd", b"", NOBODY)):
        body = f_bytes(1, path) + (f_bytes(2, limits) if limits else b"")
        if owner is not None:
            body += f_varint(3, owner)
        r = root.call(REQ_CREATE, body)
        check(status(r) == OK, f"create {path}: {status(r)} {message(r)}")

    # Four bystander processes, each one session in its group.
    for who, group, charges in (
            ("A", "/by/a", (("anon", 3 * M), ("file", 700 * K))),
            ("B", "/by/b", (("anon", M), ("shmem", 300 * K), ("swap", 128 * K))),
            ("C", "/by/c", (("file", 1536 * K),)),
            ("D", "/by/c/deep", (("anon", 200 * K), ("sock", 64 * K)))):
        conn_maker = Connector(w.sock_path)
        conn = conn_maker.connect()
        check(status(conn.hello()) == OK, f"bystander {who}: hello")
        for stat, nbytes in charges:
            r = conn.call(REQ_CHARGE, charge_body(group, nbytes, stat))
            check(status(r) == OK, f"bystander {who}: charge {nbytes} {stat} to {group}: {message(r)}")
        w.bystanders.append((who, conn_maker, conn, group))
    by_a = w.bystanders[0][2]
    r = by_a.call(REQ_SUBSCRIBE, f_bytes(1, "/victim"))
    check(status(r) == OK, "bystander A subscribes to /victim")
    # C's next charge is refused by /by/c's max: a max event, a failcnt.
    r = w.bystanders[2][2].call(REQ_CHARGE, charge_body("/by/c", M, "file"))
    check(status(r) == LIMIT_EXCEEDED, f"bystander C is refused by max: {status(r)}")
    for path, stat, nbytes in (("/by/a", "anon", 2 * M), ("/by/b", "file", 256 * K),
                               ("/by/c/deep", "shmem", 64 * K)):
        r = root.call(REQ_CHARGE, charge_body(path, nbytes, stat, keep=True))
        check(status(r) == OK, f"kept charge of {nbytes} {stat} in {path}")

    w.nobody = Connector(w.sock_path, uid=NOBODY)
    # The kept charges are on disk before the first case compares them.
    check(wait_until(lambda: len([1 for _, k in w.kept() if k]) == 3),
          f"the state file holds the three kept charges: {w.kept()}")
    g = {x["path"]: x for x in list_groups(root, "/by")}
    check(dict(g["/by/c"]["events_local"]).get("max") == 1, "/by/c counted its max event")
    check(dict(g["/by/b"]["events_local"]).get("high", 0) > 0, "/by/b counted high events")
    want = 3 * M + 700 * K + M + 300 * K + 128 * K + 1536 * K + 200 * K + 64 * K + 2 * M + 256 * K + 64 * K
    check(g["/by"]["current"] == want, f"/by holds {g['/by']['current']}, want {want}")
    w.clients = {who: client_info(root, c.pid) for who, c, _, _ in w.bystanders}
    for who, (anon, file, shmem, swap) in (("A", (3 * M, 700 * K, 0, 0)),
                                           ("B", (M, 0, 300 * K, 128 * K)),
                                           ("C", (0, 1536 * K, 0, 0)),
                                           ("D", (200 * K, 0, 0, 0))):   # sock feeds no counter
        got = w.clients[who]
        check((got["anon"], got["file"], got["shmem"], got["swap"]) == (anon, file, shmem, swap),
              f"bystander {who}'s client counters: {got}")


def on_alarm(signum, frame):
    faulthandler.dump_traceback()
    raise TimeoutError("the test ran out of its 55 s")


def main():
    memacctd = os.environ["MEMACCTD"]
    if os.geteuid() != 0:
        print("SKIP: not root: the bystanders and uid nobody need setuid")
        return 77
    tmp = tempfile.mkdtemp(prefix="memacct-hostile.")
    os.chmod(tmp, 0o755)   # uid nobody reaches the socket through it
    sock_path = os.path.join(tmp, "run", "memacctd.sock")
    state_dir = os.path.join(tmp, "state")
    conf = os.path.join(tmp, "memacctd.conf")
    with open(conf, "w") as f:
        f.write(f"[limits]\nframe-timeout = {FRAME_TIMEOUT}\n")
    log = open(os.path.join(tmp, "daemon.log"), "w+")
    daemon = subprocess.Popen([memacctd, "--socket", sock_path, "--state-dir", state_dir,
                               "--config", conf, "--workers", "2", "--bus", "none", "-v"],
                              stdout=log, stderr=subprocess.STDOUT)
    w = World(sock_path, os.path.join(state_dir, "state"), daemon)
    try:
        deadline = time.monotonic() + 30
        while not os.path.exists(sock_path):
            if daemon.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("memacctd did not start")
            time.sleep(0.05)
        # Bounded: a daemon that stops answering fails the test, not hangs it.
        signal.signal(signal.SIGALRM, on_alarm)
        signal.alarm(55)
        setup(w)
        for name, fn in CASES:
            w.run_case(name, fn)
    except Exception as e:  # counted, and the daemon still stopped
        check(False, f"stopped early: {type(e).__name__}: {e}")
    finally:
        signal.alarm(0)
        for _, connector, conn, _ in w.bystanders:
            conn.close()
            connector.close()
        if w.nobody:
            w.nobody.close()
        if w.root:
            w.root.close()
        daemon.send_signal(signal.SIGTERM)
        try:
            rc = daemon.wait(timeout=30)
        except subprocess.TimeoutExpired:
            daemon.kill()
            rc = daemon.wait()
        check(rc == 0, f"memacctd exits 0 on SIGTERM (status {rc})")
        took = time.monotonic() - START
        check(took < 60, f"the test takes under 60 s ({took:.1f} s)")
        if TALLY.failed:
            log.seek(0)
            sys.stderr.write("--- daemon log ---\n" + log.read()[-20000:])
        log.close()
        shutil.rmtree(tmp, ignore_errors=True)
    return TALLY.summary()


if __name__ == "__main__":
    sys.exit(main())
