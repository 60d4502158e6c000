#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""The Prometheus /metrics listener against a real daemon.

A daemon with --metrics on a free loopback port; groups, limits, kept
charges, a refused charge and a held session made with memacctctl; the
exposition fetched over HTTP (127.0.0.1 only) and parsed strictly: every
line matches the text format 0.0.4, each family has one HELP and one TYPE
before its samples, which are contiguous. Values are checked against what
was charged and against `memacctctl --json show`. Then 404, 405, HEAD, a
Unix socket listener, the refusal of a non-loopback address, and SIGHUP
reporting a changed address as needing a restart. Then hostile clients
against a daemon with a tree of five hundred groups: a slow head is cut off
at head-timeout, a hundred scrapes never read keep the daemon's memory
bounded and give it back when they go, and connections over the cap are
refused; during each, normal scrapes are timed (p99 printed and bounded).
"""

import http.client
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error

# The counters are read as metrics_client.passed/failed: a name imported
# from it would be a copy taken before any check() ran.
import metrics_client
from metrics_client import (CONTENT_TYPE, K, M, MEMACCTCTL, MEMACCTD, TMP, Daemon, bound_port, check,
                            check_eq, fetch, free_port, parse, procs, sample, scrape, wait_until)


def main():
    # Port 0: the kernel picks a free one when the daemon binds (a port
    # picked here and bound there could be taken in between).
    d = Daemon("main", "--metrics", "127.0.0.1:0")
    if not d.start():
        print("memacctd did not start:\n" + d.read_log(), file=sys.stderr)
        return 1
    port = bound_port(d)
    check("the start is logged with the address the kernel chose", port is not None and port > 0,
          d.read_log())

    # An empty tree: just the root.
    fams, body = scrape(port)
    check_eq("the root's usage", sample(fams, "memacct_group_usage_bytes", group="/"), "0")
    check_eq("the root's max is +Inf", sample(fams, "memacct_group_max_bytes", group="/"), "+Inf")
    check_eq("one group", sample(fams, "memacct_groups"), "1")
    check_eq("no sessions", sample(fams, "memacct_sessions"), "0")
    version = subprocess.run([MEMACCTD, "--version"], capture_output=True, text=True).stdout.split()[-1]
    check_eq("build_info", sample(fams, "memacct_build_info", version=version), "1")
    self_metrics(d, port, version)
    gzipped(port)

    # Groups, limits, kept charges, a refused charge.
    weird = "/we.ird-na_me:x@y"
    for args in (["create", "/t", "max=1M", "high=768K", "low=256K", "min=max"], ["create", "/t/u"],
                 ["create", weird], ["charge", "/t/u", "100K", "--stat", "file"],
                 ["charge", "/t", "8K"], ["charge", weird, "4K", "--stat", "device"]):
        r = d.ctl(*args)
        check_eq(f"memacctctl {' '.join(args)}", r.returncode, 0)
    r = d.ctl("charge", "/t/u", "2M")
    check_eq("a charge over /t's max is refused", r.returncode, 1)
    r = d.ctl("create", '/a"b')
    check("a path needing escapes cannot be created", r.returncode != 0, r.stderr)

    fams, body = scrape(port)
    promtool_check(body)
    check_eq("families have the names documented",
             sorted(f for f in fams if f.startswith("memacct_")),
             sorted(["memacct_group_usage_bytes", "memacct_group_peak_bytes", "memacct_group_max_bytes",
                     "memacct_group_high_bytes", "memacct_group_low_bytes", "memacct_group_min_bytes",
                     "memacct_group_effective_min_bytes", "memacct_group_effective_low_bytes",
                     "memacct_group_sessions", "memacct_group_failcnt_total", "memacct_group_events_total",
                     "memacct_group_events_local_total", "memacct_group_stat_bytes",
                     "memacct_group_stat_local_bytes", "memacct_pressure_waiting_seconds_total",
                     "memacct_pressure_stalled_seconds_total", "memacct_groups", "memacct_sessions",
                     "memacct_build_info"]))
    for name, f in fams.items():
        if f["type"] == "histogram":
            continue
        want = "counter" if name.endswith("_total") else "gauge"
        check_eq(f"TYPE of {name}", f["type"], want)
    # No device region: memory's series as they always were, none with a
    # region label (tests/unit/http checks the region families themselves).
    check_eq("no memacct_ sample has a region label without device regions",
             [(name, lab) for name, f in fams.items() if name.startswith("memacct_")
              for lab, _ in f["samples"] if "region" in lab], [])
    groups = ["/", "/t", "/t/u", weird]
    check_eq("every group has a usage sample",
             sorted(lab["group"] for lab, _ in fams["memacct_group_usage_bytes"]["samples"]), sorted(groups))
    check_eq("groups", sample(fams, "memacct_groups"), str(len(groups)))

    u = 100 * K
    check_eq("usage of /t/u", sample(fams, "memacct_group_usage_bytes", group="/t/u"), str(u))
    check_eq("usage of /t is hierarchical", sample(fams, "memacct_group_usage_bytes", group="/t"),
             str(u + 8 * K))
    check_eq("usage of /", sample(fams, "memacct_group_usage_bytes", group="/"), str(u + 8 * K + 4 * K))
    check_eq("max of /t as a number", sample(fams, "memacct_group_max_bytes", group="/t"), str(M))
    check_eq("high of /t", sample(fams, "memacct_group_high_bytes", group="/t"), str(768 * K))
    check_eq("low of /t", sample(fams, "memacct_group_low_bytes", group="/t"), str(256 * K))
    check_eq("min=max of /t is +Inf", sample(fams, "memacct_group_min_bytes", group="/t"), "+Inf")
    check_eq("max of /t/u (unlimited) is +Inf", sample(fams, "memacct_group_max_bytes", group="/t/u"), "+Inf")
    check_eq("high of /t/u (unlimited) is +Inf", sample(fams, "memacct_group_high_bytes", group="/t/u"),
             "+Inf")
    check_eq("failcnt of /t after the refusal", sample(fams, "memacct_group_failcnt_total", group="/t"), "1")
    check_eq("failcnt of /t/u", sample(fams, "memacct_group_failcnt_total", group="/t/u"), "0")
    check("the special-character path is a verbatim label",
          f'memacct_group_usage_bytes{{group="{weird}"}} {4 * K}\n' in body, body)
    check_eq("stat item device of the weird group",
             sample(fams, "memacct_group_stat_bytes", group=weird, item="device"), str(4 * K))

    # Everything per group agrees with `memacctctl --json show --exact`.
    for g in groups:
        j = d.show(g)
        if j is None:
            check(f"show {g}", False)
            continue
        lim = lambda v: "+Inf" if v == "max" else str(v)
        for fam, key, conv in (("usage", "current", str), ("peak", "peak", str), ("max", "max", lim),
                               ("high", "high", lim), ("low", "low", lim), ("min", "min", lim),
                               ("effective_min", "effective_min", lim),
                               ("effective_low", "effective_low", lim)):
            check_eq(f"{fam} of {g} as show says", sample(fams, f"memacct_group_{fam}_bytes", group=g),
                     conv(j[key]))
        check_eq(f"failcnt of {g} as show says", sample(fams, "memacct_group_failcnt_total", group=g),
                 str(j["failcnt"]))
        # No charge waited for reclaim here: a counter that reads 0, in seconds.
        for fam, kind in (("waiting", "some"), ("stalled", "full")):
            check_eq(f"pressure {kind} of {g} as show says",
                     sample(fams, f"memacct_pressure_{fam}_seconds_total", group=g),
                     "%d.%06d" % divmod(j["pressure"][kind]["total"], 1000000))
        for ev in ("low", "high", "max", "oom"):
            check_eq(f"events {ev} of {g} as show says",
                     sample(fams, "memacct_group_events_total", group=g, event=ev), str(j["events"][ev]))
            check_eq(f"events.local {ev} of {g} as show says",
                     sample(fams, "memacct_group_events_local_total", group=g, event=ev),
                     str(j["events_local"][ev]))
        for item, v in j["stat"].items():
            check_eq(f"stat {item} of {g} as show says",
                     sample(fams, "memacct_group_stat_bytes", group=g, item=item), str(v))
    check("the refusal raised a max event on /t",
          int(sample(fams, "memacct_group_events_total", group="/t", event="max") or 0) >= 1)
    check_eq("stat file of /t/u is the kept charge",
             sample(fams, "memacct_group_stat_bytes", group="/t/u", item="file"), str(u))
    check_eq("stat file of /t is hierarchical", sample(fams, "memacct_group_stat_bytes", group="/t", item="file"),
             str(u))
    check_eq("stat_local file of /t is none of it",
             sample(fams, "memacct_group_stat_local_bytes", group="/t", item="file"), "0")

    # A held session.
    hold = subprocess.Popen([MEMACCTCTL, "--socket", d.sock, "hold", "/t/u", "12K"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    procs.append(hold)
    # The session opens before its charge: wait for both.
    check("a held session is counted",
          wait_until(10, lambda: (lambda f: sample(f, "memacct_sessions") == "1" and
                                  sample(f, "memacct_group_usage_bytes", group="/t/u") == str(u + 12 * K))(
                                      scrape(port)[0])))
    fams, _ = scrape(port)
    check_eq("attached to /t/u", sample(fams, "memacct_group_sessions", group="/t/u"), "1")
    check_eq("its charge is in usage", sample(fams, "memacct_group_usage_bytes", group="/t/u"), str(u + 12 * K))
    hold.send_signal(signal.SIGINT)
    hold.wait(timeout=10)
    check("the session is gone", wait_until(10, lambda: sample(scrape(port)[0], "memacct_sessions") == "0"))

    # Other paths and methods.
    for path in ("/", "/metricsx", "/metrics/", "/foo"):
        check_eq(f"GET {path} is 404", fetch(port, path)[0], 404)
    check_eq("a query string is still /metrics", fetch(port, "/metrics?depth=99")[0], 200)
    check_eq("an unknown query parameter is refused, not ignored", fetch(port, "/metrics?x=1")[0], 400)
    for method in ("POST", "PUT", "DELETE", "OPTIONS", "PATCH"):
        status, headers, _ = fetch(port, method=method)
        check_eq(f"{method} /metrics is 405", status, 405)
        check_eq(f"{method} /metrics names the allowed methods", headers.get("Allow"), "GET, HEAD")
    status, headers, body = fetch(port, method="HEAD")
    check_eq("HEAD /metrics is 200", status, 200)
    check_eq("HEAD has no body", body, "")
    check_eq("HEAD has the Content-Type", headers.get("Content-Type"), CONTENT_TYPE)

    check_eq("the daemon exits 0 on SIGTERM", d.stop(), 0)
    check("the listener is closed", fetch_fails(port))

    # A Unix socket listener.
    upath = os.path.join(TMP, "metrics.sock")
    du = Daemon("unix", "--metrics", f"unix:{upath}")
    if du.start():
        conn = UnixHTTPConnection(upath)
        conn.request("GET", "/metrics")
        r = conn.getresponse()
        text = r.read().decode()
        check_eq("GET over the Unix socket", r.status, 200)
        check_eq("its usage of /", sample(parse(text), "memacct_group_usage_bytes", group="/"), "0")
        check_eq("the Unix socket daemon exits 0", du.stop(), 0)
        check("the metrics socket file is removed", not os.path.exists(upath))
    else:
        check("a daemon with --metrics unix:PATH starts", False, du.read_log())

    # Refusals: a remote address without allow-remote, a bad address.
    rc, log = Daemon("remote", "--metrics", f"0.0.0.0:{free_port()}").run_to_end()
    check_eq("--metrics 0.0.0.0 is refused", rc, 1)
    check("the refusal says why", "allow-remote" in log, log)
    rc, log = Daemon("bad", "--metrics", "127.0.0.1").run_to_end()
    check_eq("--metrics without a port is a usage error", rc, 2)
    conf = os.path.join(TMP, "remote.conf")
    with open(conf, "w") as f:
        f.write("[metrics]\nlisten = [::]:9464\n")
    rc, log = Daemon("remote-conf", "--config", conf).run_to_end()
    check_eq("[metrics] listen = [::]:PORT is refused", rc, 1)
    check(f"and the file's line is named", f"{conf}:2:" in log and "allow-remote" in log, log)

    # The config key, and SIGHUP: a new address needs a restart.
    p2 = free_port()  # only named in the file, never bound: no race
    conf = os.path.join(TMP, "memacctd.conf")
    with open(conf, "w") as f:
        f.write("[metrics]\nlisten = 127.0.0.1:0\n")
    dc = Daemon("conf", "--config", conf)
    if dc.start():
        p1 = bound_port(dc)
        check_eq("[metrics] listen serves", fetch(p1)[0], 200)
        with open(conf, "w") as f:
            f.write(f"[metrics]\nlisten = 127.0.0.1:{p2}\n")
        dc.proc.send_signal(signal.SIGHUP)
        want = f"[metrics] listen changed from 127.0.0.1:0 to 127.0.0.1:{p2}: ignored until restart"
        check("SIGHUP reports the new address as needing a restart",
              wait_until(10, lambda: want in dc.read_log()), dc.read_log())
        check_eq("the old address still serves", fetch(p1)[0], 200)
        check_eq("the daemon with a config exits 0", dc.stop(), 0)
    else:
        check("a daemon with [metrics] listen starts", False, dc.read_log())

    limits()
    series()
    cgroup_label()
    attacks()
    return 0


# ---- promtool ----

def promtool_check(body):
    """promtool check metrics on a live scrape: names, HELP, units, counters ending in _total."""
    import shutil
    promtool = shutil.which("promtool")
    if not promtool:
        print("SKIP: promtool check metrics: promtool not installed")
        return
    r = subprocess.run([promtool, "check", "metrics"], input=body, capture_output=True, text=True, timeout=60)
    check_eq("promtool check metrics finds nothing to say", (r.returncode, r.stdout + r.stderr), (0, ""))


# ---- the cgroup label ----

def cgroup_label():
    """A real v1 memory cgroup imported: every series of its mirror says cgroup="/NAME"."""
    v1 = "/sys/fs/cgroup/memory"
    name = f"memacct-metrics-{os.getpid()}"
    cg = os.path.join(v1, name)
    if os.getuid() != 0:
        print("SKIP: the cgroup label: needs root to make a kernel cgroup")
        return
    if not os.path.exists(os.path.join(v1, "memory.limit_in_bytes")):
        print(f"SKIP: the cgroup label: no cgroup v1 memory hierarchy at {v1}")
        return
    try:
        os.mkdir(cg)
    except OSError as e:
        print(f"SKIP: the cgroup label: the kernel refuses to make {cg}: {e}")
        return
    d = Daemon("cgroup", "--metrics", "127.0.0.1:0")
    try:
        with open(os.path.join(cg, "memory.limit_in_bytes"), "w") as f:
            f.write(str(64 * M))
        if not d.start():
            check("a daemon for the cgroup label starts", False, d.read_log())
            return
        port = bound_port(d)
        r = d.ctl("import-cgroups", "--from", f"/{name}", "--under", "/k")
        check_eq("import-cgroups of the test cgroup", r.returncode, 0)
        check_eq("a plain group beside it", d.ctl("create", "/plain").returncode, 0)
        fams, body = scrape(port)
        promtool_check(body)
        mirror = f"/k/{name}"
        for fam in ("memacct_group_usage_bytes", "memacct_group_max_bytes", "memacct_group_kernel_usage_bytes"):
            check(f"{fam} of the mirror has cgroup=\"/{name}\"",
                  sample(fams, fam, group=mirror, cgroup=f"/{name}") is not None, body)
        check_eq("the mirror's max is the kernel's limit",
                 sample(fams, "memacct_group_max_bytes", group=mirror, cgroup=f"/{name}"), str(64 * M))
        check(f"the event series of the mirror carry it too",
              sample(fams, "memacct_group_events_total", group=mirror, cgroup=f"/{name}", event="max")
              is not None, body)
        labelled = {lab["group"] for f in fams.values() for lab, _ in f["samples"] if "cgroup" in lab}
        check_eq("only the mirror is labelled with a cgroup", labelled, {mirror})
        check("a plain group has no cgroup label",
              sample(fams, "memacct_group_usage_bytes", group="/plain") is not None, body)
        check_eq("the cgroup daemon exits 0", d.stop(), 0)
    finally:
        d.stop()
        try:
            os.rmdir(cg)
        except OSError as e:
            print(f"note: cannot remove {cg}: {e}")


# ---- depth=, prefix= and [metrics] max-groups ----

def exported_groups(fams):
    return sorted(lab["group"] for lab, _ in fams.get("memacct_group_usage_bytes", {"samples": []})["samples"])


def cut_series(fams):
    return tuple(sample(fams, f"memacctd_metrics_groups_{k}") for k in ("exported", "selected", "truncated"))


def limits():
    conf = os.path.join(TMP, "limits.conf")
    with open(conf, "w") as f:
        f.write("[metrics]\nlisten = 127.0.0.1:0\nmax-groups = 3\n")
    d = Daemon("limits", "--config", conf)
    if not d.start():
        check("a daemon with max-groups = 3 starts", False, d.read_log())
        return
    port = bound_port(d)
    tree = ["/a", "/a/b", "/a/b/c", "/d", "/d/e"]
    for g in tree:
        check_eq(f"create {g}", d.ctl("create", g).returncode, 0)

    def get(query):
        status, _, body = fetch(port, "/metrics" + query)
        return status, (parse(body) if status == 200 else {}), body

    # The cap: 3 of the 6 groups, parents first, and the cut said.
    status, fams, body = get("")
    check_eq("a capped scrape is 200", status, 200)
    check_eq("max-groups = 3 exports three groups, parents first", exported_groups(fams), ["/", "/a", "/a/b"])
    check_eq("exported, selected, truncated under the cap", cut_series(fams), ("3", "6", "1"))
    check_eq("memacct_groups still counts the whole tree", sample(fams, "memacct_groups"), "6")

    # depth=: cut by depth and not by the cap.
    status, fams, _ = get("?depth=0")
    check_eq("depth=0 is the root only", exported_groups(fams), ["/"])
    check_eq("depth=0: not truncated, 1 of 6", cut_series(fams), ("1", "6", "0"))
    status, fams, _ = get("?depth=1")
    check_eq("depth=1 is the root and its children", exported_groups(fams), ["/", "/a", "/d"])
    check_eq("depth=1: the cap exactly met is not a cut", cut_series(fams), ("3", "6", "0"))

    # prefix=: the subtree, depth relative to it, percent-decoded.
    status, fams, _ = get("?prefix=/d")
    check_eq("prefix=/d is its subtree", exported_groups(fams), ["/d", "/d/e"])
    check_eq("prefix=/d: 2 of 2", cut_series(fams), ("2", "2", "0"))
    status, fams, _ = get("?prefix=%2Fa&depth=1")
    check_eq("prefix=%2Fa&depth=1: /a and its children", exported_groups(fams), ["/a", "/a/b"])
    check_eq("prefix=/a&depth=1: 2 of 3", cut_series(fams), ("2", "3", "0"))
    status, _, body = get("?prefix=/nope")
    check_eq("a prefix that is no group is 404", status, 404)
    check("and says which", "/nope" in body, body)

    # Bad queries: 400 with a one-line reason.
    for query in ("?depth=x", "?depth=", "?depth=-1", "?depth=99999999999", "?depth=1&depth=2", "?prefix=a",
                  "?prefix=", "?prefix=/a//b", "?prefix=%zz", "?prefix=/a%00", "?bogus=1", "?depth"):
        status, _, body = get(query)
        check_eq(f"{query} is 400", status, 400)
        check(f"{query}: one line of reason", body.count("\n") == 1 and len(body) > 10, repr(body))
    status, _, _ = get("?")
    check_eq("an empty query is the default scrape", status, 200)
    # The query is in the head: over header-size it is a 431, not a parse.
    status, _, _ = fetch_raw(port, "/metrics?prefix=/" + "x" * 9000)
    check_eq("a query over header-size is 431", status, 431)
    check_eq("the limits daemon exits 0", d.stop(), 0)


def series():
    """[metrics] series = basic, and ?series= overriding it per scrape."""
    conf = os.path.join(TMP, "series.conf")
    with open(conf, "w") as f:
        f.write("[metrics]\nlisten = 127.0.0.1:0\nseries = basic\n")
    d = Daemon("series", "--config", conf)
    if not d.start():
        check("a daemon with series = basic starts", False, d.read_log())
        return
    port = bound_port(d)
    check_eq("create /s", d.ctl("create", "/s", "max=1M", "low=64K").returncode, 0)
    check_eq("charge over max fails", d.ctl("charge", "/s", "2M").returncode != 0, True)
    basic_only = ("memacct_group_usage_bytes", "memacct_group_peak_bytes", "memacct_group_max_bytes",
                  "memacct_group_low_bytes", "memacct_group_failcnt_total", "memacct_group_events_local_total")
    full_only = ("memacct_group_effective_low_bytes", "memacct_group_sessions", "memacct_group_events_total",
                 "memacct_group_stat_bytes", "memacct_group_stat_local_bytes",
                 "memacct_pressure_waiting_seconds_total", "memacct_pressure_stalled_seconds_total")
    sizes = {}
    for query, full in (("", False), ("?series=basic", False), ("?series=full", True)):
        status, _, body = fetch(port, "/metrics" + query)
        check_eq(f"{query or 'the default'} is 200", status, 200)
        fams = parse(body)
        # The groups' samples: the daemon's own series are the same in both.
        sizes[query] = sum(len(line) + 1 for line in body.split("\n") if line.startswith("memacct_group_"))
        for name in basic_only:
            check(f"{query or 'series = basic'}: {name} for /s", sample(fams, name, group="/s") is not None
                  or sample(fams, name, group="/s", event="max") is not None, name)
        for name in full_only:
            check_eq(f"{query or 'series = basic'}: {name} {'kept' if full else 'left out'}", name in fams, full)
        check_eq(f"{query or 'series = basic'}: the max event counted locally",
                 sample(fams, "memacct_group_events_local_total", group="/s", event="max"), "1")
        check("the daemon's own series whatever the series", "memacctd_build_info" in fams, str(sorted(fams)))
    check_eq("series = basic is what ?series=basic gives", sizes[""], sizes["?series=basic"])
    check(f"basic group samples are under half the full ones ({sizes['']} vs {sizes['?series=full']} bytes)",
          sizes[""] * 2 < sizes["?series=full"], str(sizes))
    for query in ("?series=", "?series=all", "?series=basic&series=full", "?series"):
        status, _, body = fetch(port, "/metrics" + query)
        check_eq(f"{query} is 400", status, 400)
        check(f"{query}: the reason names series", "series" in body, repr(body))
    check_eq("the series daemon exits 0", d.stop(), 0)


# ---- hostile clients ----

ATTACK_GROUPS = 500
# A normal scrape's p99 during an attack, against its p99 with no attack in
# the same run: at most P99_FACTOR times that (taken as at least P99_FLOOR),
# so a machine busy with another build moves the bound with the figures.
P99_FACTOR = 25
P99_FLOOR = 0.010
baseline_p99 = {}


def histogram_ok(fams, name, **labels):
    """Buckets cumulative and ascending, +Inf last, _count equal to +Inf's; return the count."""
    samples = [(lab, v) for lab, v in fams.get(name, {"samples": []})["samples"]
               if {k: x for k, x in lab.items() if k not in ("__name__", "le")} == labels]
    buckets = [(lab["le"], int(v)) for lab, v in samples if lab["__name__"] == name + "_bucket"]
    count = [int(v) for lab, v in samples if lab["__name__"] == name + "_count"]
    total = [float(v) for lab, v in samples if lab["__name__"] == name + "_sum"]
    check(f"{name}{labels} has buckets, a sum and a count", len(buckets) >= 2 and len(count) == 1 and len(total) == 1,
          repr(samples))
    if len(buckets) < 2 or len(count) != 1:
        return 0
    check(f"{name}{labels}: +Inf is the last bucket", buckets[-1][0] == "+Inf", repr(buckets))
    bounds = [float(le) for le, _ in buckets[:-1]]
    check(f"{name}{labels}: bounds ascend", bounds == sorted(bounds) and len(set(bounds)) == len(bounds),
          repr(bounds))
    counts = [n for _, n in buckets]
    check(f"{name}{labels}: buckets are cumulative", counts == sorted(counts), repr(counts))
    check_eq(f"{name}{labels}: _count is the +Inf bucket", count[0], counts[-1])
    check(f"{name}{labels}: _sum is not negative", total[0] >= 0, repr(total))
    return count[0]


def requests(fams, op, transport="socket"):
    return sum(int(v) for lab, v in fams.get("memacctd_requests_total", {"samples": []})["samples"]
               if lab.get("op") == op and lab.get("transport") == transport)


def self_metrics(d, port, version):
    """The daemon's own series: present, typed, moving with requests; process_* plausible."""
    fams, _ = scrape(port)
    for name, typ in (("memacctd_requests_total", "counter"), ("memacctd_request_duration_seconds", "histogram"),
                      ("memacctd_sessions", "gauge"), ("memacctd_connections", "gauge"),
                      ("memacctd_events_total", "counter"), ("memacctd_events_dropped_total", "counter"),
                      ("memacctd_state_saves_total", "counter"), ("memacctd_state_save_failures_total", "counter"),
                      ("memacctd_fsync_duration_seconds", "histogram"),
                      ("memacctd_stats_flush_duration_seconds", "histogram"),
                      ("process_resident_memory_bytes", "gauge"), ("process_open_fds", "gauge"),
                      ("process_max_fds", "gauge"), ("process_cpu_seconds_total", "counter"),
                      ("process_start_time_seconds", "gauge"), ("process_virtual_memory_bytes", "gauge"),
                      ("memacctd_build_info", "gauge")):
        check_eq(f"TYPE of {name}", fams.get(name, {}).get("type"), typ)
        check(f"HELP of {name}", bool(fams.get(name, {}).get("help")))
    check_eq("memacctd_build_info", sample(fams, "memacctd_build_info", version=version), "1")
    before = requests(fams, "create_group")
    hist_before = histogram_ok(fams, "memacctd_request_duration_seconds", transport="socket")
    r = d.ctl("create", "/selfmetrics")
    check_eq("memacctctl create /selfmetrics", r.returncode, 0)
    r = d.ctl("remove", "/selfmetrics")
    check_eq("memacctctl remove /selfmetrics", r.returncode, 0)
    fams, _ = scrape(port)
    check("a create raises memacctd_requests_total{op=create_group}", requests(fams, "create_group") > before,
          f"{before} -> {requests(fams, 'create_group')}")
    check("the create counts as ok",
          int(sample(fams, "memacctd_requests_total", op="create_group", status="ok", transport="socket") or 0)
          > before)
    check("the socket's duration histogram counts the requests",
          histogram_ok(fams, "memacctd_request_duration_seconds", transport="socket") >= hist_before + 2)
    histogram_ok(fams, "memacctd_request_duration_seconds", transport="bus")
    histogram_ok(fams, "memacctd_fsync_duration_seconds")
    check("a flush was timed (the flush interval is short)",
          histogram_ok(fams, "memacctd_stats_flush_duration_seconds") >= 0)
    check("the saves of the create and the remove are counted",
          int(sample(fams, "memacctd_state_saves_total") or 0) >= 1)
    check("events: a group added and removed",
          int(sample(fams, "memacctd_events_total", kind="group_added") or 0) >= 1 and
          int(sample(fams, "memacctd_events_total", kind="group_removed") or 0) >= 1)
    rss = int(sample(fams, "process_resident_memory_bytes") or 0)
    check("process_resident_memory_bytes is between 1 MiB and 4 GiB", M <= rss <= 4096 * M, str(rss))
    vsz = int(sample(fams, "process_virtual_memory_bytes") or 0)
    check("process_virtual_memory_bytes is at least the resident size", vsz >= rss, f"{vsz} < {rss}")
    fds, max_fds = int(sample(fams, "process_open_fds") or 0), int(sample(fams, "process_max_fds") or 0)
    check("process_open_fds is plausible", 3 <= fds <= max_fds, f"{fds} of {max_fds}")
    start = float(sample(fams, "process_start_time_seconds") or 0)
    check("process_start_time_seconds is within the last hour", time.time() - 3600 < start <= time.time() + 5,
          str(start))
    cpu = float(sample(fams, "process_cpu_seconds_total") or -1)
    check("process_cpu_seconds_total is plausible", 0 <= cpu < 3600, str(cpu))


def fetch_raw(port, path="/metrics", headers=None):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    conn.request("GET", path, headers=headers or {})
    r = conn.getresponse()
    body = r.read()
    conn.close()
    return r.status, r.headers, body


# Series whose values move between two scrapes (the scrape itself, time, the process).
MOVING = re.compile(r"^(memacctd_|process_)")


def stable(text):
    return [line for line in text.split("\n") if not MOVING.match(line.split("{")[0].split(" ")[0])
            or line.startswith("#")]


def gzipped(port):
    """Accept-Encoding: gzip gets gzip that decodes to the plain answer, but for what moved."""
    import gzip
    status, headers, plain = fetch_raw(port)
    check_eq("a plain scrape has no Content-Encoding", headers.get("Content-Encoding"), None)
    status, headers, body = fetch_raw(port, headers={"Accept-Encoding": "deflate, gzip;q=0.5"})
    check_eq("a gzip scrape is 200", status, 200)
    check_eq("a gzip scrape says Content-Encoding: gzip", headers.get("Content-Encoding"), "gzip")
    check_eq("Content-Length is the compressed size", int(headers.get("Content-Length") or -1), len(body))
    try:
        text = gzip.decompress(body).decode()
    except (OSError, EOFError) as e:
        check("the gzip answer decodes", False, str(e))
        return
    check("the gzip answer is smaller", len(body) < len(plain), f"{len(body)} >= {len(plain)}")
    check_eq("the gzip answer is the plain one but for what moved", stable(text), stable(plain.decode()))
    try:
        parse(text)
        check("the decoded answer parses", True)
    except ValueError as e:
        check("the decoded answer parses", False, str(e))
    status, headers, body = fetch_raw(port, headers={"Accept-Encoding": "gzip;q=0, identity"})
    check_eq("gzip;q=0 is plain", headers.get("Content-Encoding"), None)
    check("gzip;q=0 is plain text", body.startswith(b"# HELP"), repr(body[:20]))


def write_state(state_dir, groups):
    """A state file with @groups groups under the root, each with a kept charge."""
    os.makedirs(state_dir)
    body = "memacctd-state 1\ngroup / owner=0 max=max high=max low=0 min=0\n" + "".join(
        f"group /g{i:05d} owner=0 max=max high=max low=0 min=0 kept.anon=4096\n" for i in range(groups))
    h = 0xcbf29ce484222325
    for b in body.encode():
        h = ((h ^ b) * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
    with open(os.path.join(state_dir, "state"), "w") as f:
        f.write(body + f"end {groups + 1} fnv1a64={h:016x}\n")


def vm(pid):
    """(VmRSS, VmHWM) of @pid in bytes."""
    with open(f"/proc/{pid}/status") as f:
        s = f.read()
    return tuple(int(re.search(k + r":\s+(\d+)", s).group(1)) * K for k in ("VmRSS", "VmHWM"))


class Timer:
    """Normal scrapes in a loop on a thread of their own, timed, until stopped."""

    def __init__(self, port):
        self.port, self.times, self.errors = port, [], 0
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self.run)

    def run(self):
        while not self.stopping.is_set():
            t = time.monotonic()
            try:
                status, _, body = fetch(self.port)
                ok = status == 200 and "memacct_build_info" in body
            except OSError:
                ok = False
            if ok:
                self.times.append(time.monotonic() - t)
            else:
                self.errors += 1
            time.sleep(0.02)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stopping.set()
        self.thread.join()

    def report(self, what, starved=0.0):
        """@starved: how long a normal scrape would wait were the attack to
        starve it; the bound is at least half of that, so that a machine
        busy with another build, whose latencies move between the baseline
        and the attack, does not pass for starvation."""
        t = sorted(self.times)
        p99 = t[min(len(t) - 1, int(len(t) * 0.99))] if t else float("inf")
        print(f"{what}: {len(t)} normal scrapes, p99 {p99 * 1000:.1f} ms, {self.errors} failed")
        check(f"normal scrapes are served during {what}", len(t) >= 5 and self.errors == 0,
              f"{len(t)} served, {self.errors} failed")
        if "base" not in baseline_p99:
            baseline_p99["base"] = p99
            return
        bound = max(P99_FACTOR * max(baseline_p99["base"], P99_FLOOR), starved / 2)
        check(f"p99 of a normal scrape during {what} is under {bound * 1000:.0f} ms ({P99_FACTOR} times the "
              f"{baseline_p99['base'] * 1000:.1f} ms at rest, or half of {starved:.1f} s, a starved one's wait)",
              p99 < bound, f"{p99 * 1000:.1f} ms")


def slow_head(port, head_timeout):
    """A head sent a byte every half second: cut off at head-timeout. Return: seconds until closed."""
    s = socket.create_connection(("127.0.0.1", port))
    start = time.monotonic()
    s.sendall(b"GET /metrics HTTP/1.1\r\n")
    s.settimeout(0.5)
    try:
        while time.monotonic() - start < head_timeout + 5:
            s.sendall(b"X")
            try:
                if s.recv(4096) == b"":
                    break
            except socket.timeout:
                pass
    except (ConnectionError, BrokenPipeError):
        pass
    s.close()
    return time.monotonic() - start


def attacks():
    head_timeout, conns, output_buffer = 2, 16, 16 * M
    # Under AddressSanitizer freed memory sits in its quarantine (up to 256
    # MiB) and is never given back: the memory checks below would measure
    # the sanitizer. Without the quarantine, and with freed pages released
    # at once, they measure the daemon's own buffers again.
    asan = os.environ.get("ASAN_OPTIONS")
    if asan is not None:
        os.environ["ASAN_OPTIONS"] = asan + ":quarantine_size_mb=0:allocator_release_to_os_interval_ms=0"
    d = Daemon("attacks", "--metrics", "127.0.0.1:0", "--config", os.path.join(TMP, "attacks.conf"))
    with open(os.path.join(TMP, "attacks.conf"), "w") as f:
        f.write(f"[metrics]\nconnections = {conns}\nhead-timeout = {head_timeout}\nwrite-timeout = 10\n"
                f"output-buffer = {output_buffer // M}M\n")
    write_state(os.path.join(d.dir, "state"), ATTACK_GROUPS)
    if not d.start():
        check("a daemon with five hundred groups starts", False, d.read_log())
        return
    port, pid = bound_port(d), d.proc.pid
    fams, body = scrape(port)
    answer = len(body)
    check_eq("the tree is there", sample(fams, "memacct_groups"), str(ATTACK_GROUPS + 1))
    base_rss, base_hwm = vm(pid)
    print(f"an answer is {answer} bytes; the daemon's VmRSS {base_rss // K} KiB, VmHWM {base_hwm // K} KiB")

    # Normal scrapes with no attack: the baseline of the bounds below.
    with Timer(port) as t:
        time.sleep(1.0)
    t.report("no attack")

    # A slow head, several at once, below the cap.
    with Timer(port) as t:
        results = []
        slow = [threading.Thread(target=lambda: results.append(slow_head(port, head_timeout)))
                for _ in range(4)]
        for th in slow:
            th.start()
        for th in slow:
            th.join()
    # Starved, a scrape would wait for the slow heads' cut-off.
    t.report("slow heads", starved=head_timeout)
    check("every slow head is cut off at head-timeout",
          len(results) == 4 and all(head_timeout - 0.5 <= r <= head_timeout + 1.5 for r in results), results)
    print(f"slow heads cut off after {', '.join(f'{r:.2f}' for r in results)} s")

    # A hundred scrapes never read.
    unread = []
    for _ in range(100):
        s = socket.create_connection(("127.0.0.1", port))
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        s.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n" * 4)
        unread.append(s)
    # The burst is rendered by now, and the answers unread a second or more may be evicted.
    time.sleep(3)
    with Timer(port) as t:
        time.sleep(2)
    t.report("100 unread scrapes")
    rss, hwm = vm(pid)
    bound = output_buffer + 4 * answer + 16 * M
    print(f"100 unread scrapes: VmHWM {hwm // K} KiB, +{(hwm - base_hwm) // K} KiB over the start "
          f"(bound {bound // K} KiB)")
    check("100 unread scrapes keep the daemon's memory bounded", hwm - base_rss <= bound,
          f"VmHWM {hwm}, start {base_rss}, bound {bound}")
    for s in unread:
        s.close()
    back = wait_until(10, lambda: vm(pid)[0] <= base_rss + 2 * answer + 8 * M)
    print(f"after they left: VmRSS {vm(pid)[0] // K} KiB (start {base_rss // K} KiB)")
    check("the memory comes back when they leave", back, f"VmRSS {vm(pid)[0]}, start {base_rss}")

    # Connections up to the cap, held open without a byte: a new scraper still has a
    # slot (the oldest idle connection makes room), each time, at once.
    held = [socket.create_connection(("127.0.0.1", port)) for _ in range(conns)]
    time.sleep(0.1)
    served = sum(not fetch_fails(port) for _ in range(10))
    check_eq("with every connection held idle, a new scrape is served", served, 10)
    time.sleep(1.1)  # the held ones are stalled now: a normal scrape takes the place of one
    with Timer(port) as t:
        time.sleep(0.5)
    t.report("connections over the cap")
    for s in held:
        s.close()
    check_eq("the attacked daemon exits 0", d.stop(), 0)


def fetch_fails(port):
    try:
        fetch(port)
    except (urllib.error.URLError, ConnectionError, OSError):
        return True
    return False


class UnixHTTPConnection(http.client.HTTPConnection):
    def __init__(self, path):
        super().__init__("localhost", timeout=10)
        self.unix_path = path

    def connect(self):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(10)
        self.sock.connect(self.unix_path)


if __name__ == "__main__":
    try:
        rc = main()
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
    if metrics_client.failed:
        for root, _, files in os.walk(TMP):
            for name in files:
                if name == "daemon.log":
                    print(f"--- {os.path.join(root, name)}", file=sys.stderr)
                    print(open(os.path.join(root, name)).read(), file=sys.stderr)
    print(f"{metrics_client.passed} passed, {metrics_client.failed} failed")
    if not metrics_client.failed and rc == 0:
        subprocess.run(["rm", "-rf", TMP])
    sys.exit(1 if metrics_client.failed or rc else 0)
