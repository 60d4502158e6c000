#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""check-syscalls.py STRACE-LOG SYSCALL-FILTER-LISTING WRITABLE-DIR...

Checks what memacctd did, as `strace -f` recorded it, against the
hardening of units/memacctd.service.in:
- SystemCallFilter=@system-service: every syscall made is in the set
  (SYSCALL-FILTER-LISTING is `systemd-analyze syscall-filter` output; the
  groups are expanded here);
- RestrictAddressFamilies=AF_UNIX: every socket() is AF_UNIX;
- MemoryDenyWriteExecute=yes: no mapping is both writable and executable;
- ProtectSystem=strict, PrivateTmp=yes: every file created, written,
  renamed, removed or bound is below one of the WRITABLE-DIRs (what
  StateDirectory= and RuntimeDirectory= make writable).
Prints each violation; exit status 0 when there is none.
"""

import os
import re
import sys

CALL = re.compile(r'^\d+\s+(?:<\.\.\. )?([a-z0-9_]+)[( ]')


def expand(listing, group, seen=None):
    seen = seen if seen is not None else set()
    out = set()
    for name in listing.get(group, []):
        if name.startswith('@'):
            if name not in seen:
                seen.add(name)
                out |= expand(listing, name, seen)
        else:
            out.add(name)
    return out


def parse_listing(path):
    groups, current = {}, None
    for line in open(path):
        s = line.strip()
        if not s or s.startswith('#'):
            continue
        if not line.startswith(' '):
            current = s
            groups[current] = []
        elif current:
            groups[current].append(s)
    return groups


AT_PATH = re.compile(r'(?:AT_FDCWD|\d+<([^>]*)>), "((?:[^"\\]|\\.)*)"')


def quoted_paths(line):
    return re.findall(r'"((?:[^"\\]|\\.)*)"', line)


def at_paths(line):
    """(dir, path) of an *at() call as strace -y prints it, joined."""
    return [os.path.join(d, p) if d and not p.startswith('/') else p for d, p in AT_PATH.findall(line)]


def merged(log):
    """The log's lines, a call interrupted by another thread's (strace -f
    "<unfinished ...>" then "<... name resumed>") joined into one."""
    pending = {}
    for line in open(log):
        pid, _, rest = line.rstrip('\n').partition(' ')
        if rest.endswith(' <unfinished ...>'):
            pending[pid] = line.rstrip('\n')[:-len(' <unfinished ...>')]
            continue
        m = re.match(r'\s*<\.\.\. [a-z0-9_]+ resumed>(.*)', rest)
        if m and pid in pending:
            yield pending.pop(pid) + m.group(1)
            continue
        yield line
    yield from pending.values()


def main():
    log, listing, writable = sys.argv[1], sys.argv[2], [os.path.realpath(d) for d in sys.argv[3:]]
    allowed = expand(parse_listing(listing), '@system-service')
    if not allowed:
        print('no syscall in @system-service: cannot read the listing')
        return 1
    problems = []
    used = set()
    for line in merged(log):
        if line.split(None, 1)[1:2] and line.split(None, 1)[1].startswith(('+++', '---')):
            continue
        m = CALL.match(line)
        if not m:
            continue
        name = m.group(1)
        used.add(name)
        if name == 'socket' and 'AF_UNIX' not in line:
            problems.append(f'a socket that is not AF_UNIX: {line.strip()}')
        if name in ('mmap', 'mprotect', 'pkey_mprotect') and 'PROT_WRITE' in line and 'PROT_EXEC' in line:
            problems.append(f'a writable and executable mapping: {line.strip()}')
        writes = None
        if re.search(r'\) += -1 ', line):
            pass  # failed: it wrote nothing (mkdir of an existing parent, say)
        elif name in ('openat', 'openat2') and re.search(r'O_WRONLY|O_RDWR|O_CREAT|O_TRUNC', line):
            writes = at_paths(line)[:1]
        elif name in ('open', 'creat') and re.search(r'O_WRONLY|O_RDWR|O_CREAT|O_TRUNC', line):
            writes = quoted_paths(line)[:1]
        elif name in ('mkdirat', 'unlinkat', 'renameat', 'renameat2', 'fchmodat', 'linkat', 'symlinkat',
                      'mknodat'):
            writes = at_paths(line)
        elif name in ('mkdir', 'unlink', 'rename', 'rmdir', 'chmod', 'link', 'symlink', 'mknod'):
            writes = quoted_paths(line)
        elif name == 'bind' and 'sun_path=' in line:
            writes = re.findall(r'sun_path="([^"]*)"', line)
        for p in writes or []:
            if p.startswith('/dev/'):
                continue
            real = os.path.realpath(p)
            if not any(real == d or real.startswith(d + '/') for d in writable):
                problems.append(f'a write outside the state and runtime directories: {line.strip()}')
    for name in sorted(used - allowed):
        problems.append(f'syscall {name} is not in @system-service')
    for p in problems:
        print(p)
    print(f'{len(used)} syscalls used, all checked; {len(problems)} problems')
    return 1 if problems else 0


if __name__ == '__main__':
    sys.exit(main())
