# SPDX-License-Identifier: LGPL-2.1-or-later
"""A reclaim client of memacctd's on either transport, for test-reclaim.py:
the same few calls on the socket (pbconn.py, python3-protobuf) and on the
bus (GDBus through python3-gi, an implementation of D-Bus independent of
the daemon's sd-bus). Every call answers a status word as the socket
names it ("OK", "LIMIT_EXCEEDED", ...); a bus error's name maps to the
same word (org.memacct1.Error.LimitExceeded: LIMIT_EXCEEDED).

A bus client's ReclaimRequest signals, addressed to it alone, are
dispatched on a GLib main context of its own, iterated by next_request()
on whichever one thread serves the client."""

import re
import time

from pbconn import Conn

BUS_NAME = "org.memacct1"
BUS_PATH = "/org/memacct1"
BUS_IFACE = "org.memacct1.Manager"


class SockClient:
    def __init__(self, pb, sock_path):
        self.pb = pb
        self.c = Conn(pb, sock_path)

    def _status(self, r):
        return self.pb.Status.Name(r.status).removeprefix("STATUS_")

    def _call(self, timeout=30, **op):
        r = self.c.call(timeout=timeout, **op)
        return self._status(r), r

    def attach(self, path):
        return self._call(attach=self.pb.Attach(path=path))[0]

    def charge(self, nbytes, no_wait=False, stat="", timeout=60):
        return self._call(timeout, charge=self.pb.Charge(bytes=nbytes, no_wait=no_wait, stat=stat))[0]

    def uncharge(self, nbytes, stat=""):
        return self._call(uncharge=self.pb.Uncharge(bytes=nbytes, stat=stat))[0]

    def set_reclaimable(self, stat=""):
        return self._call(set_reclaimable=self.pb.SetReclaimable(stat=stat))[0]

    def reclaim_done(self, rid, cannot=False):
        return self._call(reclaim_done=self.pb.ReclaimDone(id=rid, cannot=cannot))[0]

    def reclaim(self, path, nbytes, timeout=60):
        s, r = self._call(timeout, reclaim=self.pb.Reclaim(path=path, bytes=nbytes))
        return s, r.reclaimed.released

    def set_max(self, path, value, force=False, no_reclaim=False, timeout=60):
        return self._call(timeout, set_limits=self.pb.SetLimits(
            path=path, limits=self.pb.Limits(max=value), force=force, no_reclaim=no_reclaim))[0]

    def next_request(self, timeout):
        """The next ReclaimRequest as (id, bytes), or None."""
        deadline = time.monotonic() + timeout
        while True:
            f = self.c.read(timeout=max(0.0, deadline - time.monotonic()), unsolicited=True)
            if f is None:
                return None
            if f.WhichOneof("result") == "reclaim":
                return f.reclaim.id, f.reclaim.bytes

    def close(self):
        self.c.close()


def bus_status_word(name):
    """org.memacct1.Error.LimitExceeded -> LIMIT_EXCEEDED."""
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name.rsplit(".", 1)[-1]).upper()


class BusClient:
    def __init__(self, address):
        from gi.repository import Gio, GLib
        self.Gio, self.GLib = Gio, GLib
        self.ctx = GLib.MainContext.new()
        self.requests = []
        self.ctx.push_thread_default()
        try:
            flags = (Gio.DBusConnectionFlags.AUTHENTICATION_CLIENT
                     | Gio.DBusConnectionFlags.MESSAGE_BUS_CONNECTION)
            self.conn = Gio.DBusConnection.new_for_address_sync(address, flags, None, None)
            # Dispatched on self.ctx, the context that is the default now.
            self.conn.signal_subscribe(None, BUS_IFACE, "ReclaimRequest", BUS_PATH, None,
                                       Gio.DBusSignalFlags.NONE, self._on_request)
        finally:
            self.ctx.pop_thread_default()

    def _on_request(self, conn, sender, path, iface, member, params):
        rid, region, nbytes = params.unpack()
        self.requests.append((rid, nbytes))

    def _call(self, method, signature, args, reply=None, timeout=60):
        GLib = self.GLib
        try:
            v = self.conn.call_sync(BUS_NAME, BUS_PATH, BUS_IFACE, method, GLib.Variant(signature, args),
                                    GLib.VariantType(reply) if reply else None,
                                    self.Gio.DBusCallFlags.NONE, int(timeout * 1000), None)
        except GLib.Error as e:
            name = self.Gio.DBusError.get_remote_error(e)
            return (bus_status_word(name) if name else f"ERROR {e.message}"), None
        return "OK", v.unpack() if v is not None else None

    def attach(self, path):
        return self._call("Attach", "(s)", (path,), "(s)")[0]

    def charge(self, nbytes, no_wait=False, stat="", timeout=60):
        return self._call("ChargeWithFlags", "(sstst)", ("", "", nbytes, stat, 2 if no_wait else 0), "(tt)",
                          timeout)[0]

    def uncharge(self, nbytes, stat=""):
        return self._call("Uncharge", "(stsb)", ("", nbytes, stat, False))[0]

    def set_reclaimable(self, stat=""):
        return self._call("SetReclaimable", "(ssb)", ("", stat, True))[0]

    def reclaim_done(self, rid, cannot=False):
        return self._call("ReclaimDone", "(tb)", (rid, cannot))[0]

    def reclaim(self, path, nbytes, timeout=60):
        s, v = self._call("Reclaim", "(sst)", (path, "", nbytes), "(t)", timeout)
        return s, v[0] if v else 0

    def set_max(self, path, value, force=False, no_reclaim=False, timeout=60):
        flags = (1 if force else 0) | (2 if no_reclaim else 0)
        return self._call("SetLimitsWithFlags", "(ssa{st}t)", (path, "", {"max": value}, flags), None,
                          timeout)[0]

    def next_request(self, timeout):
        deadline = time.monotonic() + timeout
        while not self.requests and time.monotonic() < deadline:
            if not self.ctx.iteration(False):
                time.sleep(0.005)
        return self.requests.pop(0) if self.requests else None

    def close(self):
        self.conn.close_sync(None)
