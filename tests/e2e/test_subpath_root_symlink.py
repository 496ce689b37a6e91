"""The daemon on containerd, its root dir reached through a symlink (``/var/lib/kubelet``
-> ``/data/kubelet``): a subPath of a hostPath volume is bound and seen by the container,
and when the pod goes its bind mount is undone and the host's files stay (the mounts are
looked up as mountinfo names them, symlinks resolved; before, none was found and the
cleanup removed the files through the mount)."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from actors.app.testbed import BUSYBOX_IMAGE
from runtime.containerd.embedded import EmbeddedContainerd
from runtime.cri.client import CRIClient
from runtime.mounts import mount_points_under
from tests.e2e.daemon import Daemon, daemon_on, stopped_after
from tests.e2e.test_daemon import sandboxes_of
from tests.helpers import wait_for
from tests.unit.runtime.subpath_fixtures import unmount_all_under

pytestmark = pytest.mark.e2e


@pytest.fixture
def linked(containerd: EmbeddedContainerd, cri: CRIClient) -> Iterator[Daemon]:
    """A daemon whose ``--root-dir`` is a symlink to its real root; whatever stays mounted
    under its workdir is unmounted at the end, failed test or not."""
    d = daemon_on(containerd, "daemon")
    (d.workdir / "real-root").mkdir()
    os.symlink(d.workdir / "real-root", d.workdir / "root")  # the Daemon's --root-dir
    try:
        with stopped_after(d):
            yield d
    finally:
        unmount_all_under(str(d.workdir))


def _pod(host: Path) -> str:
    return json.dumps({
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "sub"},
        "spec": {
            "terminationGracePeriodSeconds": 5,
            "containers": [{
                "name": "main", "image": BUSYBOX_IMAGE,
                "command": ["sh", "-c", "trap 'exit 0' TERM; cat /data/keep > /data/seen; "
                            "while true; do sleep 1; done"],
                "volumeMounts": [{"name": "host", "mountPath": "/data", "subPath": "sub"}],
            }],
            "volumes": [{"name": "host", "hostPath": {"path": str(host), "type": "Directory"}}],
        },
    })


def test_sub_path_under_a_root_dir_reached_through_a_symlink(linked: Daemon,
                                                             cri: CRIClient) -> None:
    host = linked.workdir / "host-data"
    (host / "sub").mkdir(parents=True)
    (host / "sub" / "keep").write_text("precious\n")
    (linked.manifests / "sub.yaml").write_text(_pod(host))
    linked.start()
    pod = linked.wait_running("sub-e2e-node", timeout=90.0)
    uid = pod["metadata"]["uid"]
    # The container saw the subPath, and wrote through it.
    wait_for(lambda: (host / "sub" / "seen").exists()
             and (host / "sub" / "seen").read_text() == "precious\n", 30.0,
             "the container to copy keep to seen in its subPath")
    real_pod_dir = linked.workdir / "real-root" / "pods" / uid
    assert mount_points_under(str(real_pod_dir)) == (
        str(real_pod_dir / "volume-subpaths" / "host" / "main" / "0"),)

    (linked.manifests / "sub.yaml").unlink()
    wait_for(lambda: linked.pods() == {}, 60.0, "the pod to leave /pods")
    wait_for(lambda: sandboxes_of(cri, uid) == [], 60.0, "the pod removed from the runtime")
    wait_for(lambda: not real_pod_dir.exists(), 60.0, "the pod's directory removed")
    # Only the root dir's own shared mount is left (share_root_dir), as upstream's is.
    assert mount_points_under(str(linked.workdir)) == (str(linked.workdir / "real-root"),)
    assert sorted(os.listdir(host / "sub")) == ["keep", "seen"]
    assert (host / "sub" / "keep").read_text() == "precious\n"
