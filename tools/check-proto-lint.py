#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Check a .proto file against the lint rules memacctd applies by hand.

Debian has no buf, so the subset of buf's STANDARD rules that a file like
proto/memacct/v1/memacct.proto can break is checked here, under buf's rule
names (https://buf.build/docs/lint/rules), plus one rule of our own:

  PACKAGE_DIRECTORY_MATCH       the file sits in ROOT/<package with . as />
  PACKAGE_LOWER_SNAKE_CASE      package components lower_snake_case
  PACKAGE_VERSION_SUFFIX        the last package component is v1, v2, ...
  MESSAGE_PASCAL_CASE           message names PascalCase
  ENUM_PASCAL_CASE              enum names PascalCase
  ENUM_VALUE_UPPER_SNAKE_CASE   enum values UPPER_SNAKE_CASE
  ENUM_VALUE_PREFIX             enum values start with UPPER_SNAKE(Enum)_
  ENUM_ZERO_VALUE_SUFFIX        the zero value ends with _UNSPECIFIED
  ENUM_FIRST_VALUE_ZERO         the first value is 0
  FIELD_LOWER_SNAKE_CASE        field names lower_snake_case
  ONEOF_LOWER_SNAKE_CASE        oneof names lower_snake_case
  FIELD_NOT_KEYWORD (ours)      no field or oneof is named after a keyword of
                                Python, Go, Rust or C++: generated code then
                                needs getattr(), r#name or a mangled name

As with buf, a `// buf:lint:ignore RULE` comment on the lines just above an
element exempts it from RULE when ROOT/buf.yaml says
`allow_comment_ignores: true`.

Usage: check-proto-lint.py [--expect=RULE,...] ROOT FILE...
Exit 0 when clean, 1 with one line per finding on stdout. With --expect
(the checker's own test), exit 0 when each RULE was found, 1 otherwise."""

import os
import re
import sys

PYTHON = """False None True and as assert async await break class continue def
del elif else except finally for from global if import in is lambda nonlocal
not or pass raise return try while with yield match case type _""".split()
GO = """break case chan const continue default defer else fallthrough for
func go goto if import interface map package range return select struct
switch type var""".split()
RUST = """as async await break const continue crate dyn else enum extern false
fn for if impl in let loop match mod move mut pub ref return self Self static
struct super trait true type unsafe use where while abstract become box do
final macro override priv typeof unsized virtual yield try union""".split()
CPP = """alignas alignof and and_eq asm auto bitand bitor bool break case catch
char char8_t char16_t char32_t class compl concept const consteval constexpr
constinit const_cast continue co_await co_return co_yield decltype default
delete do double dynamic_cast else enum explicit export extern false float for
friend goto if inline int long mutable namespace new noexcept not not_eq
nullptr operator or or_eq private protected public register reinterpret_cast
requires return short signed sizeof static static_assert static_cast struct
switch template this thread_local throw true try typedef typeid typename
union unsigned using virtual void volatile wchar_t while xor xor_eq""".split()
KEYWORDS = {}
for lang, words in (("Python", PYTHON), ("Go", GO), ("Rust", RUST), ("C++", CPP)):
    for w in words:
        KEYWORDS.setdefault(w, []).append(lang)

LOWER_SNAKE = re.compile(r"^[a-z][a-z0-9]*(_[a-z0-9]+)*$")
UPPER_SNAKE = re.compile(r"^[A-Z][A-Z0-9]*(_[A-Z0-9]+)*$")
PASCAL = re.compile(r"^[A-Z][A-Za-z0-9]*$")
SCALARS = set("""double float int32 int64 uint32 uint64 sint32 sint64 fixed32
fixed64 sfixed32 sfixed64 bool string bytes""".split())


def upper_snake(name):
    # buf's conversion: a word boundary before each capital that follows a
    # lower-case letter or digit, or that starts a new word after capitals.
    s = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", name)
    s = re.sub(r"([A-Z]+)([A-Z][a-z])", r"\1_\2", s)
    return s.upper()


def lint(root, path, comment_ignores):
    findings = []
    rel = os.path.relpath(path, root)
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")

    def ignored(lineno, rule):
        # The comment lines directly above the element, as buf reads them.
        if not comment_ignores:
            return False
        i = lineno - 2
        while i >= 0 and lines[i].strip().startswith("//"):
            if re.search(r"buf:lint:ignore\s+" + rule + r"\b", lines[i]):
                return True
            i -= 1
        return False

    def report(lineno, rule, what):
        if not ignored(lineno, rule):
            findings.append(f"{rel}:{lineno}: {rule}: {what}")

    stack = []          # ("message"|"enum"|"oneof"|"other", name)
    package = None
    enum_first = {}     # enum name -> whether a value was seen
    for lineno, raw in enumerate(lines, 1):
        line = re.sub(r"//.*", "", raw).strip()
        if not line:
            continue
        m = re.match(r"package\s+([\w.]+)\s*;", line)
        if m:
            package = m.group(1)
            comps = package.split(".")
            for c in comps:
                if not LOWER_SNAKE.match(c):
                    report(lineno, "PACKAGE_LOWER_SNAKE_CASE", f"package component {c!r}")
            if not re.match(r"^v\d+((alpha|beta)\d*)?$", comps[-1]):
                report(lineno, "PACKAGE_VERSION_SUFFIX", f"package {package!r} has no version suffix")
            want = os.path.join(*comps)
            if os.path.dirname(rel) != want:
                report(lineno, "PACKAGE_DIRECTORY_MATCH",
                       f"package {package!r} wants the file in {want}/, not {os.path.dirname(rel) or '.'}/")
            continue
        m = re.match(r"(message|enum|oneof|service|extend)\s+(\w+)\s*\{", line)
        if m:
            kind, name = m.groups()
            if kind == "message" and not PASCAL.match(name):
                report(lineno, "MESSAGE_PASCAL_CASE", f"message {name!r}")
            if kind == "enum":
                if not PASCAL.match(name):
                    report(lineno, "ENUM_PASCAL_CASE", f"enum {name!r}")
                enum_first[name] = False
            if kind == "oneof":
                if not LOWER_SNAKE.match(name):
                    report(lineno, "ONEOF_LOWER_SNAKE_CASE", f"oneof {name!r}")
                if name in KEYWORDS:
                    report(lineno, "FIELD_NOT_KEYWORD",
                           f"oneof {name!r} is a keyword of {', '.join(KEYWORDS[name])}")
            stack.append((kind, name))
            if line.endswith("}"):
                stack.pop()
            continue
        if line.startswith("}"):
            if stack:
                stack.pop()
            continue
        if not stack:
            continue
        kind, owner = stack[-1]
        if kind == "oneof":
            # A oneof's fields are the enclosing message's.
            owner = next((n for k, n in reversed(stack) if k == "message"), owner)
        if kind == "enum":
            m = re.match(r"(\w+)\s*=\s*(-?\d+)", line)
            if not m or m.group(1) in ("option", "reserved"):
                continue
            value, number = m.group(1), int(m.group(2))
            if not UPPER_SNAKE.match(value):
                report(lineno, "ENUM_VALUE_UPPER_SNAKE_CASE", f"{owner}.{value}")
            prefix = upper_snake(owner) + "_"
            if not value.startswith(prefix):
                report(lineno, "ENUM_VALUE_PREFIX", f"{owner}.{value} lacks the prefix {prefix}")
            if not enum_first[owner]:
                enum_first[owner] = True
                if number != 0:
                    report(lineno, "ENUM_FIRST_VALUE_ZERO", f"{owner}.{value} = {number}")
            if number == 0 and not value.endswith("_UNSPECIFIED"):
                report(lineno, "ENUM_ZERO_VALUE_SUFFIX",
                       f"{owner}.{value} = 0, want {prefix}UNSPECIFIED")
        elif kind in ("message", "oneof"):
            m = re.match(r"(?:(?:optional|required|repeated)\s+)?"
                         r"(map\s*<[^>]*>|[\w.]+)\s+(\w+)\s*=\s*\d+", line)
            if not m or m.group(1) in ("option", "reserved", "extensions"):
                continue
            name = m.group(2)
            if not LOWER_SNAKE.match(name):
                report(lineno, "FIELD_LOWER_SNAKE_CASE", f"{owner}.{name}")
            if name in KEYWORDS:
                report(lineno, "FIELD_NOT_KEYWORD",
                       f"{owner}.{name} is a keyword of {', '.join(KEYWORDS[name])}")
    if package is None:
        findings.append(f"{rel}: PACKAGE_DEFINED: no package")
    return findings


def main(argv):
    expect = None
    if len(argv) > 1 and argv[1].startswith("--expect="):
        expect = set(argv[1][len("--expect="):].split(","))
        argv = argv[:1] + argv[2:]
    if len(argv) < 3:
        print(__doc__.split("\n\n")[-1], file=sys.stderr)
        return 2
    root = argv[1]
    comment_ignores = False
    try:
        with open(os.path.join(root, "buf.yaml"), encoding="utf-8") as f:
            comment_ignores = re.search(r"^\s*allow_comment_ignores:\s*true\b", f.read(), re.M) is not None
    except FileNotFoundError:
        pass
    findings = []
    for p in argv[2:]:
        if not os.path.isabs(p) and not os.path.exists(p):
            p = os.path.join(root, p)
        findings += lint(root, p, comment_ignores)
    for f in findings:
        print(f)
    if expect is not None:
        missed = expect - {f.split(": ")[1] for f in findings}
        for rule in sorted(missed):
            print(f"not found: {rule}")
        return 1 if missed else 0
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
