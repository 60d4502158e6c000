#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""The daemon's layers include only what they may.

- daemon/core: libc, atomics, pthreads, liburcu, sys/mman.h (anonymous
  memory, allocation rather than I/O), its own headers and of common/
  only macro.h and membarrier.h (no I/O, no transport types);
- daemon/service: no transport header (event2, sd-bus, protobuf-c, or a
  file of sock/, bus/, http/);
- the transports (daemon/sock, daemon/bus, daemon/http): no other
  transport's files, and of the core only core/model.h, directly or
  through any header: each transport source is run through the
  preprocessor with its own command (compile_commands.json) to list the
  headers it reads, so one that comes in through a service header
  counts too.

Run by the build (a failure fails it) and as a unit test. With --stamp,
touch that file on success.
"""

import argparse
import json
import os
import re
import shlex
import subprocess
import sys

CORE_SYSTEM = re.compile(r"<(assert|errno|sched|stdatomic|stdbool|stddef|stdint|stdlib|string|"
                         r"pthread|sys/types|sys/mman)\.h>|<urcu/")
TRANSPORTS = ("sock", "bus", "http")
INCLUDE = re.compile(r'^\s*#\s*include\s*([<"][^>"]+[>"])', re.M)


def includes(path):
    with open(path, encoding="utf-8") as f:
        return INCLUDE.findall(f.read())


def sources(folder):
    return sorted(os.path.join(folder, n) for n in os.listdir(folder) if n.endswith((".c", ".h")))


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


def check_service(src, bad):
    service = os.path.join(src, "daemon", "service")
    for f in sources(service):
        for inc in includes(f):
            name = inc[1:-1]
            if name.startswith(("event2/", "systemd/sd-bus")) or name.endswith("pb-c.h") or \
               name.split("/")[0] in TRANSPORTS:
                bad.append(f"{f}: {inc}: the service layer knows no transport")
    return len(sources(service))


def check_transport_direct(src, bad):
    n = 0
    for t in TRANSPORTS:
        for f in sources(os.path.join(src, "daemon", t)):
            n += 1
            for inc in includes(f):
                name = inc[1:-1]
                top = name.split("/")[0]
                if inc.startswith('"') and top == "core" and name != "core/model.h":
                    bad.append(f"{f}: {inc}: a transport calls the service, not the core")
                if inc.startswith('"') and top in TRANSPORTS and top != t:
                    bad.append(f"{f}: {inc}: one transport does not use another")
    return n


def preprocessed_headers(entry):
    """The headers the compiler reads for @entry: its command with -MM."""
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
    core = os.path.realpath(os.path.join(src, "daemon", "core"))
    model = os.path.join(core, "model.h")
    prefixes = [os.path.realpath(os.path.join(src, "daemon", t)) + os.sep for t in TRANSPORTS]
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
            if real.startswith(core + os.sep) and real != model:
                bad.append(f"{os.path.relpath(file, src)}: includes {os.path.relpath(real, src)} "
                           "(through its headers): a transport sees only core/model.h of the core")
    if checked == 0:
        bad.append(f"{db}: no transport source found to check")
    return checked


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--source", required=True)
    ap.add_argument("--build")
    ap.add_argument("--stamp")
    a = ap.parse_args()
    bad = []
    n_core = check_core(a.source, bad)
    n_service = check_service(a.source, bad)
    n_direct = check_transport_direct(a.source, bad)
    n_deps = check_transport_deps(a.source, a.build, bad) if a.build else 0
    if bad:
        print("layering violations:", file=sys.stderr)
        for b in bad:
            print("  " + b, file=sys.stderr)
        return 1
    print(f"core: {n_core} files; service: {n_service}; transports: {n_direct} files, "
          f"{n_deps} objects' headers checked")
    if a.stamp:
        with open(a.stamp, "w", encoding="utf-8") as f:
            f.write("ok\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
