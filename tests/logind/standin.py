"""A private ``dbus-daemon`` and a logind stand-in on it (see the package docstring).

The stand-in answers what the kubelet calls, as logind does:
- ``org.freedesktop.login1.Manager.Inhibit(what, who, why, mode)``: a new pipe, whose write
  end goes to the caller as the lock (``h``); the stand-in keeps the read end and sees the
  lock released when it reads end of file (every copy of the write end closed);
- ``ListInhibitors``: the locks held, as ``a(ssssuu)``;
- ``org.freedesktop.DBus.Properties.Get``/``GetAll`` of ``InhibitDelayMaxUSec`` (``t``);
- ``org.freedesktop.systemd1.Manager.KillUnit("systemd-logind.service", _, 1)``: logind's
  SIGHUP: ``InhibitDelayMaxSec=`` is read again from the drop-ins in ``config_directory``;
and emits ``PrepareForShutdown(b)`` when a test calls ``prepare_for_shutdown``.
"""

from __future__ import annotations

import os
import re
import select
import shutil
import subprocess
import tempfile
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from jeepney import DBusAddress, HeaderFields, MessageType, new_error, new_method_return, new_signal
from jeepney.bus_messages import message_bus
from jeepney.io.threading import DBusConnection, ReceiveStopped, open_dbus_connection

LOGIND = "org.freedesktop.login1"
LOGIND_PATH = "/org/freedesktop/login1"
LOGIND_MANAGER = "org.freedesktop.login1.Manager"
SYSTEMD = "org.freedesktop.systemd1"
PROPERTIES = "org.freedesktop.DBus.Properties"

BUS_CONFIG = """<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>system</type>
  <listen>unix:path={socket}</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow user="*"/>
    <allow own="*"/>
    <allow send_destination="*"/>
    <allow receive_sender="*"/>
  </policy>
</busconfig>
"""


class PrivateBus:
    """``dbus-daemon --config-file=<a minimal system bus> --print-address``, stopped by
    ``stop`` (or leaving the ``with`` block)."""

    def __init__(self) -> None:
        self.directory = tempfile.mkdtemp(prefix="ka-dbus-")
        config = Path(self.directory) / "system.conf"
        config.write_text(BUS_CONFIG.format(socket=Path(self.directory) / "system_bus_socket"))
        self.process = subprocess.Popen(
            ["dbus-daemon", f"--config-file={config}", "--print-address", "--nofork"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        assert self.process.stdout is not None
        line = self.process.stdout.readline().strip()
        if not line:
            self.stop()
            raise RuntimeError(f"dbus-daemon printed no address: "
                               f"{self.process.stderr.read() if self.process.stderr else ''}")
        self.address = line

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        for stream in (self.process.stdout, self.process.stderr):
            if stream is not None:
                stream.close()
        shutil.rmtree(self.directory, ignore_errors=True)

    def __enter__(self) -> PrivateBus:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


@dataclass
class Inhibitor:
    """One lock the stand-in handed out."""

    what: str
    who: str
    why: str
    mode: str
    read_end: int
    released: threading.Event = field(default_factory=threading.Event)


class LogindStandIn:
    """logind on ``address`` with ``inhibit_delay_max`` seconds of InhibitDelayMaxUSec."""

    def __init__(self, address: str, inhibit_delay_max: float = 5.0,
                 config_directory: str = "") -> None:
        self.address = address
        self.inhibit_delay_max_usec = int(inhibit_delay_max * 1e6)
        self.config_directory = config_directory
        self.inhibitors: list[Inhibitor] = []
        self.reloads = 0
        self.changed = threading.Condition()
        self._stop_r, self._stop_w = os.pipe()  # wakes the lock watchers on stop
        self._conn: DBusConnection = open_dbus_connection(address, enable_fds=True)
        for name in (LOGIND, SYSTEMD):  # owned before anyone may call
            serial = next(self._conn.outgoing_serial)
            self._conn.send(message_bus.RequestName(name, 4), serial=serial)  # DO_NOT_QUEUE
            while True:
                reply = self._conn.receive(timeout=10)
                if reply.header.fields.get(HeaderFields.reply_serial) == serial:
                    if reply.header.message_type != MessageType.method_return \
                            or reply.body[0] != 1:  # PRIMARY_OWNER
                        raise RuntimeError(f"could not own {name}: {reply.body}")
                    break
        self._watchers: list[threading.Thread] = []
        self._thread = threading.Thread(target=self._serve, name="logind-standin",
                                        daemon=True)
        self._thread.start()

    # --- what a test does -------------------------------------------------------------------

    def prepare_for_shutdown(self, active: bool) -> None:
        emitter = DBusAddress(LOGIND_PATH, interface=LOGIND_MANAGER)
        self._conn.send(new_signal(emitter, "PrepareForShutdown", "b", (active,)))

    def held(self) -> list[Inhibitor]:
        """The locks not yet released."""
        with self.changed:
            return [i for i in self.inhibitors if not i.released.is_set()]

    def stop(self) -> None:
        self._conn.close()
        self._thread.join(timeout=10)
        os.write(self._stop_w, b"x")
        for thread in self._watchers:
            thread.join(timeout=10)
        os.close(self._stop_r)
        os.close(self._stop_w)
        with self.changed:
            for inhibitor in self.inhibitors:
                if inhibitor.read_end >= 0:
                    os.close(inhibitor.read_end)
                    inhibitor.read_end = -1

    def __enter__(self) -> LogindStandIn:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # --- logind's side ------------------------------------------------------------------------

    def _serve(self) -> None:
        try:
            while True:
                message = self._conn.receive()
                if message.header.message_type == MessageType.method_call:
                    reply = self._answer(message)
                    if isinstance(reply, _ClosingReply):
                        self._conn.send(reply.reply)
                        os.close(reply.fd)
                    else:
                        self._conn.send(reply)
        except (ReceiveStopped, OSError, EOFError):
            return

    def _answer(self, call: Any) -> Any:
        fields = call.header.fields
        interface = fields.get(HeaderFields.interface)
        member = fields.get(HeaderFields.member)
        path = fields.get(HeaderFields.path)
        if path == LOGIND_PATH and interface == LOGIND_MANAGER and member == "Inhibit":
            what, who, why, mode = call.body
            read_end, write_end = os.pipe()
            inhibitor = Inhibitor(what, who, why, mode, read_end)
            with self.changed:
                self.inhibitors.append(inhibitor)
                self.changed.notify_all()
            watcher = threading.Thread(target=self._watch_lock, args=(inhibitor,), daemon=True)
            self._watchers.append(watcher)
            watcher.start()
            reply = new_method_return(call, "h", (write_end,))
            # The write end is passed when the reply is sent; this copy goes after that.
            return _ClosingReply(reply, write_end)
        if path == LOGIND_PATH and interface == LOGIND_MANAGER and member == "ListInhibitors":
            rows = [(i.what, i.who, i.why, i.mode, 0, os.getpid()) for i in self.held()]
            return new_method_return(call, "a(ssssuu)", (rows,))
        if path == LOGIND_PATH and interface == PROPERTIES and member == "Get":
            _iface, name = call.body
            if name == "InhibitDelayMaxUSec":
                return new_method_return(call, "v", (("t", self.inhibit_delay_max_usec),))
            return new_error(call, "org.freedesktop.DBus.Error.UnknownProperty", "s",
                             (f"unknown property {name}",))
        if path == LOGIND_PATH and interface == PROPERTIES and member == "GetAll":
            return new_method_return(call, "a{sv}", (
                {"InhibitDelayMaxUSec": ("t", self.inhibit_delay_max_usec)},))
        if interface == "org.freedesktop.systemd1.Manager" and member == "KillUnit":
            unit, _who, signal = call.body
            if unit == "systemd-logind.service" and signal == 1:
                self._reload()
            return new_method_return(call)
        return new_error(call, "org.freedesktop.DBus.Error.UnknownMethod", "s",
                         (f"{interface}.{member} is not known to the stand-in",))

    def _reload(self) -> None:
        """logind's SIGHUP: InhibitDelayMaxSec from the drop-ins, the last file wins."""
        with self.changed:
            self.reloads += 1
            if self.config_directory and os.path.isdir(self.config_directory):
                for name in sorted(os.listdir(self.config_directory)):
                    if not name.endswith(".conf"):
                        continue
                    text = (Path(self.config_directory) / name).read_text()
                    found = re.search(r"^InhibitDelayMaxSec=(\d+)", text, re.MULTILINE)
                    if found:
                        self.inhibit_delay_max_usec = int(found.group(1)) * 1000000
            self.changed.notify_all()

    def _watch_lock(self, inhibitor: Inhibitor) -> None:
        fd = inhibitor.read_end
        while True:
            ready, _, _ = select.select([fd, self._stop_r], [], [])
            if self._stop_r in ready:
                return
            if not os.read(fd, 4096):
                break
        inhibitor.released.set()
        with self.changed:
            self.changed.notify_all()


class _ClosingReply:
    """A reply whose passed fd is closed here once sent (see LogindStandIn._answer)."""

    def __init__(self, reply: Any, fd: int) -> None:
        self.reply, self.fd = reply, fd
