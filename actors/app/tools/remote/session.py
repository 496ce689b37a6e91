"""One exec or attach session over a websocket channel protocol, with a terminal or not.

``open_stream`` makes the websocket connection (the daemon's refusal becomes a
StreamRefused with the Status's message); ``RemoteCommand.run`` moves stdin out and
stdout/stderr in until the server closes, then returns the exit status from the error
channel. With a TTY the local terminal is put in raw mode for the session (and restored),
its size is sent at the start and again on every SIGWINCH.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import termios
import threading
import tty as ttymod
import urllib.parse
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from types import FrameType
from typing import BinaryIO

from websockets.exceptions import ConnectionClosed, InvalidHandshake, InvalidStatus
from websockets.sync.client import ClientConnection, connect
from websockets.typing import Subprotocol

from actors.app.tools.remote import channels
from actors.app.tools.remote.server import ServerOptions

_OPEN_TIMEOUT = 30.0
_READ = 32 * 1024


class StreamRefused(Exception):
    """The daemon (or the runtime behind it) did not upgrade the connection."""


def stream_url(server: ServerOptions, path: str, query: Sequence[tuple[str, str]]) -> str:
    """The ws:// or wss:// URL of ``path`` (segments already quoted) on the daemon."""
    parts = urllib.parse.urlsplit(server.url)
    scheme = "wss" if parts.scheme == "https" else "ws"
    return urllib.parse.urlunsplit(
        (scheme, parts.netloc, parts.path.rstrip("/") + path, urllib.parse.urlencode(query),
         ""))


def _refusal(err: InvalidStatus) -> str:
    body = err.response.body or b""
    try:
        status = json.loads(body)
        message = str(status.get("message") or "") if isinstance(status, dict) else ""
    except ValueError:
        message = body.decode(errors="replace").strip()
    return message or f"{err.response.status_code} {err.response.reason_phrase}"


def open_stream(server: ServerOptions, url: str, protocols: Sequence[str]) -> ClientConnection:
    """The websocket to ``url``, or StreamRefused naming why not."""
    try:
        return connect(url, ssl=server.ssl_context(), additional_headers=server.headers(),
                       subprotocols=[Subprotocol(p) for p in protocols],
                       open_timeout=_OPEN_TIMEOUT, max_size=None, compression=None,
                       close_timeout=2.0)
    except InvalidStatus as err:
        raise StreamRefused(f"unable to upgrade connection: {_refusal(err)}") from err
    except (InvalidHandshake, OSError, TimeoutError) as err:
        raise StreamRefused(f"unable to connect to {url}: {err}") from err


@contextlib.contextmanager
def raw_terminal(fd: int) -> Iterator[None]:
    """The terminal on ``fd`` in raw mode for the block, restored after."""
    saved = termios.tcgetattr(fd)
    try:
        ttymod.setraw(fd)
        yield
    finally:
        termios.tcsetattr(fd, termios.TCSADRAIN, saved)


def terminal_size(fd: int) -> tuple[int, int] | None:
    """``(width, height)`` of the terminal on ``fd``, or None."""
    try:
        size = os.get_terminal_size(fd)
    except OSError:
        return None
    return size.columns, size.lines


@dataclass
class RemoteCommand:
    """The local ends of a session: where stdin comes from (None: not sent) and where
    stdout and stderr go; ``tty_fd`` is the terminal whose size is sent (None: no TTY)."""

    stdin: BinaryIO | None
    stdout: BinaryIO
    stderr: BinaryIO
    tty_fd: int | None = None

    def run(self, ws: ClientConnection) -> channels.ExitStatus:
        protocol = ws.subprotocol
        done = threading.Event()
        if self.stdin is not None:
            threading.Thread(target=self._send_stdin, args=(ws, protocol, done),
                             name="stdin", daemon=True).start()
        restore: Callable[[], None] = lambda: None  # noqa: E731
        if self.tty_fd is not None:
            restore = self._watch_size(ws, protocol, done)
        error = bytearray()
        try:
            for message in ws:
                channel, data = channels.decode(message)
                if channel == channels.STDOUT:
                    self._write(self.stdout, data)
                elif channel == channels.STDERR:
                    self._write(self.stderr, data)
                elif channel == channels.ERROR:
                    error += data
        except ConnectionClosed:
            pass  # the server ended the session: the error channel said how, or nothing did
        finally:
            done.set()
            restore()
        return channels.exit_status(bytes(error)) if error else channels.ExitStatus(0)

    @staticmethod
    def _write(out: BinaryIO, data: bytes) -> None:
        if data:
            out.write(data)
            out.flush()

    def _send_stdin(self, ws: ClientConnection, protocol: str | None,
                    done: threading.Event) -> None:
        assert self.stdin is not None
        fd = self.stdin.fileno()
        try:
            while not done.is_set():
                data = os.read(fd, _READ)
                if not data:
                    closing = channels.close_stdin(protocol)
                    if closing is not None:
                        ws.send(closing)
                    return
                ws.send(channels.encode(channels.STDIN, data, protocol))
        except (ConnectionClosed, OSError):
            return

    def _watch_size(self, ws: ClientConnection, protocol: str | None,
                    done: threading.Event) -> Callable[[], None]:
        """Send the terminal's size now and on each SIGWINCH; returns the undo."""
        assert self.tty_fd is not None
        fd = self.tty_fd
        changed = threading.Event()

        def on_winch(signum: int, frame: FrameType | None) -> None:
            changed.set()  # only a flag: sending from a signal handler could deadlock

        def sender() -> None:
            while not done.is_set():
                size = terminal_size(fd)
                if size is not None:
                    try:
                        ws.send(channels.resize(size[0], size[1], protocol))
                    except ConnectionClosed:
                        return
                changed.wait()
                changed.clear()

        previous = signal.signal(signal.SIGWINCH, on_winch)
        threading.Thread(target=sender, name="resize", daemon=True).start()

        def undo() -> None:
            signal.signal(signal.SIGWINCH, previous)
            changed.set()

        return undo
