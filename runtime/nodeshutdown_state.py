"""The last graceful node shutdown's start and end (upstream's nodeshutdown storage.go).

Upstream's kubelet keeps ``<root-dir>/graceful_node_shutdown_state``: JSON
``{"startTime": ..., "endTime": ...}``, each a Go ``time.Time`` as ``encoding/json``
writes one (RFC 3339 with the fraction's trailing zeros dropped and the local offset,
``Z`` for UTC; ``0001-01-01T00:00:00Z`` for "not yet"). It writes the start time (end
zero) as a shutdown starts and both once it ends, and reads the file as it starts so the
``kubelet_graceful_shutdown_*_time_seconds`` metrics say when the last shutdown ran,
across the restart that follows it. The file is written whole to a temporary file in the
same directory, fsynced, then renamed over the old one, as upstream's atomicWrite.

Times here are seconds since the epoch (0: the zero time); the metrics take whole
seconds, as upstream's ``timestamp`` (``time.Unix()``).
"""

from __future__ import annotations

import math
import os
import re
import tempfile
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Final, Protocol

import msgspec

from runtime.errors import ShutdownStateError

STATE_FILE: Final = "graceful_node_shutdown_state"
"""upstream's localStorageStateFile, under --root-dir."""

GO_ZERO_TIME: Final = "0001-01-01T00:00:00Z"
"""How Go's encoding/json writes a zero time.Time."""

_RFC3339 = re.compile(
    r"^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?"
    r"(?:([Zz])|([+-])(\d{2}):(\d{2}))$")


class ShutdownState(msgspec.Struct, frozen=True):
    """When the last shutdown started and ended (seconds since the epoch; 0: not yet)."""

    start_time: float = 0.0
    end_time: float = 0.0


class ShutdownStateSink(Protocol):
    """Where the shutdown manager stores its state (a ShutdownStateFile)."""

    def store(self, state: ShutdownState) -> None:
        """Write ``state``; ShutdownStateError when it cannot be written."""


def timestamp(seconds: float) -> float:
    """The metric's value: whole seconds (upstream's float64(t.Unix())), 0 for not yet."""
    return float(math.floor(seconds)) if seconds else 0.0


def go_time(seconds: float) -> str:
    """``seconds`` as Go's encoding/json writes a time.Time in the local time zone."""
    if not seconds:
        return GO_ZERO_TIME
    whole = math.floor(seconds)
    micros = round((seconds - whole) * 1_000_000)
    if micros == 1_000_000:
        whole, micros = whole + 1, 0
    local = datetime.fromtimestamp(whole, UTC).astimezone()
    text = local.strftime("%Y-%m-%dT%H:%M:%S")
    if micros:
        text += "." + f"{micros:06d}".rstrip("0")
    offset = local.utcoffset() or timedelta(0)
    if not offset:
        return text + "Z"
    minutes = int(offset.total_seconds()) // 60
    sign = "+" if minutes >= 0 else "-"
    return f"{text}{sign}{abs(minutes) // 60:02d}:{abs(minutes) % 60:02d}"


def parse_go_time(text: str) -> float:
    """An RFC 3339 time (as Go's time.Time unmarshals it) in seconds; 0 for the zero time."""
    match = _RFC3339.match(text)
    if match is None:
        raise ValueError(f"parsing time {text!r} as RFC 3339")
    year, month, day, hour, minute, second = (int(g) for g in match.groups()[:6])
    if year == 1 and (month, day, hour, minute, second) == (1, 1, 0, 0, 0) \
            and not match.group(7):
        return 0.0
    fraction = int((match.group(7) or "0").ljust(9, "0")) / 1e9
    offset = timedelta(0)
    if match.group(9):
        offset = timedelta(hours=int(match.group(10)), minutes=int(match.group(11)))
        if match.group(9) == "-":
            offset = -offset
    moment = datetime(year, month, day, hour, minute, second, tzinfo=UTC) - offset
    return moment.timestamp() + fraction


def state_path(root_dir: str | os.PathLike[str]) -> Path:
    return Path(root_dir) / STATE_FILE


def encode_state(state: ShutdownState) -> bytes:
    return msgspec.json.encode({"startTime": go_time(state.start_time),
                                "endTime": go_time(state.end_time)})


def load_shutdown_state(path: str | os.PathLike[str]) -> ShutdownState:
    """The state in ``path``; the zero state when there is no file (upstream's Load).

    Raises ShutdownStateError naming the file when it cannot be read or decoded.
    """
    target = Path(path)
    try:
        raw = target.read_bytes()
    except FileNotFoundError:
        return ShutdownState()
    except OSError as err:
        raise ShutdownStateError(f"{target}: cannot read: {err}") from err
    try:
        decoded = msgspec.json.decode(raw)
        if not isinstance(decoded, dict):
            raise ValueError("not a JSON object")
        start, end = decoded.get("startTime", GO_ZERO_TIME), decoded.get("endTime",
                                                                         GO_ZERO_TIME)
        if not isinstance(start, str) or not isinstance(end, str):
            raise ValueError("startTime and endTime must be strings")
        return ShutdownState(parse_go_time(start), parse_go_time(end))
    except (msgspec.DecodeError, ValueError) as err:
        raise ShutdownStateError(f"{target}: {err}") from err


class ShutdownStateFile:
    """Stores the state in one file atomically (temporary file, fsync, rename; 0644)."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)

    def store(self, state: ShutdownState) -> None:
        data = encode_state(state)
        try:
            fd, tmp = tempfile.mkstemp(dir=self.path.parent, prefix=f".tmp-{self.path.name}")
        except OSError as err:
            raise ShutdownStateError(f"failed to create temp file for atomic write "
                                     f"{str(self.path)!r}: {err}") from err
        try:
            with os.fdopen(fd, "wb") as out:
                os.chmod(tmp, 0o644)
                out.write(data)
                out.flush()
                os.fsync(out.fileno())
            os.replace(tmp, self.path)
        except OSError as err:
            Path(tmp).unlink(missing_ok=True)
            raise ShutdownStateError(f"{self.path}: cannot write: {err}") from err
