"""Reading container logs in the CRI log format, as upstream's kubelet does for
``/containerLogs`` (pkg/kubelet/kuberuntime/logs).

containerd writes one file per container instance, one record per write::

    2024-05-01T10:00:00.123456789Z stdout F hello world
    2024-05-01T10:00:00.2Z stderr P a long line split in
    2024-05-01T10:00:00.3Z stderr F  two writes

``<RFC3339Nano timestamp> <stream> <tag> <content>``, where the tag is ``F`` (full: the
content ends a line) or ``P`` (partial: the line goes on in the next record of the same
stream); tags may carry more flags after ``:``. As upstream, a ``P`` record's content is
written without a newline, so the records of a line come out joined; with
``timestamps`` only a line's first record gets the time in front (upstream since 1.26);
``sinceTime``/``sinceSeconds`` drop records older than the time; ``limitBytes`` cuts the
output after that many bytes, mid-line if need be; a record that cannot be parsed is
skipped. ``stream`` (the newer API's Stdout, Stderr or All) keeps one stream: the other
stream's records are neither written nor counted against ``limitBytes``.

Unlike upstream, ``tailLines`` counts lines as the container wrote them (a line split
in ``P`` records counts once) rather than records in the file.

The renderer works on chunks of whole records, so a follow at 10 MB/s costs one
regular-expression pass per chunk rather than Python work per record when no option
needs to look at each record (see ``_fast_render``).
"""

from __future__ import annotations

import calendar
import re
from collections.abc import Iterable

from msgspec import Struct

STDOUT, STDERR = b"stdout", b"stderr"
STREAMS = {"Stdout": STDOUT, "Stderr": STDERR}
"""The API's stream names (PodLogOptions.stream) and the CRI stream each keeps."""
STREAM_ALL = "All"

_TIMESTAMP = re.compile(
    rb"(\d{4})-(\d\d)-(\d\d)T(\d\d):(\d\d):(\d\d)(?:\.(\d{1,9}))?(Z|[+-]\d\d:\d\d)\Z"
)
# A well-formed F record's prefix after the newline that ends the record before it (the
# fast path puts one in front of the first). A match can only start at a record's start
# (content holds no newline), and a pattern that starts with a literal lets the
# regular-expression engine skip from newline to newline in C.
_F_PREFIX = re.compile(rb"\n\d{4}-\d\d-\d\dT[^ \n]* std(?:out|err) F[^ \n]* ")


def parse_timestamp(raw: bytes) -> int | None:
    """Nanoseconds since the epoch of an RFC3339 time with up to nine fraction digits
    (upstream's RFC3339NanoLenient), or None when ``raw`` is not one."""
    match = _TIMESTAMP.match(raw)
    if match is None:
        return None
    year, month, day, hour, minute, second = (int(g) for g in match.groups()[:6])
    frac, zone = match.group(7), match.group(8)
    try:
        seconds = calendar.timegm((year, month, day, hour, minute, second, 0, 0, 0))
    except (ValueError, OverflowError):
        return None
    if not (1 <= month <= 12 and 1 <= day <= 31 and hour < 24 and minute < 60 and second < 61):
        return None
    if zone != b"Z":
        sign = -1 if zone[:1] == b"-" else 1
        seconds -= sign * (int(zone[1:3]) * 3600 + int(zone[4:6]) * 60)
    return seconds * 1_000_000_000 + int((frac or b"").ljust(9, b"0"))


def format_timestamp(raw: bytes) -> bytes:
    """``raw`` as upstream writes it (RFC3339NanoFixed: nine fraction digits, the
    record's own zone, ``Z`` for UTC)."""
    match = _TIMESTAMP.match(raw)
    if match is None:
        return raw
    frac = (match.group(7) or b"").ljust(9, b"0")
    zone = match.group(8)
    if zone in (b"+00:00", b"-00:00"):
        zone = b"Z"
    return raw[:19] + b"." + frac + zone


def fixed_timestamp(raw: str) -> str:
    """``format_timestamp`` for text (tests, callers holding a str)."""
    return format_timestamp(raw.encode("ascii", "replace")).decode("ascii", "replace")


class LogOptions(Struct, frozen=True):
    """What a reader of a log asked for (upstream's kuberuntime LogOptions).

    ``tail_lines``: only the last N lines (None: all). ``limit_bytes``: stop after that
    many bytes (None: no limit). ``since_ns``: drop records older than this time
    (nanoseconds since the epoch; None: keep all). ``timestamps``: the time of each
    line's first record in front of it. ``follow``: go on as the container writes.
    ``stream``: ``Stdout``, ``Stderr`` or ``All``.
    """

    tail_lines: int | None = None
    limit_bytes: int | None = None
    since_ns: int | None = None
    timestamps: bool = False
    follow: bool = False
    stream: str = STREAM_ALL


class Record(Struct, frozen=True):
    """One parsed record: its time as written, stream, whether it ends a line, content
    (without the record's newline)."""

    timestamp: bytes
    stream: bytes
    full: bool
    content: bytes


def parse_record(line: bytes) -> Record | None:
    """One CRI record (without its newline), or None when it is malformed as upstream's
    parseCRILog sees it (no timestamp, stream other than stdout/stderr, no tag)."""
    fields = line.split(b" ", 3)
    # Upstream needs the delimiter after the tag: an empty line is "<ts> stdout F ".
    if len(fields) < 4 or fields[1] not in (STDOUT, STDERR):
        return None
    if parse_timestamp(fields[0]) is None:
        return None
    return Record(fields[0], fields[1], fields[2].split(b":")[0] != b"P", fields[3])


class LogRenderer:
    """Turns chunks of whole records into the bytes a client gets, keeping what spans
    chunks: the bytes left under ``limit_bytes``, the lines left under ``tail_lines``
    (without follow, as upstream's limitedMode), and per stream whether the next record
    starts a line (for the timestamp prefix). ``done`` once nothing more may be sent."""

    def __init__(self, options: LogOptions) -> None:
        self._options = options
        self._remaining = options.limit_bytes
        # Without follow, tail also caps what is read after the tail's start (the file
        # may grow while it is read): upstream's limitedMode.
        self._lines = (options.tail_lines
                       if options.tail_lines is not None and not options.follow else None)
        self._keep = STREAMS.get(options.stream)
        # Whether the next record written starts a line (upstream's isNewLine: one for
        # both streams, as they come out on one connection).
        self._line_start = True
        self._fast = (options.since_ns is None and not options.timestamps
                      and self._keep is None and self._lines is None)

    @property
    def done(self) -> bool:
        return (self._remaining is not None and self._remaining <= 0) or (
            self._lines is not None and self._lines <= 0)

    def feed(self, chunk: bytes) -> bytes:
        """The output for ``chunk``: whole records, each ending in a newline (the last
        one may lack it at the end of a file that is not followed)."""
        if self.done or not chunk:
            return b""
        out = self._fast_render(chunk) if self._fast else None
        if out is None:
            out = self._slow_render(chunk)
        if self._remaining is not None:
            out = out[:self._remaining]
            self._remaining -= len(out)
        return out

    def _fast_render(self, chunk: bytes) -> bytes | None:
        """Every record kept as is: strip the prefixes in C, one pass. None unless every
        record is a well-formed F record (a P record, or one upstream would skip: then
        the per-record path decides)."""
        if not chunk.endswith(b"\n"):
            return None
        out, fulls = _F_PREFIX.subn(b"\n", b"\n" + chunk)
        if fulls != chunk.count(b"\n"):
            return None
        return out[1:]

    def _slow_render(self, chunk: bytes) -> bytes:
        parts: list[bytes] = []
        options = self._options
        lines = chunk.split(b"\n")
        if chunk.endswith(b"\n"):
            lines.pop()
        for line in lines:
            record = parse_record(line)
            if record is None:
                continue
            if self._lines is not None:
                if self._lines <= 0:
                    break
                if record.full:
                    self._lines -= 1
            if self._keep is not None and record.stream != self._keep:
                continue
            if options.since_ns is not None:
                when = parse_timestamp(record.timestamp)
                if when is None or when < options.since_ns:
                    continue
            starts, self._line_start = self._line_start, record.full
            if options.timestamps and starts:
                parts.append(format_timestamp(record.timestamp) + b" ")
            parts.append(record.content + b"\n" if record.full else record.content)
        return b"".join(parts)


def ends_line(record: bytes) -> bool:
    """Whether a record (without its newline) ends a line when a tail counts lines: any
    but a ``P`` one (a record that cannot be parsed counts, as a line of the file)."""
    fields = record.split(b" ", 3)
    return len(fields) >= 3 and fields[2].split(b":")[0] != b"P"


def _line_ends_backwards(data: bytes) -> Iterable[int]:
    """Offsets just past each record of ``data`` (whole records) that ends a line, from
    the last one back: F records, and the last record whatever its tag."""
    end = len(data)
    first = True
    while end > 0:
        start = data.rfind(b"\n", 0, end - 1) + 1
        if first or ends_line(data[start:end - 1]):
            yield end
        first = False
        end = start


def tail_start(data: bytes, lines: int) -> int:
    """The offset in ``data`` (whole records) where its last ``lines`` lines begin."""
    if lines <= 0:
        return len(data)
    for count, end in enumerate(_line_ends_backwards(data), start=1):
        if count == lines + 1:
            return end
    return 0


def render_logs(data: bytes, options: LogOptions) -> bytes:
    """The whole output for a log's contents read at once (no follow)."""
    start = tail_start(data, options.tail_lines) if options.tail_lines is not None else 0
    return LogRenderer(options).feed(data[start:])
