#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Plays systemd's side of sd_notify(3) for memacctd.

A datagram socket stands for $NOTIFY_SOCKET and WATCHDOG_USEC asks for a
watchdog. memacctd, on a private bus, must send READY=1 only once both its
socket answers and org.memacct1 is owned; STATUS= with its groups and
sessions, updated by housekeeping when they change; WATCHDOG=1 at half
the interval; RELOADING=1 then READY=1 around SIGHUP; STOPPING=1 on
SIGTERM, and exit 0. A WATCHDOG_PID naming another process means no
watchdog (sd_watchdog_enabled(3)).

Environment: MEMACCTD, MEMACCTCTL (tests/dbus/meson.build). Skips (77)
without dbus-daemon or busctl.
"""

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

MEMACCTD = os.environ['MEMACCTD']
MEMACCTCTL = os.environ['MEMACCTCTL']
SOURCE = os.environ['MEMACCT_SOURCE_ROOT']
WATCHDOG_USEC = 400000

failed = 0
passed = 0


def check(what, ok, detail=''):
    global failed, passed
    if ok:
        passed += 1
    else:
        failed += 1
        print(f'FAIL: {what}' + (f': {detail}' if detail else ''), file=sys.stderr)


def bus_conf(sock, policy):
    """The private system bus's configuration (tests/bus-conf.sh system)."""
    script = os.path.join(SOURCE, 'tests', 'bus-conf.sh')
    return subprocess.run(['sh', script, 'system', sock, policy], check=True, capture_output=True,
                          text=True).stdout


class Notifications:
    """What the daemon sent to our NOTIFY_SOCKET, in order."""

    def __init__(self, path):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(path)
        self.seen = []

    def wait_for(self, pred, timeout=10.0):
        """The first message (new or already seen after the last match) for which pred holds."""
        deadline = time.monotonic() + timeout
        while True:
            for i, m in enumerate(self.seen):
                if pred(m):
                    del self.seen[:i + 1]
                    return m
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            self.sock.settimeout(left)
            try:
                data = self.sock.recv(4096)
            except socket.timeout:
                return None
            self.seen.append(data.decode())

    def drain(self):
        self.seen.clear()
        self.sock.settimeout(0)
        try:
            while True:
                self.sock.recv(4096)
        except (BlockingIOError, socket.timeout):
            pass


def has(key):
    return lambda m: key in m.split('\n')


def status_line(m):
    for line in m.split('\n'):
        if line.startswith('STATUS='):
            return line[len('STATUS='):]
    return None


def name_owned(bus_addr):
    r = subprocess.run(['busctl', f'--address={bus_addr}', 'call', 'org.freedesktop.DBus',
                        '/org/freedesktop/DBus', 'org.freedesktop.DBus', 'NameHasOwner', 's',
                        'org.memacct1'], capture_output=True, text=True)
    return r.stdout.strip() == 'b true'


def ctl(sock, *args):
    return subprocess.run([MEMACCTCTL, '--socket', sock, *args], capture_output=True, text=True)


def main():
    for tool in ('dbus-daemon', 'busctl'):
        if not shutil.which(tool):
            print(f'{tool} is not installed: skipped')
            return 77
    tmp = tempfile.mkdtemp(prefix='memacct-notify.')
    procs = []
    try:
        conf = os.path.join(tmp, 'bus.conf')
        with open(conf, 'w') as f:
            f.write(bus_conf(os.path.join(tmp, 'bus.sock'), os.path.join(SOURCE, 'units', 'org.memacct1.conf')))
        bus = subprocess.Popen(['dbus-daemon', f'--config-file={conf}', '--nofork', '--print-address=1'],
                               stdout=subprocess.PIPE, text=True)
        procs.append(bus)
        bus_addr = bus.stdout.readline().strip()
        check('the private bus starts', bus_addr.startswith('unix:'), bus_addr)

        notify = Notifications(os.path.join(tmp, 'notify.sock'))
        sock = os.path.join(tmp, 'memacctd.sock')
        env = dict(os.environ, NOTIFY_SOCKET=notify.sock.getsockname(), WATCHDOG_USEC=str(WATCHDOG_USEC))
        env.pop('WATCHDOG_PID', None)
        log = open(os.path.join(tmp, 'daemon.log'), 'w+')
        daemon = subprocess.Popen([MEMACCTD, '--socket', sock, '--state-dir', os.path.join(tmp, 'state'),
                                   '--workers', '2', '--bus', bus_addr], env=env, stdout=log, stderr=log)
        procs.append(daemon)

        ready = notify.wait_for(has('READY=1'))
        check('READY=1 arrives', ready is not None)
        # Checked at once: the promise is that both are up when READY=1 is sent.
        check('the bus name is owned at READY=1', name_owned(bus_addr))
        check('the socket answers at READY=1', ctl(sock, 'show', '/').returncode == 0)
        status = status_line(ready or '')
        check('READY=1 comes with a STATUS=', status is not None, repr(ready))
        check('STATUS= says where and how much', status is not None and sock in status and 'org.memacct1'
              in status and '1 group, 0 sessions' in status, repr(status))

        # Two keep-alives, each within the half interval (and some slack).
        t0 = time.monotonic()
        first = notify.wait_for(has('WATCHDOG=1'), timeout=WATCHDOG_USEC / 1e6)
        second = notify.wait_for(has('WATCHDOG=1'), timeout=WATCHDOG_USEC / 1e6)
        check('WATCHDOG=1 arrives at half WATCHDOG_USEC', first is not None and second is not None,
              f'{time.monotonic() - t0:.2f} s')

        # STATUS= follows the counts (housekeeping, every few seconds).
        check('a group is created', ctl(sock, 'create', '/n').returncode == 0)
        m = notify.wait_for(lambda m: '2 groups' in (status_line(m) or ''), timeout=10)
        check('STATUS= is updated when the counts change', m is not None)

        notify.drain()
        daemon.send_signal(signal.SIGHUP)
        m = notify.wait_for(has('RELOADING=1'))
        check('RELOADING=1 on SIGHUP', m is not None)
        m = notify.wait_for(has('READY=1'))
        check('READY=1 after the reload', m is not None)

        daemon.send_signal(signal.SIGTERM)
        m = notify.wait_for(has('STOPPING=1'))
        check('STOPPING=1 on SIGTERM', m is not None)
        rc = daemon.wait(timeout=30)
        check('memacctd exits 0', rc == 0, f'status {rc}')

        # WATCHDOG_PID for another process: no watchdog for this one.
        notify.drain()
        env['WATCHDOG_PID'] = str(os.getpid())
        daemon = subprocess.Popen([MEMACCTD, '--socket', sock, '--state-dir', os.path.join(tmp, 'state'),
                                   '--workers', '1'], env=env, stdout=log, stderr=log)
        procs.append(daemon)
        check('READY=1 without a bus', notify.wait_for(has('READY=1')) is not None)
        check('no WATCHDOG=1 when WATCHDOG_PID is another process',
              notify.wait_for(has('WATCHDOG=1'), timeout=3 * WATCHDOG_USEC / 1e6) is None)
        daemon.send_signal(signal.SIGTERM)
        check('memacctd exits 0 again', daemon.wait(timeout=30) == 0)

        if failed:
            log.seek(0)
            print('--- daemon log ---\n' + log.read(), file=sys.stderr)
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
        shutil.rmtree(tmp, ignore_errors=True)
    print(f'{passed} passed, {failed} failed')
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())
