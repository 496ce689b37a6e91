"""Cluster mode end to end: a Secret volume and the kube-api-access projected volume are
tmpfs mounts (upstream's secret and projected plugins wrap an emptyDir of medium Memory),
filled from the emulated API server, never on the node's disk; a ConfigMap volume stays on
the disk; all go when the pod is deleted."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from actors.app.testbed import BUSYBOX_IMAGE
from runtime.containerd.embedded import EmbeddedContainerd
from runtime.cri.client import CRIClient
from runtime.kuberuntime.volume_mounts import NodeVolumeMounts
from tests.e2e.test_cluster_emulated_apiserver import NODE, Cluster, joined
from tests.e2e.test_cluster_objects_emulated_apiserver import volume_dir
from tests.helpers import wait_for

pytestmark = pytest.mark.e2e

SHOW = "grep -E ' /etc/(sec|cfg) | /var/run/secrets/' /proc/mounts; echo shown; sleep 3600"


@pytest.fixture
def cluster(containerd: EmbeddedContainerd, cri: CRIClient) -> Iterator[Cluster]:
    """The daemon joined to an emulated API server; at the end it stops, the ``cri``
    fixture removes what it made, and whatever a failed test left mounted goes."""
    with joined(containerd, "--sync-frequency", "2s") as c:
        yield c
    mounts = NodeVolumeMounts()
    for point in mounts.mounts_under(str(c.workdir)):
        mounts.tear_down(str(c.workdir / point.path))


def mounted(cluster: Cluster) -> dict[str, str]:
    """The node's mounts under the daemon's pods dir: path (from there) -> fstype."""
    pods = Path(cluster.workdir, "root", "pods")
    return {p.path: p.fstype for p in NodeVolumeMounts().mounts_under(str(pods))}


def test_secret_and_projected_volumes_are_tmpfs_emulated_apiserver(cluster: Cluster) -> None:
    cluster.apply({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cfg"},
                    "data": {"greeting": "hello"}})
    cluster.apply({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "sec"},
                    "data": {"pw": "czNjcmV0"}})
    cluster.daemon.start()
    wait_for(lambda: cluster.node_ready() == "True", 30, "the Node Ready",
             ignore=(AssertionError,), interval=0.5)
    cluster.apply({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "app"}, "spec": {
        "nodeName": NODE, "terminationGracePeriodSeconds": 2,
        "volumes": [{"name": "sec", "secret": {"secretName": "sec"}},
                    {"name": "cfg", "configMap": {"name": "cfg"}}],
        "containers": [{"name": "main", "image": BUSYBOX_IMAGE, "command": ["sh", "-c", SHOW],
                        "resources": {"limits": {"memory": "40Mi"}},
                        "volumeMounts": [{"name": "sec", "mountPath": "/etc/sec"},
                                         {"name": "cfg", "mountPath": "/etc/cfg"}]}]}})
    pod = wait_for(lambda: cluster.running("app"), 60, "app Running", interval=0.5)
    uid = pod["metadata"]["uid"]
    (access,) = [v["name"] for v in pod["spec"]["volumes"]
                 if v["name"].startswith("kube-api-access-")]
    secret = volume_dir(cluster, uid, "secret", "sec")
    assert (secret / "pw").read_text() == "s3cret"
    assert (volume_dir(cluster, uid, "configmap", "cfg") / "greeting").read_text() == "hello"
    assert mounted(cluster) == {f"{uid}/volumes/kubernetes.io~secret/sec": "tmpfs",
                                f"{uid}/volumes/kubernetes.io~projected/{access}": "tmpfs"}
    # Sized by the pod's memory limit (40Mi), as upstream's SizeMemoryBackedVolumes.
    (point,) = [p for p in NodeVolumeMounts().mounts_under(str(secret)) if p.path == ""]
    assert "size=40960k" in point.options

    log = cluster.daemon.pod_logs / f"default_app_{uid}" / "main" / "0.log"
    shown = wait_for(lambda: log.exists() and "shown" in log.read_text(errors="replace"),
                     30, "the container's mounts in its log", interval=0.5)
    assert shown
    lines = log.read_text(errors="replace")
    assert " /etc/sec tmpfs " in lines
    assert " /var/run/secrets/kubernetes.io/serviceaccount tmpfs " in lines
    assert " /etc/cfg tmpfs " not in lines

    cluster.kubectl.run("delete", "pod", "app", "--wait=true", timeout=60)
    wait_for(lambda: not mounted(cluster), 30, "the pod's tmpfs volumes unmounted",
             interval=0.5)
