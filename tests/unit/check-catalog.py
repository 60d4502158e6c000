#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""The journal catalog (data/catalog/memacctd.catalog) has one entry for
each MESSAGE_ID the daemon sends (daemon/service/message-ids.h), each ID
is used by the code, and every entry has a Subject, Defined-By and a body
that names only fields the daemon sets: an ID added to one place and not
the others fails.

Usage: check-catalog.py SOURCE_ROOT
"""

import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile

root = sys.argv[1]
with open(f"{root}/daemon/service/message-ids.h", encoding="utf-8") as f:
    ids = dict(re.findall(r'#define (MESSAGE_[A-Z_]+) "([0-9a-f]{32})"', f.read()))
code = ""
for path in glob.glob(f"{root}/daemon/**/*.c", recursive=True):
    with open(path, encoding="utf-8") as f:
        code += f.read()
fields_set = set(re.findall(r'"(MEMACCT_[A-Z]+)=', code))
with open(f"{root}/data/catalog/memacctd.catalog", encoding="utf-8") as f:
    text = f.read()
entries = {}
for block in re.split(r"^-- ", text, flags=re.M)[1:]:
    head, _, body = block.partition("\n")
    entries[head.strip()] = body

bad = []
if len(ids) < 10:
    bad.append(f"only {len(ids)} IDs read from message-ids.h: the pattern no longer matches")
if len(set(ids.values())) != len(ids):
    bad.append("two messages share an ID")
for name, mid in sorted(ids.items()):
    if mid not in entries:
        bad.append(f"{name} ({mid}) has no catalog entry")
    if not re.search(rf"\b{name}\b", code):
        bad.append(f"{name} is sent by no code")
for mid, body in entries.items():
    if mid not in ids.values():
        bad.append(f"catalog entry {mid} is no ID of message-ids.h")
    for key in ("Subject: ", "Defined-By: memacctd", "Documentation: man:"):
        if key not in body:
            bad.append(f"catalog entry {mid} lacks {key.strip()}")
    if "\n\n" not in body or len(body.split("\n\n", 1)[1].strip()) < 40:
        bad.append(f"catalog entry {mid} has no explanation")
    for field in re.findall(r"@([A-Z_]+)@", body):
        if field not in fields_set:
            bad.append(f"catalog entry {mid} names @{field}@, which no message sets")
# journalctl itself reads the file as it would once installed.
if shutil.which("journalctl"):
    with tempfile.TemporaryDirectory() as r:
        os.makedirs(f"{r}/usr/lib/systemd/catalog")
        os.makedirs(f"{r}/var/lib/systemd/catalog")
        shutil.copy(f"{root}/data/catalog/memacctd.catalog", f"{r}/usr/lib/systemd/catalog/")
        u = subprocess.run(["journalctl", f"--root={r}", "--update-catalog"], capture_output=True, text=True)
        listed = subprocess.run(["journalctl", f"--root={r}", "--list-catalog"], capture_output=True, text=True)
        got = {line.split()[0] for line in listed.stdout.splitlines() if line.strip()}
        if u.returncode or u.stderr.strip() or got != set(ids.values()):
            bad.append(f"journalctl --update-catalog: rc {u.returncode} {u.stderr.strip()!r}; "
                       f"listed {len(got)} of {len(ids)}: {sorted(set(ids.values()) - got)}")
else:
    print("journalctl not found: the catalog's format is checked by this script alone")
for b in bad:
    print(b)
print(f"{len(ids)} message IDs, {len(entries)} catalog entries, fields {sorted(fields_set)}")
sys.exit(1 if bad else 0)
