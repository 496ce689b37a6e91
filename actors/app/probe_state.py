"""Probe results across a restart, on the daemon's side: read them before the actors start.

The actors never read the file: the daemon reads ``<root-dir>/probe-state.json`` here,
keeps the entries whose container still runs (the probe manager checks again when it
meets each container) and puts them into the start config the actors are built from,
which every trace header records, so a replay builds the same actors with the same
results. A file that cannot be used is logged, naming it, and every probe starts from its
initial result, as after a first start: it never stops the kubelet.
"""

from __future__ import annotations

from loguru import logger

from runtime.cri.service import CRIRuntime
from runtime.cri.types import ContainerFilter, ContainerState
from runtime.errors import CRIError, ProbeStateError
from runtime.prober.state import ProbeStateFile, SavedProbe, load_probe_state, state_path

_log = logger.bind(pod="", uid="", container="")


def restore_probe_state(root_dir: str, runtime: CRIRuntime) -> tuple[SavedProbe, ...]:
    """The saved probe results under ``root_dir`` of containers that still run."""
    path = state_path(root_dir)
    try:
        saved = load_probe_state(path)
    except ProbeStateError as err:
        _log.warning("{}; every probe starts from its initial result", err)
        return ()
    if not saved:
        return ()
    try:
        running = {c.id for c in runtime.list_containers(
            ContainerFilter(state=ContainerState.RUNNING))}
    except CRIError as err:
        # The probe manager still uses an entry only for the same container running.
        _log.warning("cannot list the running containers ({}): the saved probe results in {} "
                     "are checked as their containers are met", err, path)
        return saved
    kept = tuple(s for s in saved if s.container_id in running)
    for gone in (s for s in saved if s.container_id not in running):
        logger.bind(pod="", uid=gone.uid, container=gone.container_name).info(
            "saved {} probe result {} not used: container {} no longer runs", gone.kind,
            gone.result, gone.container_id)
    _log.info("{} of {} saved probe results restored from {}", len(kept), len(saved), path)
    return kept


def probe_state_file(root_dir: str) -> ProbeStateFile:
    """Where the probe manager saves its results for the next start."""
    return ProbeStateFile(state_path(root_dir))
