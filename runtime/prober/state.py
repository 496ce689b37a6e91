"""Probe results kept across a kubelet restart (this project's own; upstream has none).

Upstream's kubelet starts every probe from its initial result when it restarts, so a ready
pod reads not ready until its readiness probe passes again. Here the probe manager hands
each change of what it would need to continue (result, the run of equal outcomes that
moves it, whether a failed liveness or startup probe holds) to a ``ProbeStateFile`` under
the kubelet's root directory, and the next start reads it back and offers each entry to
the worker of the same pod, container, container id and probe kind. An entry of a
container that is gone (or another container id) is never used.

The file is written whole, to a temporary file renamed over the old one, so a reader sees
the old or the new state, never a torn one; it is written only when the saved view of
some worker changes (a verdict, a run of outcomes below its threshold, a container
replaced), never for the steady state of a probe that keeps answering the same. It is not
fsynced: it has to outlive the kubelet process, not the machine (a machine that loses
power loses its containers too, and then nothing in the file applies).
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from typing import Protocol

import msgspec

from runtime.errors import ProbeStateError
from runtime.ids import ContainerID, PodUID
from runtime.prober.results import ProbeResult
from runtime.prober.worker import ProbeWorker

STATE_FILE = "probe-state.json"
"""The file's name under --root-dir."""

STATE_VERSION = 1


class SavedProbe(msgspec.Struct, frozen=True, kw_only=True):
    """What one probe of one container had reached (kind and results as upstream spells
    them: liveness/readiness/startup, Success/Failure/Unknown)."""

    uid: PodUID
    container_name: str
    container_id: ContainerID
    kind: str
    result: str
    last_outcome: str | None = None  # the outcome the current run is made of
    run: int = 0  # how many of it in a row (capped at its threshold)
    on_hold: bool = False  # a failed liveness or startup probe waits for a new container

    @property
    def key(self) -> tuple[PodUID, str, str]:
        return (self.uid, self.container_name, self.kind)


class _StateFile(msgspec.Struct, frozen=True, kw_only=True):
    version: int
    probes: tuple[SavedProbe, ...] = ()


_decoder = msgspec.json.Decoder(_StateFile)
_encoder = msgspec.json.Encoder()


def state_path(root_dir: str | os.PathLike[str]) -> Path:
    return Path(root_dir) / STATE_FILE


def load_probe_state(path: str | os.PathLike[str]) -> tuple[SavedProbe, ...]:
    """The saved probes in ``path``; () when there is no file (a first start).

    Raises ProbeStateError when the file cannot be read or is not a state file.
    """
    target = Path(path)
    try:
        raw = target.read_bytes()
    except FileNotFoundError:
        return ()
    except OSError as err:
        raise ProbeStateError(f"{target}: cannot read: {err}") from err
    try:
        state = _decoder.decode(raw)
    except (msgspec.DecodeError, msgspec.ValidationError) as err:
        raise ProbeStateError(f"{target}: not a probe state file: {err}") from err
    if state.version != STATE_VERSION:
        raise ProbeStateError(f"{target}: version {state.version} is not {STATE_VERSION}")
    return state.probes


class ProbeStateFile:
    """Writes the saved probes to one file, atomically (temporary file, then rename)."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self.writes = 0

    def save(self, probes: Iterable[SavedProbe]) -> None:
        ordered = tuple(sorted(probes, key=lambda p: (p.uid, p.container_name, p.kind)))
        data = _encoder.encode(_StateFile(version=STATE_VERSION, probes=ordered))
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_name(f".{self.path.name}.tmp")
        tmp.write_bytes(data)
        os.replace(tmp, self.path)
        self.writes += 1


def saved_probe(uid: PodUID, container_name: str, worker: ProbeWorker) -> SavedProbe:
    """What ``worker`` (of ``container_name`` in pod ``uid``) has reached, to be saved."""
    result, last, run, on_hold = worker.progress()
    return SavedProbe(uid=uid, container_name=container_name,
                      container_id=worker.container_id, kind=worker.kind,
                      result=result.value, last_outcome=None if last is None else last.value,
                      run=run, on_hold=on_hold)


def resume_probe(worker: ProbeWorker, saved: SavedProbe) -> bool:
    """Continue ``worker`` from ``saved`` when it is of the same container and kind;
    returns whether it did (a saved entry with unknown result names is not used)."""
    if saved.container_id != worker.container_id or saved.kind != worker.kind:
        return False
    try:
        result = ProbeResult(saved.result)
        last = None if saved.last_outcome is None else ProbeResult(saved.last_outcome)
    except ValueError:
        return False
    worker.resume(result, last, saved.run, saved.on_hold)
    return True


class ProbeStateSink(Protocol):
    """Where the probe manager saves what its workers reached (a ProbeStateFile)."""

    def save(self, probes: Iterable[SavedProbe]) -> None: ...
