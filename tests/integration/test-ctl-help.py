#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""memacctctl's commands, three ways, must agree: the dispatch table
(client/ctl/verbs.c), --help, and memacctctl(1)'s SYNOPSIS. Each command
has help of its own, as `memacctctl help CMD` and `memacctctl CMD --help`,
which starts with the command's own line of --help.

Usage: test-ctl-help.py MEMACCTCTL SOURCE_ROOT
"""

import os
import re
import subprocess
import sys

ctl, root = sys.argv[1], sys.argv[2]
failed = passed = 0


def check(ok, what, detail=""):
    global failed, passed
    if ok:
        passed += 1
    else:
        failed += 1
        print(f"FAIL: {what}{': ' + detail if detail else ''}")


with open(os.path.join(root, "client", "ctl", "verbs.c"), encoding="utf-8") as f:
    table = set(re.findall(r'^\s*\{ "([a-z-]+)", -?\d+, -?\d+, \w+ \},', f.read(), re.M))

helptext = subprocess.run([ctl, "--help"], capture_output=True, text=True, check=True).stdout
listed = set(re.findall(r"^  ([a-z][a-z-]*)\b", helptext.split("Options:")[0], re.M))

with open(os.path.join(root, "man", "memacctctl.1"), encoding="utf-8") as f:
    man = f.read()
synopsis = man[man.index(".Sh SYNOPSIS"):man.index(".Sh DESCRIPTION")]
in_man = set(re.findall(r"^\.Nm\n\.Cm ([a-z][a-z-]*)", synopsis, re.M)) - {"help"}  # main() answers it

check(len(table) >= 15, "the dispatch table is read", repr(sorted(table)))
check(listed == table, "--help lists every command of the dispatch table, and no other",
      f"missing {sorted(table - listed)}, extra {sorted(listed - table)}")
check(in_man == table, "the man page's SYNOPSIS lists every command, and no other",
      f"missing {sorted(table - in_man)}, extra {sorted(in_man - table)}")

for cmd in sorted(table):
    for argv in ([ctl, "help", cmd], [ctl, cmd, "--help"]):
        r = subprocess.run(argv, capture_output=True, text=True)
        check(r.returncode == 0 and r.stdout.startswith(f"  {cmd}"), f"{' '.join(argv[1:])} gives the command's help",
              f"exit {r.returncode}: {r.stdout[:80]!r} {r.stderr[:80]!r}")
r = subprocess.run([ctl, "help", "frobnicate"], capture_output=True, text=True)
check(r.returncode == 2 and "unknown command 'frobnicate'" in r.stderr, "help of no command is a usage error", r.stderr)

# The bash completion offers the same commands, and completes one.
with open(os.path.join(root, "data", "completion", "memacctctl.bash"), encoding="utf-8") as f:
    m = re.search(r'_memacctctl_commands="([^"]*)"', f.read())
completed = set(m.group(1).split()) if m else set()
check(completed == table | {"help"}, "the bash completion offers every command, and no other",
      f"missing {sorted(table | {'help'} - completed)}, extra {sorted(completed - table - {'help'})}")
script = (f"source {os.path.join(root, 'data', 'completion', 'memacctctl.bash')}; "
          "COMP_WORDS=(memacctctl sho); COMP_CWORD=1; _memacctctl; echo \"${COMPREPLY[*]}\"; "
          "COMP_WORDS=(memacctctl rule a); COMP_CWORD=2; _memacctctl; echo \"${COMPREPLY[*]}\"; "
          "COMP_WORDS=(memacctctl charge /a 4K --stat sh); COMP_CWORD=5; _memacctctl; echo \"${COMPREPLY[*]}\"")
r = subprocess.run(["bash", "-c", script], capture_output=True, text=True)
check(r.stdout.split("\n")[:3] == ["show", "add", "shmem"], "bash completes a command, a rule verb, a stat item",
      repr(r.stdout) + r.stderr)

print(f"{passed} passed, {failed} failed")
sys.exit(1 if failed else 0)
