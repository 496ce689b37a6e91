"""The embedded containerd's runtime handlers: runc, its default, and runc-alt, the same
runc under a second name for pods whose RuntimeClass names it."""

from __future__ import annotations

import tomllib
from pathlib import Path

from runtime.containerd.config import (
    ALT_RUNTIME_HANDLER,
    DEFAULT_RUNTIME_HANDLER,
    ContainerdConfig,
    render_config_toml,
)


def test_the_embedded_containerd_has_two_runc_handlers(tmp_path: Path) -> None:
    toml = tomllib.loads(render_config_toml(ContainerdConfig.for_base_dir(tmp_path)))
    containerd = toml["plugins"]["io.containerd.grpc.v1.cri"]["containerd"]
    assert (DEFAULT_RUNTIME_HANDLER, ALT_RUNTIME_HANDLER) == ("runc", "runc-alt")
    assert containerd["default_runtime_name"] == "runc"
    runc = {"runtime_type": "io.containerd.runc.v2", "options": {"SystemdCgroup": False}}
    assert containerd["runtimes"] == {"runc": runc, "runc-alt": runc}
