"""An env var's value from a file in a pod's emptyDir (``env[].valueFrom.fileKeyRef``, upstream's
EnvFiles, beta and on by default in 1.35): where the file is, how it is read, what it says.

An init container writes the file; the kubelet reads one key of it when it makes the
container's config. The path is the pod's, and so is everything in the volume, symlinks
included, so the file is found and opened as upstream finds it, and more safely:

1. the path is joined to the volume's as filepath-securejoin's SecureJoin joins it
   (``secure_join``): each symlink met is resolved as if the volume were the root, so an
   absolute ``/etc/passwd`` or a ``../../..`` lands inside the volume, never above it;
2. the joined path is opened from the volume down, one segment at a time, never through a
   symlink (runtime.kuberuntime.subpath.safe_open): a directory the pod swaps for a
   symlink in between is refused, where upstream's plain open would follow it. Only a
   regular file is read (a fifo would hang the pod worker, a device is the node's);
3. the file is read as upstream's ParseEnv reads it (``parse_env``), line by line through a
   bufio.Scanner (a line of 64 KiB or more ends the read) up to the key's line, so
   memory stays bounded whatever the pod wrote.

``read_env_key`` does all three for the node's HostPaths service (the one call a trace
records: its answer is the value alone, never the rest of the file).
"""

from __future__ import annotations

import errno
import os
import stat
from typing import BinaryIO, Literal

from msgspec import Struct

from runtime.kuberuntime.subpath import SubPathError, safe_open
from runtime.pod.validation.fields import go_quote

__all__ = ["MAX_LINE", "MAX_SYMLINKS", "EnvFileError", "EnvFileRead", "parse_env",
           "read_env_key", "secure_join"]

MAX_LINE = 64 * 1024
"""bufio.MaxScanTokenSize: a line (before its newline) this long or longer ends the read."""

MAX_SYMLINKS = 255
"""filepath-securejoin's maxSymlinkLimit: more symlinks than this on the way is ELOOP."""

_TOO_LONG = "bufio.Scanner: token too long"


class EnvFileError(Exception):
    """A file that cannot be joined, opened or parsed; the message is upstream's detail."""


class EnvFileRead(Struct, frozen=True):
    """What reading one key of an env file came to: its ``value`` ("" when the file has no
    such key, or an empty one: upstream tells the two apart no more than this does), the
    joined ``path`` (upstream names it when the key is missing), or what ``failed``: the
    ``join`` (its words go to the pod, as upstream's do) or the ``parse`` (opening and
    reading included: the pod is told ``couldn't parse env file``, the ``detail`` is
    logged)."""

    value: str = ""
    path: str = ""
    failed: Literal["", "join", "parse"] = ""
    detail: str = ""


def _clean_abs(path: str) -> str:
    """Go's filepath.Clean of an absolute path: one slash each, "." and ".." resolved (no
    ".." above the root)."""
    parts: list[str] = []
    for part in path.split("/"):
        if part == "..":
            if parts:
                parts.pop()
        elif part not in ("", "."):
            parts.append(part)
    return "/" + "/".join(parts)


def _go_error(op: str, path: str, err: OSError) -> str:
    """Go's *PathError text: ``op path: reason`` (Go's errno strings are lower case)."""
    return f"{op} {path}: {(err.strerror or str(err)).lower()}"


def secure_join(root: str, unsafe: str) -> str:
    """``unsafe`` joined to ``root`` with its symlinks resolved as if ``root`` were ``/``
    (filepath-securejoin's SecureJoin): a path inside ``root``, whatever ``unsafe`` and
    the symlinks it meets say. A missing part ends nothing (it is taken as it is).
    EnvFileError in SecureJoin's words when a part cannot be looked at or there are more
    than ``MAX_SYMLINKS`` symlinks on the way."""
    current, remaining, walked = "", unsafe, 0
    while remaining:
        part, _, remaining = remaining.partition("/")
        nxt = _clean_abs(f"{current}/{part}")
        if nxt == "/":
            current = ""
            continue
        full = f"{root}/{nxt}"
        try:
            mode = os.lstat(full).st_mode
        except (FileNotFoundError, NotADirectoryError):
            current = nxt  # treated as a part that is no symlink, as SecureJoin does
            continue
        except OSError as err:
            raise EnvFileError(_go_error("lstat", full, err)) from err
        if not stat.S_ISLNK(mode):
            current = nxt
            continue
        walked += 1
        if walked > MAX_SYMLINKS:
            raise EnvFileError(f"SecureJoin {root}/{unsafe}: "
                               f"{os.strerror(errno.ELOOP).lower()}")
        try:
            dest = os.readlink(full)
        except OSError as err:
            raise EnvFileError(_go_error("readlink", full, err)) from err
        remaining = f"{dest}/{remaining}"
        if dest.startswith("/"):
            current = ""  # an absolute symlink starts again from the root
    final = _clean_abs(current)
    return os.path.normpath(root + final) if final != "/" else os.path.normpath(root)


class _Lines:
    """Go's bufio.Scanner with ScanLines over ``reader``: each line without its newline (and
    without one carriage return before it); None at the end, or when a line is
    ``MAX_LINE`` or longer (then ``err`` says so, as the Scanner's Err does)."""

    def __init__(self, reader: BinaryIO) -> None:
        self._reader = reader
        self._buffer = b""
        self._eof = False
        self.err = ""

    def next(self) -> bytes | None:
        if self.err:
            return None
        while True:
            newline = self._buffer.find(b"\n")
            if newline >= MAX_LINE or (newline == -1 and len(self._buffer) >= MAX_LINE):
                self.err = _TOO_LONG
                return None
            if newline != -1:
                line, self._buffer = self._buffer[:newline], self._buffer[newline + 1:]
                return line.removesuffix(b"\r")
            if self._eof:
                if not self._buffer:
                    return None
                line, self._buffer = self._buffer, b""
                return line.removesuffix(b"\r")
            chunk = self._reader.read(MAX_LINE)
            if chunk:
                self._buffer += chunk
            else:
                self._eof = True


def _invalid(line: int, why: str) -> EnvFileError:
    return EnvFileError(f"invalid environment variable format at line {line}: {why}")


def parse_env(reader: BinaryIO, key: str, path: str) -> str:
    """The value of ``key`` in the env file ``reader`` reads (upstream's ParseEnv, the 1.35
    format, a subset of POSIX shell): ``KEY='value'``, the value single-quoted and taken
    literally (newlines in it included), a comment after the closing quote, leading blanks
    and blank and ``#`` lines skipped, no blank before ``=``; ``KEY= 'v'`` makes KEY empty,
    as a shell does. The first line naming ``key`` wins, and the read stops there. ""
    when no line names it; EnvFileError in upstream's words (``path`` names the file) for a
    line it cannot parse before that."""
    wanted = key.encode()
    lines = _Lines(reader)
    number = 0
    while (raw := lines.next()) is not None:
        number += 1
        line = raw.lstrip(b" \t")
        if not line or line.startswith(b"#"):
            continue
        equals = line.find(b"=")
        if equals == -1:
            raise _invalid(number, "missing '='")
        name_part = line[:equals]
        name = name_part.rstrip(b" \t")
        if not name:
            raise _invalid(number, "empty variable name")
        if name != name_part:
            raise _invalid(number, "whitespace before '=' is not allowed")
        value_part = line[equals + 1:]
        value = value_part.lstrip(b" \t")
        if value != value_part:
            if name == wanted:
                return ""
            continue
        if not value.startswith(b"'"):
            raise _invalid(number, "value must be enclosed in single quotes")
        found = _quoted(lines, value[1:], number, name == wanted)
        number = found[1]
        if found[0] is not None:
            return _text(found[0])
    if lines.err:
        raise EnvFileError(f"error reading environment variable file {go_quote(path)}: "
                           f"{lines.err}")
    return ""


def _quoted(lines: _Lines, rest: bytes, number: int, wanted: bool) -> tuple[bytes | None, int]:
    """The single-quoted value that ``rest`` opens, read on over the lines it spans: (the
    value if ``wanted``, else None; the number of the line it closed on)."""
    start = number
    parts: list[bytes] = []
    while True:
        close = rest.find(b"'")
        if close != -1:
            parts.append(rest[:close])
            after = rest[close + 1:].lstrip(b" \t")
            if after and not after.startswith(b"#"):
                raise _invalid(number, "unexpected content after closing quote")
            return (b"".join(parts) if wanted else None), number
        parts += [rest, b"\n"]
        nxt = lines.next()
        if nxt is None:
            raise EnvFileError(f"invalid environment variable format starting at line "
                               f"{start}: unclosed single quote")
        number += 1
        rest = nxt


def _text(value: bytes) -> str:
    # Go hands the bytes on and the CRI's protobuf refuses invalid UTF-8 later; here the
    # value must be text for the config, so such a value is a file that cannot be parsed.
    try:
        return value.decode()
    except UnicodeDecodeError as err:
        raise EnvFileError(f"the value is not valid UTF-8: {err}") from err


def _open_in_volume(joined: str, volume_path: str) -> int:
    """A read-only descriptor of the regular file ``joined`` names, opened from the volume
    down without following any symlink; EnvFileError in the words of Go's open or read."""
    try:
        base = os.path.realpath(volume_path, strict=True)
    except OSError as err:
        raise EnvFileError(_go_error("open", joined, err)) from err
    rel = os.path.relpath(joined, os.path.normpath(volume_path))
    try:
        fd = safe_open(os.path.join(base, rel), base)
    except SubPathError as err:
        raise EnvFileError(f"open {joined}: {err}") from err
    try:
        mode = os.fstat(fd).st_mode
        if stat.S_ISDIR(mode):
            raise EnvFileError(f"read {joined}: {os.strerror(errno.EISDIR).lower()}")
        if not stat.S_ISREG(mode):
            raise EnvFileError(f"open {joined}: not a regular file")
        # The very file opened above (an O_PATH descriptor), now for reading.
        return os.open(f"/proc/self/fd/{fd}", os.O_RDONLY | os.O_CLOEXEC)
    except OSError as err:
        raise EnvFileError(_go_error("open", joined, err)) from err
    finally:
        os.close(fd)


def read_env_key(volume_path: str, path: str, key: str) -> EnvFileRead:
    """The value of ``key`` in the env file at ``path`` inside the volume at
    ``volume_path`` (upstream's FileKeyRef case of makeEnvironmentVariables, its SecureJoin
    and ParseEnv), read safely: see the module's docstring."""
    try:
        joined = secure_join(volume_path, path)
    except EnvFileError as err:
        return EnvFileRead(failed="join", detail=str(err))
    try:
        fd = _open_in_volume(joined, volume_path)
    except EnvFileError as err:
        return EnvFileRead(path=joined, failed="parse",
                           detail=f"failed to open environment variable file "
                                  f"{go_quote(joined)}: {err}")
    try:
        with os.fdopen(fd, "rb", buffering=0) as reader:
            return EnvFileRead(value=parse_env(reader, key, joined), path=joined)
    except EnvFileError as err:
        return EnvFileRead(path=joined, failed="parse", detail=str(err))
    except OSError as err:
        return EnvFileRead(path=joined, failed="parse",
                           detail=f"error reading environment variable file "
                                  f"{go_quote(joined)}: {_go_error('read', joined, err)}")
