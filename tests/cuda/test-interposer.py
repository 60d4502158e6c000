#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""libmemacct-cuda.so in front of the stand-in driver, against a real
memacctd on its socket: CUDA driver API programs (cuda-prog, linked with
-lcuda as any CUDA program) that do not link libmemacct, charged in the
GPU's region of their group.

- a refusal at the group's max is CUDA_ERROR_OUT_OF_MEMORY and the driver
  never allocates; every lookup path is hooked (linked, dlsym on a
  dlopen()ed driver, cuGetProcAddress);
- the race: 2 processes x 600M against 1024M, released together, never
  both succeed (--rounds, 1,000 by default); 8 x 200M against 1000M, at
  most 5 a round;
- SIGKILL at random points of 50 clients in tight alloc/free loops, and
  of holders: usage is what the live ones hold, the daemon answers;
- region probe: a region per GPU NVML reports;
- the budget (cuMemGetInfo, NVML): min(device, max), free never wraps, a
  forced overage included; a limit changed while a program runs is seen by its
  next allocation;
- pools charged by their reserve, a trim gives back, and a reclaim request
  trims them; VMM create/release;
- placement: the environment cannot take a process where it may not go;
  a child with its environment wiped, in a session of its own, and the
  program it execs stay in their group by their kernel cgroup;
- memacctctl run: device limits through the interposer it injects, host
  memory through a kernel memory cgroup the group mirrors (max= is the
  kernel's), and a refusal that says why where none can be made;
- 2,048 processes: usage exact.

Usage: test-interposer.py (environment: MEMACCTD, MEMACCTCTL, CUDA_PROG,
INTERPOSER, STANDIN_LD_LIBRARY_PATH; MEMACCT_CUDA_ROUNDS, MEMACCT_CUDA_CROWD)
"""

import json
import os
import random
import resource
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "integration"))
from rawproto import Tally, stop_daemon, wait_until  # noqa: E402 (after the path it is found on)

TALLY = Tally()
# tests/gpu/device-check.sh: a real GPU and driver, every check said.
REAL = os.environ.get("MEMACCT_CUDA_REAL") == "1"
VERBOSE = REAL or os.environ.get("MEMACCT_CHECK_VERBOSE") == "1"


def check(cond, what):
    if VERBOSE and cond:
        print(f"PASS: {what}", flush=True)
    return TALLY.check(cond, what)


M = 1024 * 1024
G = 1024 * M
# The stand-in's GPUs; on a real one, what region probe found.
GPU0 = "nvidia/0000:3b:00.0/vidmem"
GPU1 = "nvidia/0000:86:00.0/vidmem"
STOCK_SLACK = 8 * M  # at most two batches of 4 MiB a live client keeps in its stock

ENV = os.environ
ENV.setdefault("STANDIN_LD_LIBRARY_PATH", "")  # a real GPU: the system's driver
tmp = None
sock = None


def ctl(*args, check_rc=True):
    env = dict(ENV)
    env.pop("MEMACCT_GROUP", None)
    r = subprocess.run([ENV["MEMACCTCTL"], "--socket", sock, *args], capture_output=True, text=True, env=env)
    if check_rc and r.returncode != 0:
        raise RuntimeError(f"memacctctl {' '.join(args)}: {r.stderr.strip()}")
    return r


def region(path, name=GPU0):
    d = json.loads(ctl("--json", "show", path).stdout)
    for r in d.get("regions", []):
        if r["name"] == name:
            return r
    return {"current": 0, "peak": 0, "max": "max", "events": {"max": 0, "oom": 0}}


def current(path, name=GPU0):
    return region(path, name)["current"]


def sanitizer_runtime():
    """In a sanitizer build cuda-prog links ASan's runtime, which must come
    before any preloaded library: its path, to preload first; "" otherwise."""
    out = subprocess.run(["ldd", ENV["CUDA_PROG"]], capture_output=True, text=True).stdout
    for line in out.splitlines():
        if "libasan.so" in line and "=>" in line:
            return line.split("=>")[1].split()[0]
    return ""


PRELOAD = None


def prog_env(group="/job", **extra):
    global PRELOAD
    if PRELOAD is None:
        PRELOAD = " ".join(p for p in (sanitizer_runtime(), ENV["INTERPOSER"]) if p)
    env = {
        "PATH": "/usr/bin:/bin",
        "LD_LIBRARY_PATH": ENV["STANDIN_LD_LIBRARY_PATH"],
        "LD_PRELOAD": PRELOAD,
        "MEMACCT_CUDA_CONFIG": os.path.join(tmp, "cuda.conf"),
    }
    if group:
        env["MEMACCT_GROUP"] = group
    env.update(extra)
    return env


def prog(*args, env=None, timeout=60):
    return subprocess.run([ENV["CUDA_PROG"], *args], capture_output=True, text=True, timeout=timeout,
                          env=env or prog_env())


class Serve:
    """cuda-prog serve: one line in, one line out."""

    def __init__(self, env=None, preexec_fn=None):
        self.p = subprocess.Popen([ENV["CUDA_PROG"], "serve"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=subprocess.DEVNULL, text=True, bufsize=1, env=env or prog_env(),
                                  preexec_fn=preexec_fn)
        self.ready = self.p.stdout.readline().strip()
        self.held = 0

    def send(self, line):
        self.p.stdin.write(line + "\n")
        self.p.stdin.flush()

    def read(self):
        return self.p.stdout.readline().strip()

    def cmd(self, line):
        self.send(line)
        return self.read()

    def alloc(self, nbytes):
        r = self.cmd(f"alloc {nbytes}")
        if r.startswith("ok"):
            self.held += nbytes
        return r

    def kill(self):
        self.p.kill()
        self.p.wait()

    def close(self):
        if self.p.poll() is None:
            try:
                self.send("quit")
            except BrokenPipeError:
                pass
            self.p.wait(30)


def test_probe():
    """memacctctl region probe registers each GPU NVML reports, by its PCI bus id."""
    global GPU0
    env = dict(ENV, LD_LIBRARY_PATH=ENV["STANDIN_LD_LIBRARY_PATH"])
    env.pop("MEMACCT_GROUP", None)
    r = subprocess.run([ENV["MEMACCTCTL"], "--socket", sock, "region", "probe"], capture_output=True, text=True,
                       env=env)
    if REAL:
        found = [line.split() for line in r.stdout.splitlines()]
        check(r.returncode == 0 and found and all(f[0].startswith("nvidia/") for f in found),
              f"region probe: the GPUs of the machine: {r.stdout}{r.stderr}")
        GPU0 = found[0][0] if found else GPU0
        return
    check(r.returncode == 0 and r.stdout.split("\n")[:2] == [f"{GPU0} {4 * G}", f"{GPU1} {4 * G}"],
          f"region probe: both stand-in GPUs, 4G each: {r.stdout}{r.stderr}")
    r = subprocess.run([ENV["MEMACCTCTL"], "--socket", sock, "region", "probe"], capture_output=True, text=True,
                       env=env)
    check(r.returncode == 0, f"probing again changes nothing: {r.stderr}")
    regions = {x["name"]: x["capacity"] for x in json.loads(ctl("--json", "region", "list").stdout)}
    check(regions.get(GPU0) == 4 * G and regions.get(GPU1) == 4 * G, f"listed: {regions}")
    env["LD_LIBRARY_PATH"] = ""
    r = subprocess.run([ENV["MEMACCTCTL"], "--socket", sock, "region", "probe"], capture_output=True, text=True,
                       env=env)
    check(r.returncode == 1 and "no NVIDIA driver" in r.stderr, f"without NVML: said so: {r.stderr}")


def test_refusal_and_lookups():
    ctl("create", "/job")
    ctl("set", "/job", f"{GPU0}.max=1G")
    r = prog("alloc", "600M", "--hold", "0")
    check(r.returncode == 0 and "allocated" in r.stdout, f"600M fit under 1G: {r.stdout}{r.stderr}")
    r = prog("alloc", "2G")
    check(r.returncode == 1 and "CUDA_ERROR_OUT_OF_MEMORY" in r.stdout, f"2G refused: {r.stdout}")
    check(region("/job")["events"]["max"] >= 1, "a max event in the GPU's region")
    r = prog("alloc", "2G", "--via-proc-address")
    check("CUDA_ERROR_OUT_OF_MEMORY" in r.stdout, f"through cuGetProcAddress too: {r.stdout}")
    # The driver was never asked: its capacity (the stand-in's 4G, a real GPU's) would have taken 2G.
    r = prog("alloc", "2G", env=prog_env(LD_PRELOAD=sanitizer_runtime()))
    check(r.returncode == 0, f"without the interposer the driver gives 2G: {r.stdout}")
    s = Serve()
    check(s.ready.startswith("ready"), f"serve starts: {s.ready}")
    check(s.cmd("dlalloc 700M").startswith("ok"), "found by dlsym() on a dlopen()ed driver: charged")
    check(current("/job") >= 700 * M, f"700M in /job: {current('/job')}")
    check(s.cmd("dlalloc 400M").startswith("refused"), "and refused past the max that way too")
    s.cmd("freeall")
    check(current("/job") <= STOCK_SLACK, f"freed, given back: {current('/job')}")
    s.close()
    check(wait_until(lambda: current("/job") == 0, 10), "the process gone, nothing left")


def test_budget():
    s = Serve()
    info = s.cmd("info")
    check(info == f"free={1 * G} total={1 * G}", f"budget: total = min(the device's, 1G max): {info}")
    s.alloc(300 * M)
    info = dict(kv.split("=") for kv in s.cmd("info").split())
    check(int(info["total"]) == G and G - 300 * M - STOCK_SLACK <= int(info["free"]) <= G - 300 * M,
          f"300M used: free about 724M: {info}")
    # Forced below usage: the max is taken, free is 0, never wraps.
    ctl("set", "--force", "/job", f"{GPU0}.max=100M")
    info = dict(kv.split("=") for kv in s.cmd("info").split())
    check(int(info["total"]) == 100 * M and int(info["free"]) == 0, f"over max: free 0, total 100M: {info}")
    check(s.cmd("alloc 1M").startswith("refused"), "live resize: the next allocation sees the new max")
    ctl("set", "/job", f"{GPU0}.max=2G")
    check(s.cmd("alloc 1G").startswith("ok"), "raised while it runs: 1G more fits at once")
    info = dict(kv.split("=") for kv in s.cmd("info").split())
    check(int(info["total"]) == 2 * G, f"total follows the max: {info}")
    r = prog("nvml-info")
    nv = dict(kv.split("=") for kv in r.stdout.split())
    check(r.returncode == 0 and int(nv["total"]) == 2 * G and int(nv["free"]) <= G,
          f"NVML (dlopen, dlsym) answers the same budget: {r.stdout}{r.stderr}")
    s.close()
    ctl("set", "/job", f"{GPU0}.max=1G")


def test_race(rounds):
    ctl("create", "/race")
    ctl("set", "/race", f"{GPU0}.max=1024M")
    a, b = Serve(prog_env("/race")), Serve(prog_env("/race"))
    both = one = 0
    for _ in range(rounds):
        a.send("alloc 600M")
        b.send("alloc 600M")
        ra, rb = a.read(), b.read()
        ok = ra.startswith("ok") + rb.startswith("ok")
        both += ok == 2
        one += ok == 1
        a.send("freeall")
        b.send("freeall")
        a.read()
        b.read()
    check(both == 0, f"2 x 600M against 1024M, {rounds} rounds: never both ({both})")
    check(one == rounds, f"and always one: {one} of {rounds}")
    a.close()
    b.close()

    ctl("set", "/race", f"{GPU0}.max=1000M")
    crowd = [Serve(prog_env("/race")) for _ in range(8)]
    worst = 0
    for _ in range(max(rounds // 10, 10)):
        for s in crowd:
            s.send("alloc 200M")
        n = sum(s.read().startswith("ok") for s in crowd)
        worst = max(worst, n)
        for s in crowd:
            s.send("freeall")
        for s in crowd:
            s.read()
    check(0 < worst <= 5, f"8 x 200M against 1000M: at most 5 a round ({worst})")
    for s in crowd:
        s.close()


def test_sigkill():
    ctl("create", "/kill")
    loops = [subprocess.Popen([ENV["CUDA_PROG"], "loop", "100000000", "64M"], stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL, env=prog_env("/kill")) for _ in range(50)]
    holders = [Serve(prog_env("/kill")) for _ in range(10)]
    for h in holders:
        for _ in range(random.randint(1, 4)):
            h.alloc(random.choice([16, 32, 64]) * M)
    time.sleep(0.5)
    for p in random.sample(loops, len(loops)):
        time.sleep(random.random() * 0.02)
        p.kill()
    for p in loops:
        p.wait()
    for h in random.sample(holders, 5):
        h.kill()
    live = [h for h in holders if h.p.poll() is None]
    held = sum(h.held for h in live)

    def settled():
        return held <= current("/kill") <= held + STOCK_SLACK * len(live)

    check(wait_until(settled, 15),
          f"after 55 kill -9: usage {current('/kill')} is what the 5 live ones hold ({held}, + their stocks)")
    check(ctl("info", check_rc=False).returncode == 0, "the daemon answers")
    for h in live:
        h.close()
    check(wait_until(lambda: current("/kill") == 0, 15), f"all gone: 0 ({current('/kill')})")


def test_pools_and_vmm():
    ctl("create", "/pool")
    ctl("set", "/pool", f"{GPU0}.max=1G")
    s = Serve(prog_env("/pool"))
    r = s.cmd("pool 100M")
    reserved = int(r.split("reserved=")[1]) if "reserved=" in r else 0
    check(r.startswith("ok") and (reserved >= 100 * M if REAL else reserved == 100 * M), f"a pool allocation: {r}")
    s.cmd("freeall")
    check(current("/pool") >= 100 * M, f"freed into the pool: its reserve stays charged ({current('/pool')})")
    r = s.cmd("trim")
    check(r == "trimmed reserved=0", f"trimmed: {r}")
    check(current("/pool") <= STOCK_SLACK, f"the trim gave the reserve back ({current('/pool')})")
    check(s.cmd("pool 1100M").startswith("refused"), "a pool that would grow past the max is refused")
    # The driver's default: a synchronisation gives the reserve back, and the charge follows.
    check(s.cmd("release 0") == "set", "the release threshold at the driver's default, 0")
    r = s.cmd("pool 200M")
    s.send("freeall")  # cuMemFreeAsync, then cuStreamSynchronize
    s.read()
    check(current("/pool") <= STOCK_SLACK,
          f"freed and synchronised: the driver gave the reserve back, and so did the charge ({current('/pool')})")
    s.close()
    r = prog("vmm", "64M", env=prog_env("/pool"))
    lines = r.stdout.splitlines()
    check(r.returncode == 0, f"the VMM sequence runs: {r.stdout}{r.stderr}")
    frees = [int(w.split("=")[1]) for line in lines for w in line.split() if w.startswith("free=")]
    # Each step prints the budget it leaves: from cuMemCreate to cuMemRelease 64M less.
    check(len(frees) >= 3 and G - 64 * M - STOCK_SLACK <= frees[0] <= G - 64 * M,
          f"cuMemCreate charged 64M (the budget fell by it): {frees}")
    check(frees and frees[-1] >= G - STOCK_SLACK, f"cuMemRelease gave it back: {frees}")


def test_reclaim_pools():
    """A pool's unused reserve is given back when another charge needs it:
    the interposer trims it on the daemon's request."""
    ctl("create", "/rec")
    ctl("set", "/rec", f"{GPU0}.max=1G")
    ctl("create", "/rec/cache")
    ctl("create", "/rec/app")
    a = Serve(prog_env("/rec/cache"))
    r = a.cmd("pool 600M")
    check(r.startswith("ok"), f"a pool of 600M: {r}")
    a.cmd("freeall")
    check(current("/rec/cache") >= 600 * M, f"its reserve stays charged: {current('/rec/cache')}")
    b = Serve(prog_env("/rec/app"))
    r = b.cmd("alloc 600M")
    check(r.startswith("ok"), f"600M more fit once the pool's reserve was given back: {r}")
    check(current("/rec/cache") <= STOCK_SLACK, f"the pool was trimmed: {current('/rec/cache')}")
    r = a.cmd("pool 500M")
    check(r.startswith("refused"), f"the pool cannot grow back past the max (600M + 500M > 1G): {r}")
    a.close()
    b.close()


def test_placement():
    cg = None
    with open("/proc/self/cgroup") as f:
        for line in f:
            hier, ctrl, path = line.rstrip("\n").split(":", 2)
            if "memory" in ctrl.split(",") or (hier == "0" and cg is None):
                cg = path
    ctl("create", "/placed")
    ctl("create", "/secret")
    if cg is None:
        print("SKIP: placement: no memory cgroup line in /proc/self/cgroup")
        return
    ctl("rule", "add", cg, "/placed")
    env = prog_env(None)  # nothing but what the interposer needs: no MEMACCT_GROUP
    # A child with its environment wiped, in a session of its own, that
    # holds 50M while a child it execs allocates 50M more.
    r = subprocess.run([ENV["CUDA_PROG"], "exec-child", "50M"], capture_output=True, text=True, env=env,
                       timeout=60, preexec_fn=os.setsid)
    check(r.returncode == 0 and "child exited status=0" in r.stdout,
          f"a wiped child under setsid and its exec'd child allocate: {r.stdout}{r.stderr}")
    check(region("/placed")["peak"] >= 100 * M,
          f"both were charged in their cgroup's group, at once: {region('/placed')['peak']}")
    if os.getuid() == 0:
        nobody = dict(prog_env("/secret"))
        def as_nobody():
            os.setgroups([])
            os.setgid(65534)
            os.setuid(65534)

        r = subprocess.run([ENV["CUDA_PROG"], "alloc", "30M", "--hold", "0"], capture_output=True, text=True,
                           env=nobody, timeout=30, preexec_fn=as_nobody)
        check(region("/secret")["peak"] == 0,
              f"MEMACCT_GROUP=/secret took nobody nowhere it may not go: {r.stdout}{r.stderr}")
    ctl("rule", "remove", cg)


def run(*args, env=None, user=None, timeout=60):
    """memacctctl run, as the test's own command line would: the interposer of this build."""
    e = dict(prog_env(None), **(env or {}))
    preexec = None
    if user is not None:
        def preexec():
            os.setgroups([])
            os.setgid(user)
            os.setuid(user)
    return subprocess.run([ENV["MEMACCTCTL"], "--socket", sock, "run", "--interposer", ENV["INTERPOSER"], *args],
                          capture_output=True, text=True, env=e, timeout=timeout, preexec_fn=preexec)


def test_run():
    """memacctctl run for unmodified programs: device limits through the
    interposer it injects, host memory through a kernel memory cgroup."""
    r = run(f"{GPU0}.max=100M", "--", ENV["CUDA_PROG"], "alloc", "200M")
    check(r.returncode == 1 and "CUDA_ERROR_OUT_OF_MEMORY" in r.stdout,
          f"run {GPU0}.max=100M: a 200M allocation refused: {r.stdout}{r.stderr}")
    r = run(f"{GPU0}.max=300M", "--", ENV["CUDA_PROG"], "alloc", "200M")
    check(r.returncode == 0 and "allocated" in r.stdout, f"and 200M under 300M fits: {r.stdout}{r.stderr}")
    r = run("--name", "kept", "--keep-group", "--region", GPU0, "--", ENV["CUDA_PROG"], "alloc", "64M")
    check(r.returncode == 0 and region("/run.slice/kept")["peak"] >= 64 * M,
          f"run --region: the interposer without a limit, the allocation charged: {r.stdout}{r.stderr}")
    ctl("remove", "/run.slice/kept")
    for m in ("/sys/fs/cgroup/memory", "/sys/fs/cgroup"):  # kept with the group: ours to remove
        try:
            os.rmdir(f"{m}/run.slice/kept")
        except OSError:
            pass
    r = run("--region", "nvidia/0000:ff:00.0/vidmem", "--", "true")
    check(r.returncode == 1 and "no such region" in r.stderr, f"an unknown --region is refused: {r.stderr}")
    if REAL or os.getuid() != 0:
        return
    # Host memory is the kernel's: max= is its memory cgroup's limit.
    r = run("max=50M", "--", "/usr/bin/python3", "-c", "x = bytearray(200_000_000); print('alive')")
    check(r.returncode == 137 and "alive" not in r.stdout,
          f"max=50M: the kernel stops a program that takes 200M (OOM kill): {r.returncode} {r.stdout}{r.stderr}")
    r = run("--name", "cg", "max=1G", "--", "/usr/bin/python3", "-c",
            "import sys, time; x = bytearray(150_000_000); print(open('/proc/self/cgroup').read()); "
            "sys.stdout.flush(); time.sleep(2.5)", timeout=60)
    check(r.returncode == 0 and ":/run.slice/cg\n" in r.stdout,
          f"the command runs in the kernel cgroup of the group's path: {r.stdout}{r.stderr}")
    p = subprocess.Popen([ENV["MEMACCTCTL"], "--socket", sock, "run", "--name", "cg2", "max=1G", "--",
                          "/usr/bin/python3", "-c", "import time; x = bytearray(150_000_000); time.sleep(4)"],
                         env=prog_env(None))

    def kernel_usage():
        d = json.loads(ctl("--json", "show", "/run.slice/cg2", check_rc=False).stdout or "{}")
        return d.get("kernel_current", 0) if isinstance(d.get("kernel_current", 0), int) else 0

    # 150,000,000 bytes: 143 MiB, and the interpreter's own.
    check(wait_until(lambda: kernel_usage() >= 143 * M, 10),
          f"show gives the kernel's usage of the command: {kernel_usage()}")
    d = json.loads(ctl("--json", "show", "/run.slice/cg2", check_rc=False).stdout or "{}")
    check(d.get("max") == G, f"and its max, the kernel's: {d.get('max')}")
    p.wait(30)
    # A user who cannot make a kernel cgroup is told so; max= is refused.
    ctl("create", "/users")
    ctl("create", "/users/nobody", "owner=65534")
    r = run("--group", "/users/nobody/job", "max=50M", "--", "true", user=65534)
    check(r.returncode == 1 and "refused" in r.stderr and "kernel" in r.stderr,
          f"max= where no kernel cgroup can be made: refused, and why: {r.stderr}")
    r = run("--group", "/users/nobody/job2", "--", "true", user=65534)
    check(r.returncode == 0 and "host memory is not accounted" in r.stderr,
          f"without max=: it runs, and says host memory is not accounted: {r.returncode} {r.stderr}")


def test_fork_and_policy():
    """A forked child is charged in a session of its own; the daemon out of
    reach is the administrator's call (on-unreachable), not the program's."""
    ctl("create", "/forked")
    r = prog("fork-child", "50M", env=prog_env("/forked"))
    check(r.returncode == 0 and "child exited status=0" in r.stdout,
          f"a forked child allocates through the interposer: {r.stdout}{r.stderr}")
    check(region("/forked")["peak"] >= 100 * M, f"parent and child both charged: {region('/forked')['peak']}")
    check(wait_until(lambda: current("/forked") == 0, 10), "both gone: nothing left (the child's own session)")
    for policy, want in (("deny", 1), ("allow", 0)):
        conf = os.path.join(tmp, f"cuda-{policy}.conf")
        with open(conf, "w") as f:
            f.write(f"[interposer]\nsocket = {tmp}/nobody-listens.sock\non-unreachable = {policy}\n")
        os.chmod(conf, 0o644)
        r = prog("alloc", "10M", env=prog_env("/forked", MEMACCT_CUDA_CONFIG=conf))
        check(r.returncode == want, f"daemon unreachable, on-unreachable = {policy}: exit {r.returncode} {r.stdout}")
    if os.getuid() == 0:
        # A file others may write is not the administrator's: ignored, so deny.
        loose = os.path.join(tmp, "cuda-loose.conf")
        with open(loose, "w") as f:
            f.write(f"[interposer]\nsocket = {tmp}/nobody-listens.sock\non-unreachable = allow\n")
        os.chmod(loose, 0o666)
        r = prog("alloc", "10M", env=prog_env("/forked", MEMACCT_CUDA_CONFIG=loose))
        check(r.returncode == 1 and "not root's alone" in r.stderr,
              f"a world-writable settings file is ignored: {r.returncode} {r.stderr}")


def test_crowd(n):
    ctl("create", "/crowd")
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard < 3 * n + 64:
        print(f"SKIP: {n} processes: the file limit ({hard}) is too low")
        return
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    crowd = []

    def budget_query_usec(s, times=200):
        """The median of cuMemGetInfo() through the interposer, a pipe's
        round trip included: printed, never asserted (docs/cuda.md)."""
        v = []
        for _ in range(times):
            t = time.monotonic()
            s.cmd("info")
            v.append(time.monotonic() - t)
        return sorted(v)[len(v) // 2] * 1e6

    try:
        for _ in range(min(16, n)):
            crowd.append(Serve(prog_env("/crowd")))
        few = budget_query_usec(crowd[0])
        for _ in range(n - len(crowd)):
            crowd.append(Serve(prog_env("/crowd")))
        many = budget_query_usec(crowd[0])
        print(f"budget query (cuMemGetInfo, median): {few:.0f} us with {min(16, n)} processes, "
              f"{many:.0f} us with {n}")
        ok = sum(s.alloc(M).startswith("ok") for s in crowd)
        check(ok == n, f"{n} processes each allocate 1M: {ok}")
        held = sum(s.held for s in crowd)
        check(held <= current("/crowd") <= held + n * STOCK_SLACK,
              f"usage of {n} processes: {current('/crowd')} for {held} held")
        for s in crowd:
            s.cmd("freeall")
        check(current("/crowd") <= n * STOCK_SLACK, "all freed")
    finally:
        for s in crowd:
            s.close()
    check(wait_until(lambda: current("/crowd") == 0, 30), f"{n} processes gone: exactly 0 ({current('/crowd')})")


def main():
    global tmp, sock
    for var in ("MEMACCTD", "MEMACCTCTL", "CUDA_PROG", "INTERPOSER") + (() if REAL else ("STANDIN_LD_LIBRARY_PATH",)):
        if not ENV.get(var):
            print(f"SKIP: {var} is not set")
            return 77
    rounds = int(ENV.get("MEMACCT_CUDA_ROUNDS", "1000"))
    crowd = int(ENV.get("MEMACCT_CUDA_CROWD", "2048"))
    if REAL:
        # Each process holds a context on the GPU, hundreds of MiB of it.
        crowd = min(crowd, 16)
    if sanitizer_runtime() and crowd > 256:
        # Each sanitized process costs tens of MiB: 2,048 would not fit.
        print(f"under a sanitizer: {crowd} processes cut to 256")
        crowd = 256
    tmp = tempfile.mkdtemp(prefix="memacct-cuda.")
    os.chmod(tmp, 0o755)
    sock = os.path.join(tmp, "s.sock")
    with open(os.path.join(tmp, "cuda.conf"), "w") as f:
        f.write(f"[interposer]\nsocket = {sock}\non-unreachable = deny\n")
    os.chmod(os.path.join(tmp, "cuda.conf"), 0o644)
    conf = os.path.join(tmp, "memacctd.conf")
    with open(conf, "w") as f:
        f.write(f"[limits]\nsessions-per-uid = {crowd + 256}\nconnections-per-uid = {crowd + 256}\n"
                "[cgroup]\nsample-interval = 1\n")
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    log = open(os.path.join(tmp, "daemon.log"), "w+")
    daemon = subprocess.Popen([ENV["MEMACCTD"], "--socket", sock, "--state-dir", os.path.join(tmp, "state"),
                               "--config", conf, "--bus", "none"], stdout=log, stderr=subprocess.STDOUT)
    try:
        if not wait_until(lambda: os.path.exists(sock) or daemon.poll() is not None, 30) or daemon.poll():
            raise RuntimeError("memacctd did not start")
        os.chmod(sock, 0o666)
        test_probe()
        test_refusal_and_lookups()
        test_budget()
        test_race(rounds)
        test_sigkill()
        test_pools_and_vmm()
        test_reclaim_pools()
        test_placement()
        test_run()
        test_fork_and_policy()
        test_crowd(crowd)
    except Exception as e:  # counted, and the daemon still stopped
        import traceback
        traceback.print_exc()
        check(False, f"stopped early: {type(e).__name__}: {e}")
    finally:
        stop_daemon(daemon, log, TALLY, timeout=60)
        shutil.rmtree(tmp, ignore_errors=True)
    return TALLY.summary()


if __name__ == "__main__":
    sys.exit(main())
