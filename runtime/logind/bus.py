"""One connection to the system D-Bus: calls from any thread, signals to one reader.

A receiver thread reads every message: a reply goes to the call waiting on its serial, a
signal the connection subscribed to goes to ``signals`` (a queue). When the connection
ends (the bus went away, or ``close``) the waiting calls fail and ``signals`` gets
``None``, so its reader learns it, as a Go channel is closed.
"""

from __future__ import annotations

import os
import queue
import threading
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any

from loguru import logger

from runtime.errors import LogindError

DEFAULT_SYSTEM_BUS_ADDRESS = "unix:path=/run/dbus/system_bus_socket"
CALL_TIMEOUT = 25.0
"""How long a call waits for its reply (D-Bus's own default: 25 s)."""


def system_bus_address() -> str:
    """DBUS_SYSTEM_BUS_ADDRESS when set (as libdbus and godbus read it), else the
    well-known socket."""
    return os.environ.get("DBUS_SYSTEM_BUS_ADDRESS", "") or DEFAULT_SYSTEM_BUS_ADDRESS


class SystemBus:
    """A connection to the bus at ``address`` (the system bus by default)."""

    def __init__(self, address: str | None = None) -> None:
        from jeepney.io.threading import open_dbus_connection

        self.address = address or system_bus_address()
        try:
            self._conn: Any = open_dbus_connection(self.address, enable_fds=True)
        except (OSError, RuntimeError, ValueError) as err:
            raise LogindError(f"cannot connect to the system bus at {self.address}: {err}"
                              ) from err
        self._lock = threading.Lock()
        self._waiting: dict[int, Future[Any]] = {}
        self._closed = False
        self.signals: queue.Queue[Any] = queue.Queue()
        self._reader = threading.Thread(target=self._receive, name="dbus-receiver",
                                        daemon=True)
        self._reader.start()

    @property
    def unique_name(self) -> str:
        return str(self._conn.unique_name)

    def call(self, message: Any, timeout: float = CALL_TIMEOUT) -> tuple[Any, ...]:
        """Send a method call and return its reply's body; an error reply raises
        LogindError with the error's name and text."""
        from jeepney import MessageType

        future: Future[Any] = Future()
        with self._lock:
            if self._closed:
                raise LogindError("the system bus connection is closed")
            serial = next(self._conn.outgoing_serial)
            self._waiting[serial] = future
        try:
            self._conn.send(message, serial=serial)
            reply = future.result(timeout=timeout)
        except FutureTimeout as err:
            raise LogindError(f"no reply in {timeout:g}s") from err
        except OSError as err:
            raise LogindError(f"the system bus connection failed: {err}") from err
        finally:
            with self._lock:
                self._waiting.pop(serial, None)
        if reply is None:
            raise LogindError("the system bus connection ended before the reply")
        if reply.header.message_type == MessageType.error:
            from jeepney import HeaderFields

            name = reply.header.fields.get(HeaderFields.error_name, "")
            text = reply.body[0] if reply.body else ""
            raise LogindError(f"{name}: {text}" if text else str(name))
        return tuple(reply.body)

    def send(self, message: Any) -> None:
        """Send a message that has no reply (a signal)."""
        try:
            self._conn.send(message)
        except OSError as err:
            raise LogindError(f"the system bus connection failed: {err}") from err

    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
        self._conn.close()  # interrupts the receiver
        self._reader.join(timeout=5.0)

    def _receive(self) -> None:
        from jeepney import HeaderFields, MessageType

        try:
            while True:
                message = self._conn.receive()
                kind = message.header.message_type
                if kind in (MessageType.method_return, MessageType.error):
                    serial = message.header.fields.get(HeaderFields.reply_serial)
                    with self._lock:
                        future = self._waiting.get(serial)
                    if future is not None and not future.done():
                        future.set_result(message)
                elif kind == MessageType.signal:
                    self.signals.put(message)
        except Exception as err:  # any end of the connection (EOF, reset, closed) ends it
            if not self._closed:
                logger.bind(pod="", uid="", container="").warning(
                    "system bus connection ended: {!r}", err)
        finally:
            with self._lock:
                self._closed = True
                waiting = list(self._waiting.values())
            for future in waiting:
                if not future.done():
                    future.set_result(None)
            self.signals.put(None)
