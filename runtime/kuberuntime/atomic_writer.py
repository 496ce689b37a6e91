"""Writing a volume's files so that a reader never sees half an update: upstream's
AtomicWriter (pkg/volume/util/atomic_writer.go), used by the downwardAPI and projected
volumes (and, with an API server, configMap and secret ones).

The files live in a hidden directory named for the time it was made
(``..2024_05_01_10_00_00.1234567890``); the symlink ``..data`` points at it; each
user-visible top-level name is a symlink through ``..data`` (``labels -> ..data/labels``).
An update writes a new timestamped directory, points a new ``..data_tmp`` symlink at it
and renames that over ``..data`` (an atomic swap), then removes the names no longer in
the payload and the old directory. A payload equal to what is on disk changes nothing.
Paths starting with ``..`` are the writer's own: a payload may not use them.
"""

from __future__ import annotations

import os
import random
import shutil
import time
from collections.abc import Mapping

from msgspec import Struct

__all__ = ["DATA_DIR", "NEW_DATA_DIR", "AtomicWriter", "FileProjection", "PayloadError",
           "validate_path", "validate_payload"]

DATA_DIR = "..data"
NEW_DATA_DIR = "..data_tmp"
MAX_FILE_NAME_LENGTH = 255
MAX_PATH_LENGTH = 4096


class PayloadError(ValueError):
    """A payload path the writer refuses; the message is upstream's."""


class FileProjection(Struct, frozen=True):
    """One file of a payload: its bytes and its mode."""

    data: bytes
    mode: int = 0o644


def validate_path(path: str) -> None:
    """upstream validatePath: relative, no '..' element, not starting with '..', names
    of at most 255 characters, at most 4096 in all."""
    if not path:
        raise PayloadError(f'invalid path: must not be empty: "{path}"')
    if os.path.isabs(path):
        raise PayloadError(f"invalid path: must be relative path: {path}")
    if len(path) > MAX_PATH_LENGTH:
        raise PayloadError(
            f"invalid path: must be less than or equal to {MAX_PATH_LENGTH} characters")
    items = path.split("/")
    for item in items:
        if item == "..":
            raise PayloadError(f"invalid path: must not contain '..': {path}")
        if len(item) > MAX_FILE_NAME_LENGTH:
            raise PayloadError("invalid path: filenames must be less than or equal to "
                               f"{MAX_FILE_NAME_LENGTH} characters")
    if items[0].startswith("..") and len(items[0]) > 2:
        raise PayloadError(f"invalid path: must not start with '..': {path}")


def validate_payload(payload: Mapping[str, FileProjection]) -> dict[str, FileProjection]:
    """Every path checked, then cleaned (``a//b/./c`` is ``a/b/c``)."""
    clean: dict[str, FileProjection] = {}
    for path, projection in payload.items():
        validate_path(path)
        clean[os.path.normpath(path)] = projection
    return clean


def _timestamp_prefix(now: float) -> str:
    """``..YYYY_MM_DD_hh_mm_ss.`` in UTC, as upstream names its data directories."""
    return time.strftime("..%Y_%m_%d_%H_%M_%S.", time.gmtime(now))


class AtomicWriter:
    """Projects payloads into ``target_dir`` (which must exist); not thread-safe: the
    caller (the pod's worker) writes one volume at a time."""

    def __init__(self, target_dir: str, now: float | None = None) -> None:
        if not os.path.isdir(target_dir):
            raise FileNotFoundError(target_dir)
        self.target_dir = target_dir
        self._now = now

    def write(self, payload: Mapping[str, FileProjection]) -> bool:
        """Project ``payload``; True when the files changed on disk. PayloadError for a
        bad path, OSError when the disk refuses."""
        clean = validate_payload(payload)
        data_link = os.path.join(self.target_dir, DATA_DIR)
        try:
            old_ts = os.readlink(data_link)
        except FileNotFoundError:
            old_ts = ""
        old_ts_path = os.path.join(self.target_dir, old_ts) if old_ts else ""
        to_remove: set[str] = set()
        should_write = True
        if old_ts:
            to_remove = self._paths_to_remove(clean, old_ts_path)
            # A file gone from the payload is a new version too.
            should_write = bool(to_remove) or self._should_write(clean, old_ts_path)
        if should_write:
            ts_dir = self._new_timestamp_dir()
            try:
                self._write_payload(clean, ts_dir)
                new_link = os.path.join(self.target_dir, NEW_DATA_DIR)
                if os.path.lexists(new_link):
                    os.remove(new_link)  # left by a write that died half-way
                os.symlink(os.path.basename(ts_dir), new_link)
                os.rename(new_link, data_link)
            except OSError:
                shutil.rmtree(ts_dir, ignore_errors=True)
                raise
        self._create_user_visible(clean)
        self._remove_user_visible(to_remove)
        if should_write and old_ts_path:
            shutil.rmtree(old_ts_path, ignore_errors=True)
        return should_write

    @staticmethod
    def _should_write(payload: Mapping[str, FileProjection], old_ts_path: str) -> bool:
        """Whether any file is missing from, or differs from, the current version. Only
        the bytes count, as upstream's: modes are set once, when a version is written
        (and may then be changed for the pod's fsGroup)."""
        for path, projection in payload.items():
            current = os.path.join(old_ts_path, path)
            try:
                with open(current, "rb") as f:
                    if f.read() != projection.data:
                        return True
            except FileNotFoundError:
                return True
        return False

    @staticmethod
    def _paths_to_remove(payload: Mapping[str, FileProjection], old_ts_path: str
                         ) -> set[str]:
        """The paths of the current version the new payload no longer has."""
        current: set[str] = set()
        for root, dirs, files in os.walk(old_ts_path):
            for name in (*dirs, *files):
                current.add(os.path.relpath(os.path.join(root, name), old_ts_path))
        wanted: set[str] = set()
        for path in payload:
            while path:
                wanted.add(path)
                path = os.path.dirname(path)
        return current - wanted

    def _new_timestamp_dir(self) -> str:
        now = time.time() if self._now is None else self._now
        while True:
            # As Go's os.MkdirTemp: the prefix, then a random decimal number.
            name = _timestamp_prefix(now) + str(random.randrange(2**32))
            ts_dir = os.path.join(self.target_dir, name)
            try:
                os.mkdir(ts_dir, 0o700)
                break
            except FileExistsError:
                continue
        # 0755 so that any container user can walk into it, whatever the umask.
        os.chmod(ts_dir, 0o755)
        return ts_dir

    @staticmethod
    def _write_payload(payload: Mapping[str, FileProjection], ts_dir: str) -> None:
        for path, projection in payload.items():
            full = os.path.join(ts_dir, path)
            os.makedirs(os.path.dirname(full), exist_ok=True)
            with open(full, "wb") as f:
                f.write(projection.data)
            # The mode exactly as asked, whatever the umask.
            os.chmod(full, projection.mode)

    def _create_user_visible(self, payload: Mapping[str, FileProjection]) -> None:
        """A ``name -> ..data/name`` symlink for each top-level name of the payload."""
        for path in payload:
            top = path.split("/", 1)[0]
            visible = os.path.join(self.target_dir, top)
            if not os.path.lexists(visible):
                os.symlink(os.path.join(DATA_DIR, top), visible)

    def _remove_user_visible(self, paths: set[str]) -> None:
        """Remove the top-level links of names that are gone (deeper ones went with the
        old directory)."""
        for path in paths:
            if "/" not in path:
                visible = os.path.join(self.target_dir, path)
                if os.path.islink(visible):
                    os.remove(visible)
