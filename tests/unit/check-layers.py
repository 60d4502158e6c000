#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""The daemon's rooms, and memacctctl, include only what they may.

From the bottom up (docs/design.md draws it):

- daemon/core: libc, atomics, pthreads, liburcu, sys/mman.h (anonymous
  memory, allocation rather than I/O), its own headers and of common/
  only macro.h and membarrier.h (no I/O, no transport types);
- daemon/base: common/ and the data model (core/model.h: types, limits,
  string tables, the path grammar) only; no transport header;
- daemon/state and daemon/cgroup: the core, base and common only: the
  saver knows no policy, and neither room knows the other or the service;
- daemon/service: everything below it, no transport header (event2,
  sd-bus, protobuf-c, or a file of sock/, bus/, http/);
- the transports (daemon/sock, daemon/bus, daemon/http): the service,
  base, common, proto and of the core only core/model.h, directly or
  through any header (each transport source is run through the
  preprocessor with its own command from compile_commands.json, so one
  that comes in through a service header counts too); no other
  transport's files;
- at link level, the transports' undefined symbols that the core defines
  are the functions core/model.h declares, and none that state/ or
  cgroup/ define (nm of the static libraries);
- client/ctl (memacctctl): libmemacct's public headers (memacct.h,
  memacct-cgroup.h, memacct-region.h), common/ and its own files, nothing of client/lib.

Run by the build (a failure fails it) and as a unit test. With --stamp,
touch that file on success.
"""

import argparse
import glob
import json
import os
import re
import shlex
import subprocess
import sys

CORE_SYSTEM = re.compile(r"<(assert|errno|sched|stdatomic|stdbool|stddef|stdint|stdlib|string|"
                         r"pthread|sys/types|sys/mman)\.h>|<urcu/")
TRANSPORT_SYSTEM = re.compile(r"<(event2/|systemd/sd-bus|protobuf-c/)")
TRANSPORTS = ("sock", "bus", "http")
INCLUDE = re.compile(r'^\s*#\s*include\s*([<"][^>"]+[>"])', re.M)

# Which rooms' headers ("room/x.h") each room of daemon/ may include;
# "model" is core/model.h alone, "core" all of the core. Plain names
# ("macro.h") are common/ or proto/ headers, or the file's own folder's.
ROOMS = {
    "base": {"base", "model"},
    "state": {"state", "base", "core"},
    "cgroup": {"cgroup", "base", "core"},
    "service": {"service", "state", "cgroup", "base", "core"},
}
for _t in TRANSPORTS:
    ROOMS[_t] = {_t, "service", "base", "model"}
CLIENT_PUBLIC = {"memacct.h", "memacct-cgroup.h", "memacct-region.h"}


def includes(path):
    with open(path, encoding="utf-8") as f:
        return INCLUDE.findall(f.read())


def sources(folder):
    return sorted(os.path.join(folder, n) for n in os.listdir(folder) if n.endswith((".c", ".h")))


def plain_headers(src):
    """Headers a room may include by bare name: common/ and proto/."""
    names = set()
    for d in ("common", "proto"):
        names |= {n for n in os.listdir(os.path.join(src, d)) if n.endswith(".h")}
    return names | {"memacct.pb-c.h"}


def check_core(src, bad):
    core = os.path.join(src, "daemon", "core")
    own = set(os.listdir(core)) | {"macro.h", "membarrier.h"}
    for f in sources(core):
        for inc in includes(f):
            if inc.startswith("<") and not CORE_SYSTEM.match(inc):
                bad.append(f"{f}: {inc}: the core has no I/O and no transport types")
            if inc.startswith('"') and inc.strip('"') not in own:
                bad.append(f"{f}: {inc}: the core includes only its own headers")
    return len(sources(core))


def check_rooms(src, bad):
    """Every room of daemon/ above the core, by its quoted includes."""
    plain = plain_headers(src)
    n = 0
    for room, allowed in ROOMS.items():
        folder = os.path.join(src, "daemon", room)
        own = set(os.listdir(folder))
        for f in sources(folder):
            n += 1
            for inc in includes(f):
                name = inc[1:-1]
                if inc.startswith("<"):
                    if room not in TRANSPORTS and TRANSPORT_SYSTEM.match(inc):
                        bad.append(f"{f}: {inc}: only a transport knows a transport's library")
                    continue
                top = name.split("/")[0] if "/" in name else None
                if top is None:
                    if name not in plain and name not in own:
                        bad.append(f"{f}: {inc}: not a header of common/, proto/ or {room}/")
                    if room in ("base", "state", "cgroup") and name.endswith("pb-c.h"):
                        bad.append(f"{f}: {inc}: {room}/ knows no wire format")
                    continue
                if name == "core/model.h" and "model" in allowed:
                    continue
                if top in allowed:
                    continue
                bad.append(f"{f}: {inc}: {room}/ sees {', '.join(sorted(allowed))} only")
    return n


def preprocessed_headers(entry):
    """The headers the compiler reads for @entry: its command with -M."""
    args = shlex.split(entry["command"])
    out, skip = [], False
    for a in args:
        if skip:
            skip = False
            continue
        if a in ("-MQ", "-MF", "-MT", "-o"):
            skip = True
            continue
        if a in ("-MD", "-MMD", "-c"):
            continue
        out.append(a)
    out.append("-M")
    r = subprocess.run(out, cwd=entry["directory"], capture_output=True, text=True, check=False)
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(out)}: {r.stderr.strip()}")
    return r.stdout.replace("\\\n", " ").split(":", 1)[-1].split()


def check_transport_deps(src, build, bad):
    """Every header each transport source is compiled with, from the compiler."""
    db = os.path.join(build, "compile_commands.json")
    if not os.path.exists(db):
        bad.append(f"{db}: missing; cannot check what the transports include")
        return 0
    with open(db, encoding="utf-8") as f:
        entries = json.load(f)
    daemon = os.path.realpath(os.path.join(src, "daemon"))
    model = os.path.join(daemon, "core", "model.h")
    below = [os.path.join(daemon, r) + os.sep for r in ("core", "state", "cgroup")]
    prefixes = [os.path.join(daemon, t) + os.sep for t in TRANSPORTS]
    checked = 0
    for e in entries:
        file = os.path.realpath(os.path.join(e["directory"], e["file"]))
        if not any(file.startswith(p) for p in prefixes) or "command" not in e:
            continue
        try:
            deps = preprocessed_headers(e)
        except RuntimeError as err:
            bad.append(str(err))
            continue
        checked += 1
        for d in deps:
            real = os.path.realpath(os.path.join(e["directory"], d))
            if any(real.startswith(b) for b in below) and real != model:
                bad.append(f"{os.path.relpath(file, src)}: includes {os.path.relpath(real, src)} "
                           "(through its headers): a transport sees the service, base and "
                           "core/model.h only")
    if checked == 0:
        bad.append(f"{db}: no transport source found to check")
    return checked


def nm_symbols(lib, kind):
    """Global symbols of archive @lib: defined (kind "D") or undefined ("U")."""
    r = subprocess.run(["nm", "-g", "--defined-only" if kind == "D" else "--undefined-only",
                        "--format=posix", lib], capture_output=True, text=True, check=False)
    if r.returncode != 0:
        raise RuntimeError(f"nm {lib}: {r.stderr.strip()}")
    return {line.split()[0] for line in r.stdout.splitlines()
            if line and not line.endswith(":") and len(line.split()) >= 2}


def model_functions(src):
    with open(os.path.join(src, "daemon", "core", "model.h"), encoding="utf-8") as f:
        text = f.read()
    return set(re.findall(r"^[A-Za-z_][\w ]*?\**\b(mem_\w+)\(", text, re.M))


def find_lib(build, name):
    hits = glob.glob(os.path.join(build, "daemon", "**", f"lib{name}.a"), recursive=True)
    return hits[0] if hits else None


def check_link(src, build, bad):
    """The transports' undefined symbols against what the rooms below define."""
    libs = {n: find_lib(build, n) for n in ("memacct-core", "memacctd-state", "memacctd-cgroup",
                                            "memacctd-sock", "memacctd-bus", "memacctd-http")}
    missing = [n for n, p in libs.items() if not p]
    if missing:
        bad.append(f"{build}: no static library {', '.join(missing)}: cannot check the links")
        return 0
    try:
        core = nm_symbols(libs["memacct-core"], "D")
        below = nm_symbols(libs["memacctd-state"], "D") | nm_symbols(libs["memacctd-cgroup"], "D")
        allowed = model_functions(src)
        n = 0
        for t in TRANSPORTS:
            undefined = nm_symbols(libs["memacctd-" + t], "U")
            n += 1
            for sym in sorted(undefined & core - allowed):
                bad.append(f"daemon/{t}: uses the core's {sym}(), which core/model.h does not declare")
            for sym in sorted(undefined & below):
                bad.append(f"daemon/{t}: uses {sym}() of state/ or cgroup/: a transport calls the service")
    except RuntimeError as err:
        bad.append(str(err))
        return 0
    return n


def check_client(src, bad):
    ctl = os.path.join(src, "client", "ctl")
    own = set(os.listdir(ctl))
    common = set(os.listdir(os.path.join(src, "common")))
    for f in sources(ctl):
        for inc in includes(f):
            name = inc[1:-1]
            if inc.startswith('"') and name not in own | common | CLIENT_PUBLIC:
                bad.append(f"{f}: {inc}: memacctctl uses libmemacct's public headers only "
                           f"({', '.join(sorted(CLIENT_PUBLIC))})")
    return len(sources(ctl))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--source", required=True)
    ap.add_argument("--build")
    ap.add_argument("--stamp")
    a = ap.parse_args()
    bad = []
    n_core = check_core(a.source, bad)
    n_rooms = check_rooms(a.source, bad)
    n_client = check_client(a.source, bad)
    n_deps = check_transport_deps(a.source, a.build, bad) if a.build else 0
    n_link = check_link(a.source, a.build, bad) if a.build else 0
    if bad:
        print("layering violations:", file=sys.stderr)
        for b in bad:
            print("  " + b, file=sys.stderr)
        return 1
    print(f"core: {n_core} files; rooms above it: {n_rooms} files; memacctctl: {n_client} files; "
          f"{n_deps} transport objects' headers and {n_link} transport libraries' symbols checked")
    if a.stamp:
        with open(a.stamp, "w", encoding="utf-8") as f:
            f.write("ok\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
