#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""README.md's layout table names every module of the tree.

A newcomer reads the table first, so a module it does not name is one
they cannot find. The tree is read at test time: every .c and .h file
under daemon/, client/, common/ and proto/ is a module by its base name
("wire-hot" for daemon/sock/wire-hot.c and wire-hot.h), and must be
named in the table's row for its folder:

- a row's folders are those of the paths in its first cell (`daemon/core/`
  is daemon/core, `daemon/main.c` is daemon); a file belongs to the row of
  its own folder, or else of the nearest folder above it;
- a module is named by a backquoted word of that row equal to its base
  name, with or without .c or .h, or by a pattern with * in it
  (`service-*`, `client-bus*`); a word that is a path counts by its last
  component (`memacct/v1/memacct.proto` names memacct);
- foo-internal.h is covered by its module foo: it is foo's own header
  for the files of foo.

Each module the table misses is named, so a rename fails this test until
the table says the new name.
"""

import argparse
import fnmatch
import os
import re
import sys

FOLDERS = ("daemon", "client", "common", "proto")
CODE = re.compile(r"`([^`]+)`")


def table_rows(readme):
    """The rows of the table under "## Layout": [(folders, words)]."""
    with open(readme, encoding="utf-8") as f:
        lines = f.read().splitlines()
    try:
        start = lines.index("## Layout")
    except ValueError:
        return None
    rows = []
    for line in lines[start + 1:]:
        if line.startswith("## "):
            break
        if not line.startswith("|") or set(line) <= set("|-: "):
            continue
        cells = line.strip().strip("|").split("|")
        folders = set()
        for path in CODE.findall(cells[0]):
            if "/" not in path:
                continue
            path = path.rstrip("/")
            # `daemon/main.c` stands for its folder, `daemon/core/` for itself.
            folders.add(os.path.dirname(path) if os.path.splitext(path)[1] else path)
        words = set()
        for w in CODE.findall(line):
            w = w.strip().rstrip("/")
            base = w.rsplit("/", 1)[-1]
            words.add(base)
            for ext in (".c", ".h"):
                if base.endswith(ext):
                    words.add(base[:-len(ext)])
        rows.append((folders, words))
    return rows


def modules(src):
    """{(folder, module): a file of it}, folders relative to @src."""
    found = {}
    for top in FOLDERS:
        for root, dirs, files in os.walk(os.path.join(src, top)):
            dirs[:] = sorted(d for d in dirs if not d.startswith("."))
            for name in sorted(files):
                base, ext = os.path.splitext(name)
                if ext not in (".c", ".h"):
                    continue
                folder = os.path.relpath(root, src)
                found.setdefault((folder, base), os.path.join(folder, name))
    return found


def row_for(rows, folder):
    """The words of the row of @folder, or of the nearest folder above it."""
    f = folder
    while f and f != ".":
        words = set()
        hit = False
        for folders, w in rows:
            if f in folders:
                words |= w
                hit = True
        if hit:
            return words
        f = os.path.dirname(f)
    return None


def named(words, base):
    if base in words:
        return True
    return any("*" in w and fnmatch.fnmatchcase(base, w) for w in words)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--source", required=True)
    a = ap.parse_args()
    readme = os.path.join(a.source, "README.md")
    rows = table_rows(readme)
    if not rows:
        print(f"{readme}: no table under '## Layout'", file=sys.stderr)
        return 1
    missing = []
    mods = modules(a.source)
    for (folder, base), path in sorted(mods.items()):
        words = row_for(rows, folder)
        if words is None:
            missing.append(f"{path}: module {base}: no row of the layout table for {folder}/")
            continue
        owner = base[:-len("-internal")] if base.endswith("-internal") else None
        if named(words, base) or (owner and named(words, owner)):
            continue
        missing.append(f"{path}: module {base}: not named in the row for {folder}/")
    if missing:
        print("README.md's layout table misses these modules (add each to its row):",
              file=sys.stderr)
        for m in missing:
            print("  " + m, file=sys.stderr)
        return 1
    print(f"README.md's layout table names all {len(mods)} modules")
    return 0


if __name__ == "__main__":
    sys.exit(main())
