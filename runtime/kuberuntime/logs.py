"""Reading container logs in the CRI log format, for the ``/containerLogs`` endpoint.

containerd writes one file per container instance, one line per write::

    2024-05-01T10:00:00.123456789Z stdout F hello world
    2024-05-01T10:00:00.2Z stderr P a long line split in
    2024-05-01T10:00:00.3Z stderr F  two writes

``<RFC3339Nano timestamp> <stream> <tag> <content>``, where the tag is ``F`` (full: the
content ends a line) or ``P`` (partial: the line goes on in the next record of the same
stream). Upstream's kubelet (pkg/kubelet/kuberuntime/logs) reads these files back for
``kubectl logs``; this module does the same for the options the endpoint supports.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

_TIMESTAMP = re.compile(
    r"^(?P<base>\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(?:\.(?P<frac>\d{1,9}))?(?P<zone>Z|[+-]\d\d:\d\d)$"
)


@dataclass(frozen=True, slots=True)
class LogOptions:
    """What the caller asked for: the query parameters of ``/containerLogs``.

    ``tail_lines`` keeps only the last N lines (None: all), counting lines as the
    container wrote them (partial records joined), not records in the file.
    ``limit_bytes`` cuts the output after that many bytes, mid-line if need be (None: no
    limit). ``timestamps`` puts the time of a line's first record before it.
    """

    tail_lines: int | None = None
    limit_bytes: int | None = None
    timestamps: bool = False


@dataclass(frozen=True, slots=True)
class LogLine:
    """One line as the container wrote it: partial records joined, newline included
    unless the file ends inside a partial line."""

    timestamp: str
    stream: str
    content: bytes


def fixed_timestamp(raw: str) -> str:
    """``raw`` in upstream's output format (RFC3339 with exactly nine fraction digits),
    as ``kubectl logs --timestamps`` shows it; an unparseable value is returned as is."""
    match = _TIMESTAMP.match(raw)
    if match is None:
        return raw
    frac = (match.group("frac") or "").ljust(9, "0")
    return f"{match.group('base')}.{frac}{match.group('zone')}"


def parse_cri_log(data: bytes) -> list[LogLine]:
    """Every line of a CRI log file, partial records joined per stream.

    Malformed records (fewer than four fields, unknown tag) are skipped, as upstream
    skips lines it cannot parse. A partial line still open at the end of the file (the
    container is mid-write) is returned without a trailing newline.
    """
    # A line's slot is taken when its first record is read, so lines keep the order in
    # which they were started even when the partial records of one stream interleave
    # with records of the other.
    slots: list[LogLine | None] = []
    pending: dict[str, tuple[int, str, list[bytes]]] = {}
    for record in data.split(b"\n"):
        fields = record.split(b" ", 3)
        if len(fields) < 3:
            continue
        timestamp = fields[0].decode("ascii", "replace")
        stream = fields[1].decode("ascii", "replace")
        # Tags may carry several flags separated by ':' (only P and F are defined).
        flags = fields[2].split(b":")
        content = fields[3] if len(fields) == 4 else b""
        partial = b"P" in flags
        if not partial and b"F" not in flags:
            continue
        if stream not in pending:
            pending[stream] = (len(slots), timestamp, [])
            slots.append(None)
        index, started, parts = pending[stream]
        parts.append(content)
        if not partial:
            del pending[stream]
            slots[index] = LogLine(started, stream, b"".join(parts) + b"\n")
    for stream, (index, started, parts) in pending.items():
        slots[index] = LogLine(started, stream, b"".join(parts))
    lines = [line for line in slots if line is not None]
    return lines


def render_logs(data: bytes, options: LogOptions) -> bytes:
    """The body of a ``/containerLogs`` response for a CRI log file's contents."""
    lines = parse_cri_log(data)
    if options.tail_lines is not None:
        lines = lines[-options.tail_lines:] if options.tail_lines > 0 else []
    out = bytearray()
    for line in lines:
        if options.timestamps:
            out += fixed_timestamp(line.timestamp).encode("ascii") + b" "
        out += line.content
        if options.limit_bytes is not None and len(out) >= options.limit_bytes:
            break
    if options.limit_bytes is not None:
        del out[options.limit_bytes:]
    return bytes(out)


FOLLOW_POLL = 0.2
"""How often a followed log is checked for new records and the container for life."""


def follow_log(
    path: str,
    initial: bytes,
    options: LogOptions,
    running: Callable[[], bool],
    poll: float = FOLLOW_POLL,
    sleep: Callable[[float], None] = time.sleep,
) -> Iterator[bytes]:
    """``follow=true``: the log so far (as rendered without follow), then each new whole
    record as the container writes it, until the container stops running. ``limitBytes``
    counts across the whole stream. The caller (the HTTP server) stops iterating when the
    client goes away."""
    consumed = initial.rfind(b"\n") + 1  # a torn last record is sent once it is whole
    first = render_logs(initial[:consumed], options)
    budget = None if options.limit_bytes is None else options.limit_bytes - len(first)
    yield first
    after = LogOptions(timestamps=options.timestamps)
    with open(path, "rb") as f:
        f.seek(consumed)
        pending = b""
        while budget is None or budget > 0:
            chunk = f.read()
            if chunk:
                pending += chunk
                whole = pending.rfind(b"\n") + 1
                if whole:
                    out = render_logs(pending[:whole], after)
                    pending = pending[whole:]
                    if budget is not None:
                        out = out[:budget]
                        budget -= len(out)
                    if out:
                        yield out
                continue
            if not running():
                return
            sleep(poll)
