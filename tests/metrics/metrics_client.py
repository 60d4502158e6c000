# SPDX-License-Identifier: LGPL-2.1-or-later
"""The client side of the /metrics tests: a daemon under test, HTTP fetches,
a strict parser of the text exposition format 0.0.4, and the pass/fail
accounting (check() counts into this module's `passed` and `failed`, which
the test reads through the module, not a copy).
"""

import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

MEMACCTD = os.environ["MEMACCTD"]
MEMACCTCTL = os.environ["MEMACCTCTL"]
TMP = tempfile.mkdtemp(prefix="memacct-metrics.")
K = 1024
M = 1024 * K
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"

passed = 0
failed = 0
procs = []


def check(what, ok, detail=""):
    global passed, failed
    if ok:
        passed += 1
    else:
        failed += 1
        print(f"FAIL: {what}{': ' + detail if detail else ''}", file=sys.stderr)


def check_eq(what, got, want):
    check(what, got == want, f"got {got!r}, want {want!r}")


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Daemon:
    def __init__(self, name, *args):
        self.dir = os.path.join(TMP, name)
        os.makedirs(self.dir)
        self.sock = os.path.join(self.dir, "memacctd.sock")
        self.log = os.path.join(self.dir, "daemon.log")
        self.args = [MEMACCTD, "--socket", self.sock, "--state-dir", os.path.join(self.dir, "state"),
                     "--workers", "2", *args]
        self.proc = None

    def start(self):
        self.proc = subprocess.Popen(self.args, stdout=open(self.log, "w"), stderr=subprocess.STDOUT)
        procs.append(self.proc)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                return False
            if os.path.exists(self.sock) and self.ctl("show", "/").returncode == 0:
                return True
            time.sleep(0.05)
        return False

    def run_to_end(self, timeout=30):
        """Run a daemon expected to exit at once: (status, log)."""
        rc = subprocess.run(self.args, stdout=open(self.log, "w"), stderr=subprocess.STDOUT,
                            timeout=timeout).returncode
        return rc, self.read_log()

    def ctl(self, *args):
        return subprocess.run([MEMACCTCTL, "--socket", self.sock, *args], capture_output=True, text=True,
                              timeout=30)

    def show(self, path):
        r = self.ctl("--json", "show", path, "--exact")
        return json.loads(r.stdout) if r.returncode == 0 else None

    def read_log(self):
        with open(self.log) as f:
            return f.read()

    def stop(self):
        if not self.proc or self.proc.poll() is not None:
            return self.proc.returncode if self.proc else 0
        self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            return 124


def fetch(port, path="/metrics", method="GET"):
    """(status, headers, body) of one request to 127.0.0.1:port."""
    req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", method=method)
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, r.headers, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.headers, e.read().decode()


# ---- the exposition format ----

NAME = r"[a-zA-Z_:][a-zA-Z0-9_:]*"
LABEL_VALUE = r'(?:[^"\\\n]|\\\\|\\"|\\n)*'
LABELS = rf'\{{(?:[a-zA-Z_][a-zA-Z0-9_]*="{LABEL_VALUE}")(?:,[a-zA-Z_][a-zA-Z0-9_]*="{LABEL_VALUE}")*\}}'
VALUE = r"(?:[+-]?Inf|NaN|[+-]?[0-9]+(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?)"
RE_HELP = re.compile(rf"^# HELP ({NAME}) (.*)$")
RE_TYPE = re.compile(rf"^# TYPE ({NAME}) (counter|gauge|histogram|summary|untyped)$")
RE_SAMPLE = re.compile(rf"^({NAME})({LABELS})? ({VALUE})$")
RE_LABEL = re.compile(rf'([a-zA-Z_][a-zA-Z0-9_]*)="({LABEL_VALUE})"')


def unescape(v):
    return re.sub(r"\\(.)", lambda m: {"n": "\n"}.get(m.group(1), m.group(1)), v)


def parse(text):
    """{family: {"type", "help", "samples": [(labels, value)]}}; raises ValueError on a bad line."""
    fams = {}
    current = None
    done = set()
    if not text.endswith("\n"):
        raise ValueError("the exposition does not end with a line feed")
    for n, line in enumerate(text.split("\n")[:-1], 1):
        if m := RE_HELP.match(line):
            name = m.group(1)
            if name in fams:
                raise ValueError(f"line {n}: a second HELP for {name}")
            if current:
                done.add(current)
            fams[name] = {"help": m.group(2), "type": None, "samples": []}
            current = name
        elif m := RE_TYPE.match(line):
            name = m.group(1)
            if name != current or fams[name]["type"] or fams[name]["samples"]:
                raise ValueError(f"line {n}: TYPE of {name} not right after its HELP, or twice")
            fams[name]["type"] = m.group(2)
        elif m := RE_SAMPLE.match(line):
            name = m.group(1)
            # A histogram's samples are NAME_bucket, NAME_sum, NAME_count.
            if current and fams[current]["type"] == "histogram" and \
                    name in (current + "_bucket", current + "_sum", current + "_count"):
                labels = {k: unescape(v) for k, v in RE_LABEL.findall(m.group(2) or "")}
                fams[current]["samples"].append((labels | {"__name__": name}, m.group(3)))
                continue
            if name != current or not fams[name]["type"]:
                raise ValueError(f"line {n}: sample of {name} outside its family ({current})")
            labels = {k: unescape(v) for k, v in RE_LABEL.findall(m.group(2) or "")}
            fams[name]["samples"].append((labels, m.group(3)))
        else:
            raise ValueError(f"line {n}: not the text format: {line!r}")
    for name, f in fams.items():
        if name in done and not f["samples"]:
            pass  # metadata only is allowed
        if f["type"] == "counter" and not name.endswith("_total"):
            raise ValueError(f"counter {name} does not end with _total")
    return fams


def sample(fams, family, **labels):
    """The value (a string) of the one sample of @family with @labels, or None."""
    found = [v for lab, v in fams.get(family, {"samples": []})["samples"] if lab == labels]
    return found[0] if len(found) == 1 else None


def scrape(port):
    status, headers, body = fetch(port)
    check_eq("GET /metrics is 200", status, 200)
    check_eq("the Content-Type is the exposition format's", headers.get("Content-Type"), CONTENT_TYPE)
    try:
        return parse(body), body
    except ValueError as e:
        check("the exposition parses", False, f"{e}\n{body}")
        return {}, body


def wait_until(seconds, fn):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if fn():
            return True
        time.sleep(0.05)
    return fn()


def bound_port(d):
    """The port the kernel chose for a daemon started with port 0, from its log."""
    m = re.search(r"Serving metrics on http://127\.0\.0\.1:([0-9]+)/metrics", d.read_log())
    return int(m.group(1)) if m else None
