"""The kubelet's converters of older trace formats (actors.core.trace.compat).

Registered when the kubelet's trace plug-in (actors.kubelet.trace) is imported, so every
trace a kubelet tool reads comes in the current format:

- format 2 to 3: traces recorded before message names existed name each message type by
  its module path (``actors.messages.UpdatePod``); the records get the registered names.
- format 3 to 4: the start config (the header's ``config``, read as ReplayConfig) gets
  what a header from before admission lacks (its node's name only in ``node``), and loses
  every key ReplayConfig does not have: format 3 configs held switches that chose an
  older behaviour for older traces. The kubelet runs one behaviour, and a trace recorded
  by older code replays on it (its replay says it was recorded by other code, and where
  that code behaved otherwise it diverges).
"""

from __future__ import annotations

from typing import Any

from actors.core.trace.compat import CONVERTERS
from actors.kubelet.tree import ReplayConfig

LEGACY_TYPES: dict[str, str] = {
    **{f"actors.messages.{name}": name for name in (
        "SourceSnapshot", "Tick", "Relisted", "RelistFailed", "UpdatePod", "PodWorkerDone",
        "PodObserved", "PodRejected", "DesiredPods", "GetPods", "PodForgotten",
        "ProbeVerdict", "KillRuntimePod", "RuntimePodKilled", "RuntimeHealth",
        "ChildFailed", "ChildExited", "RestartChild", "DeadLetter", "Stop")},
    "actors.pod_worker.RunPending": "RunPending",
    "actors.pod_killer.KillFinished": "KillFinished",
    "actors.runtime_monitor.Recheck": "Recheck",
    "actors.probe_manager.ProbeOutcome": "ProbeOutcome",
    "actors.probe_manager.ProbeQuery": "ProbeQuery",
    "actors.sources.file.FilesChanged": "FilesChanged",
    "actors.supervisor.GetHealth": "GetHealth",
    "actors.supervisor.GetRunningPods": "GetRunningPods",
}
"""What traces recorded before message names existed call each message (its module path)."""



def _renamed(recorded: Any) -> Any:
    if isinstance(recorded, list):
        return [_renamed(name) for name in recorded]
    return LEGACY_TYPES.get(recorded, recorded) if isinstance(recorded, str) else recorded


def message_names_v2(header: dict[str, Any], records: list[dict[str, Any]]) -> None:
    """Format 2 to 3: module paths become the registered message names (a message's own
    type, and those of the messages it carries)."""
    for record in records:
        if record.get("k") != "msg":
            continue
        record["type"] = _renamed(record.get("type"))
        carried = record.get("carried")
        if isinstance(carried, dict):
            record["carried"] = {name: _renamed(types) for name, types in carried.items()}


def start_config_v3(header: dict[str, Any], records: list[dict[str, Any]]) -> None:
    """Format 3 to 4: the start config as ReplayConfig reads it (see the module's doc)."""
    config = header.get("config")
    if not isinstance(config, dict):
        return
    for key in set(config) - set(ReplayConfig.__struct_fields__):
        del config[key]
    node = config.setdefault("node", {"node_name": ""})
    supervisor = config["supervisor"] = dict(config.get("supervisor") or {})
    supervisor.setdefault("node", {"name": node.get("node_name", "")})


CONVERTERS.register(2, message_names_v2)
CONVERTERS.register(3, start_config_v3)
