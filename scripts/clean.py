"""Remove every pod of the embedded containerd under a kubelet root dir, then stop it, and
unmount what the kubelet mounted there (subPath binds, memory volumes, the root dir's own
shared mount)."""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from actors.app.root_lock import hold_root_dir  # noqa: E402
from runtime.containerd.config import DEFAULT_BRIDGE_NAME, DEFAULT_SUBNET  # noqa: E402
from runtime.containerd.embedded import EmbeddedContainerd  # noqa: E402
from runtime.cri.client import CRIClient  # noqa: E402
from runtime.errors import CRIError, KubeletError  # noqa: E402
from runtime.mounts import is_mount_point, mount_points_under, unmount  # noqa: E402


def main(root: str) -> int:
    if not (Path(root) / "containerd" / "config.toml").exists():
        print(f"clean: no embedded containerd was ever started under {root}")
        return 0
    try:
        with hold_root_dir(root):
            return _clean(root)
    except KubeletError as err:
        print(f"clean: {err}")
        return 1


def network_of(root: str) -> tuple[str, str]:
    """The bridge and subnet the root's containerd was configured with (its conflist), so
    the pods' network teardown (CNI DEL: IPs, hostPort rules) runs on their own network."""
    for conflist in sorted((Path(root) / "containerd" / "cni" / "net.d").glob("*.conflist")):
        try:
            plugin = json.loads(conflist.read_text())["plugins"][0]
            return str(plugin["bridge"]), str(plugin["ipam"]["ranges"][0][0]["subnet"])
        except (OSError, ValueError, KeyError, IndexError, TypeError):
            continue
    return DEFAULT_BRIDGE_NAME, DEFAULT_SUBNET


def _clean(root: str) -> int:
    bridge, subnet = network_of(root)
    embedded = EmbeddedContainerd(root, bridge_name=bridge, subnet=subnet)
    embedded.start()
    removed = 0
    try:
        with CRIClient(embedded.endpoint, timeout=60.0) as client:
            for sandbox in client.list_pod_sandbox():
                with contextlib.suppress(CRIError):
                    client.stop_pod_sandbox(sandbox.id)
                    client.remove_pod_sandbox(sandbox.id)
                    removed += 1
    finally:
        embedded.stop()
    subprocess.run(["ip", "link", "delete", bridge], capture_output=True, check=False)
    for point in (*mount_points_under(root), root):
        if is_mount_point(point):
            with contextlib.suppress(OSError):
                unmount(point)
    print(f"clean: removed {removed} pod(s) and stopped the containerd under {root}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "/var/lib/kubelet-actors"))
