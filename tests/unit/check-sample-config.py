#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""The sample configuration (units/memacctd.conf) lists every key the
parser knows (daemon/base/config.c's table), in its own section, and no
key the parser does not know: a key added to one and not the other fails.

Usage: check-sample-config.py SOURCE_ROOT
"""

import re
import sys

root = sys.argv[1]
with open(f"{root}/daemon/base/config.c", encoding="utf-8") as f:
    known = set(re.findall(r'KEY\("([a-z]+)", "([a-z-]+)"', f.read()))
listed, section = set(), None
with open(f"{root}/units/memacctd.conf", encoding="utf-8") as f:
    for line in f:
        m = re.match(r"^\s*\[([a-z]+)\]", line)
        if m:
            section = m.group(1)
            continue
        m = re.match(r"^#?([a-z][a-z-]*) =", line)
        if m and section:
            listed.add((section, m.group(1)))
bad = False
if len(known) < 20:
    print(f"only {len(known)} keys read from config.c: the pattern no longer matches")
    bad = True
for s, k in sorted(known - listed):
    print(f"units/memacctd.conf: [{s}] {k} is missing")
    bad = True
for s, k in sorted(listed - known):
    print(f"units/memacctd.conf: [{s}] {k} is no key of the parser")
    bad = True
print(f"{len(known)} keys, {len(listed)} in the sample")
sys.exit(1 if bad else 0)
