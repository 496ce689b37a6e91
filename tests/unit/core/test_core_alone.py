"""The actor framework stands alone: importing it loads no kubelet, CRI or pod code."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]


def test_importing_actors_core_loads_no_kubelet_cri_or_kuberuntime_module() -> None:
    code = (
        "import json, sys\n"
        "import actors.core, actors.core.testing, actors.core.trace.replay, "
        "actors.core.trace.reader, actors.core.trace.writer, actors.core.trace.recording\n"
        "print(json.dumps(sorted(sys.modules)))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True,
                         text=True, check=True).stdout
    loaded = json.loads(out)
    forbidden = [m for m in loaded if m.startswith(("actors.kubelet", "actors.app", "runtime.cri",
                                                    "runtime.kuberuntime", "runtime.pod",
                                                    "runtime.prober", "runtime.status",
                                                    "runtime.containerd", "grpc", "proto"))]
    assert forbidden == []
    assert "actors.core.supervision" in loaded and "runtime.clock" in loaded
