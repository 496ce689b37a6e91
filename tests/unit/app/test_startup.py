"""What a standalone daemon's start loads, and the garbage collector around the start.

The module lists are checked in a fresh interpreter: the test process has imported
everything already.
"""

from __future__ import annotations

import gc
import json
import subprocess
import sys
from pathlib import Path

import pytest

from actors.app.startup import end_of_start

REPO = Path(__file__).resolve().parents[3]

NOT_STANDALONE = (
    "runtime.kubeapi.client",
    "runtime.kubeapi.transport",
    "runtime.kubeapi.kubeconfig",
    "runtime.kubeapi.objects",
    "runtime.kubeapi.nodestatus",
    "actors.kubelet.cluster.context",
    "actors.kubelet.cluster.node_status",
    "actors.kubelet.cluster.lease",
    "actors.kubelet.cluster.pod_writer",
    "actors.kubelet.cluster.pod_source",
    "actors.kubelet.cluster.event_writer",
    "actors.app.cluster",
    "runtime.containerd.embedded",
)
"""Cluster mode's modules (only with --kubeconfig) and the embedded containerd's (only
without --container-runtime-endpoint)."""


def fresh_import(code: str) -> dict[str, object]:
    """Run ``code`` in a new interpreter; what it printed as JSON on its last line."""
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, check=True,
                         capture_output=True, text=True, timeout=120).stdout
    result: dict[str, object] = json.loads(out.splitlines()[-1])
    return result


def test_the_daemons_imports_leave_cluster_mode_and_the_embedded_containerd_out() -> None:
    seen = fresh_import(
        "import json, sys, bin.main, actors.app.daemon\n"
        f"print(json.dumps({{'loaded': sorted(set({NOT_STANDALONE!r}) & set(sys.modules))}}))")
    assert seen["loaded"] == []


def test_the_names_of_runtime_containerd_still_resolve() -> None:
    seen = fresh_import(
        "import json, sys\n"
        "from runtime.containerd import ContainerdConfig, EmbeddedContainerd\n"
        "print(json.dumps({'names': [ContainerdConfig.__name__, EmbeddedContainerd.__name__],"
        " 'loaded': 'runtime.containerd.embedded' in sys.modules}))")
    assert seen == {"names": ["ContainerdConfig", "EmbeddedContainerd"], "loaded": True}
    import runtime.containerd

    with pytest.raises(AttributeError, match="no attribute 'Nothing'"):
        _ = runtime.containerd.Nothing


def test_importing_the_entry_point_turns_the_collector_off_for_the_start() -> None:
    seen = fresh_import(
        "import gc, json\n"
        "import bin.main\n"
        "off = not gc.isenabled()\n"
        "from actors.app.startup import end_of_start\n"
        "end_of_start()\n"
        "print(json.dumps({'off_during_start': off, 'on_after': gc.isenabled(),"
        " 'frozen': gc.get_freeze_count() > 0}))")
    assert seen == {"off_during_start": True, "on_after": True, "frozen": True}


def test_end_of_start_leaves_a_running_collector_and_its_objects_alone() -> None:
    assert gc.isenabled()
    frozen = gc.get_freeze_count()
    end_of_start()
    assert gc.isenabled()
    assert gc.get_freeze_count() == frozen
