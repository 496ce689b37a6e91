"""Which code wrote a trace: the product's name and version, and its commit.

Every trace file's header names them (``product``, ``version`` and, when the code ran from
a git checkout, ``commit``), so a replay can tell a trace recorded by other code: its
first divergence may then be a change of code (an intended one), not a bug. The version is
the installed distribution's (setup.cfg's, through the package metadata); the commit is
``git rev-parse HEAD`` of the checkout the ``actors`` package was imported from, absent
when that is no git checkout (an installed wheel) or git cannot say.
"""

from __future__ import annotations

import contextlib
import functools
import importlib.metadata
import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import actors

KEYS = ("product", "version", "commit")
"""The header's keys that name the code."""


@functools.cache
def current() -> dict[str, str]:
    """The running code's provenance, as a trace header holds it (read once a process)."""
    out: dict[str, str] = {}
    distributions = importlib.metadata.packages_distributions().get(actors.__name__, [])
    if distributions:
        out["product"] = distributions[0]
        with contextlib.suppress(importlib.metadata.PackageNotFoundError):
            out["version"] = importlib.metadata.version(distributions[0])
    commit = _commit(Path(actors.__file__).resolve().parents[1])
    if commit:
        out["commit"] = commit
    return out


def _commit(root: Path) -> str:
    """HEAD of the git checkout at ``root``; "" when it is none or git cannot say."""
    if not (root / ".git").exists():  # a directory, or a worktree's file
        return ""
    try:
        done = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"],
                              capture_output=True, text=True, timeout=10, check=False)
    except (OSError, subprocess.SubprocessError):
        return ""
    return done.stdout.strip() if done.returncode == 0 else ""


def recorded(header: Mapping[str, Any]) -> dict[str, str]:
    """What a trace header says of the code that wrote it (empty: written before headers
    said)."""
    return {key: str(header[key]) for key in KEYS if header.get(key)}


def describe(provenance: Mapping[str, str]) -> str:
    """``kubelet-actors 0.1.0 at commit 1234abc`` (or as much of it as is known)."""
    if not provenance.get("version"):
        return "a version that did not name itself (a trace from before headers said)"
    text = f"{provenance.get('product', '?')} {provenance['version']}"
    commit = provenance.get("commit")
    return text + (f" at commit {commit[:12]}" if commit else " (commit unknown)")


def other_code(header: Mapping[str, Any],
               running: Mapping[str, str] | None = None) -> str | None:
    """Why the trace with ``header`` was recorded by other code than ``running`` (this
    process's, by default), in a sentence; None when it was recorded by this code.

    Other code: another product or version, or another commit where both are known. A
    header that names no version was written before headers did, by older code."""
    now = current() if running is None else running
    then = recorded(header)
    same = (then.get("version") == now.get("version")
            and then.get("product") == now.get("product")
            and (not then.get("commit") or not now.get("commit")
                 or then["commit"] == now["commit"]))
    if same and then.get("version"):
        return None
    return (f"this trace was recorded by {describe(then)}; this is {describe(now)}: "
            "what it replays may have changed since")
