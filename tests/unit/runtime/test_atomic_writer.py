"""Upstream's AtomicWriter (runtime.kuberuntime.atomic_writer): payload validation
(TestValidatePath, TestPathsToRemove) and the ``..data`` swap (TestWriteOnce,
TestUpdate, TestMultipleUpdates), as tables."""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path

import pytest

from runtime.kuberuntime.atomic_writer import (
    DATA_DIR,
    AtomicWriter,
    FileProjection,
    PayloadError,
    validate_path,
    validate_payload,
)


@pytest.mark.parametrize(("path", "error"), [
    ("i/am/well/behaved.txt", ""),
    ("..dirdatafilename", "must not start with '..'"),
    ("..dirdata/filename", "must not start with '..'"),
    ("..datafilename", "must not start with '..'"),
    ("..data/filename", "must not start with '..'"),
    ("a/b/..c", ""),
    ("..", "must not contain '..'"),
    ("../", "must not contain '..'"),
    ("a/../b", "must not contain '..'"),
    ("/absolute/path", "must be relative path"),
    ("", "must not be empty"),
    ("a" * 255, ""),
    ("a" * 256, "filenames must be less than or equal to 255 characters"),
    ("/".join(["a" * 200] * 20) + "/" + "b" * 76, ""),  # 4096 characters
    ("/".join(["a" * 200] * 20) + "/" + "b" * 77,
     "must be less than or equal to 4096 characters"),
    ("..", "must not contain '..'"),
    ("...", "must not start with '..'"),
    (".a", ""),
])
def test_validate_path(path: str, error: str) -> None:
    if not error:
        validate_path(path)
        return
    with pytest.raises(PayloadError, match=re.escape(error)):
        validate_path(path)


def test_payload_paths_are_cleaned() -> None:
    assert list(validate_payload({"a//b/./c": FileProjection(b"x")})) == ["a/b/c"]


def files(target: Path) -> dict[str, str]:
    """The user-visible files under ``target`` (through the symlinks), by path."""
    found: dict[str, str] = {}
    for root, _, names in os.walk(target, followlinks=True):
        rel_root = os.path.relpath(root, target)
        if rel_root.split(os.sep)[0].startswith(".."):
            continue
        for name in names:
            rel = os.path.normpath(os.path.join(rel_root, name))
            if not rel.startswith(".."):
                found[rel] = (Path(root) / name).read_text()
    return found


def ts_dirs(target: Path) -> list[str]:
    return sorted(n for n in os.listdir(target)
                  if re.fullmatch(r"\.\.\d{4}_\d\d_\d\d_\d\d_\d\d_\d\d\.\d+", n))


PAYLOADS: list[dict[str, str]] = [
    {"foo": "foo", "bar": "bar"},
    {"foo": "foo2", "bar": "bar"},  # one file changed
    {"foo": "foo2", "bar": "bar", "baz/qux": "q", "baz/deep/x": "x"},  # new nested files
    {"foo": "foo2", "baz/deep/x": "x2"},  # bar and baz/qux gone
    {"zap": "zap"},  # all replaced
    {},  # empty
    {"foo": "back"},
]


def test_successive_payloads_swap_atomically(tmp_path: Path) -> None:
    writer = AtomicWriter(str(tmp_path), now=1_700_000_000.0)
    for payload in PAYLOADS:
        before = os.readlink(tmp_path / DATA_DIR) if (tmp_path / DATA_DIR).is_symlink() else ""
        assert writer.write({k: FileProjection(v.encode()) for k, v in payload.items()})
        assert files(tmp_path) == payload
        # One timestamped directory, the one ..data points at, a new one each time.
        current = os.readlink(tmp_path / DATA_DIR)
        assert ts_dirs(tmp_path) == [current] and current != before
        assert current.startswith("..2023_11_14_22_13_20.")
        # Each visible top-level name is a symlink through ..data.
        for name in os.listdir(tmp_path):
            if not name.startswith(".."):
                assert os.readlink(tmp_path / name) == os.path.join(DATA_DIR, name)
        assert not (tmp_path / "..data_tmp").exists()


def test_an_unchanged_payload_writes_nothing(tmp_path: Path) -> None:
    writer = AtomicWriter(str(tmp_path))
    payload = {"a": FileProjection(b"1"), "d/b": FileProjection(b"2")}
    assert writer.write(payload)
    version = os.readlink(tmp_path / DATA_DIR)
    assert not writer.write(payload)
    assert os.readlink(tmp_path / DATA_DIR) == version


def test_modes_are_applied_whatever_the_umask(tmp_path: Path) -> None:
    old = os.umask(0o077)
    try:
        AtomicWriter(str(tmp_path)).write({"ro": FileProjection(b"x", 0o400),
                                           "rw": FileProjection(b"y", 0o644),
                                           "sub/x": FileProjection(b"z", 0o640)})
    finally:
        os.umask(old)
    modes = {n: stat.S_IMODE(os.stat(tmp_path / n).st_mode) for n in ("ro", "rw", "sub/x")}
    assert modes == {"ro": 0o400, "rw": 0o644, "sub/x": 0o640}
    ts = tmp_path / os.readlink(tmp_path / DATA_DIR)
    assert stat.S_IMODE(os.stat(ts).st_mode) == 0o755


def test_a_bad_payload_changes_nothing(tmp_path: Path) -> None:
    writer = AtomicWriter(str(tmp_path))
    writer.write({"a": FileProjection(b"1")})
    version = os.readlink(tmp_path / DATA_DIR)
    with pytest.raises(PayloadError):
        writer.write({"a": FileProjection(b"2"), "../escape": FileProjection(b"x")})
    assert os.readlink(tmp_path / DATA_DIR) == version
    assert files(tmp_path) == {"a": "1"}


def test_a_missing_target_is_refused(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        AtomicWriter(str(tmp_path / "nope"))


def test_a_leftover_data_tmp_link_is_replaced(tmp_path: Path) -> None:
    os.symlink("..gone", tmp_path / "..data_tmp")
    AtomicWriter(str(tmp_path)).write({"a": FileProjection(b"1")})
    assert files(tmp_path) == {"a": "1"}
    assert not os.path.lexists(tmp_path / "..data_tmp")
