"""Local storage limits end to end (upstream's localStorageEviction): the daemon on a real
containerd, joined to the emulated API server, with no eviction threshold that the node is
near. Three pods write past a limit once they start:

- ``spill`` writes 20 MiB into an emptyDir whose sizeLimit is 10Mi;
- ``hoard`` writes 25 MiB into an emptyDir without a sizeLimit, its two containers' limits
  summing to 20Mi;
- ``chatty``'s container ``main`` writes 20 MiB into its own writable layer, over its 10Mi
  ephemeral-storage limit (its sidecar's 100Mi keeps the pod's sum above the usage).

Each is evicted within an eviction pass or two (every 10 s, stats every second): Failed,
reason Evicted, upstream's message for the check it failed, in /pods and in the API, an
Evicted event with the message, no DisruptionTarget condition, and its containers stopped.
A pod under its limits (``calm``, with a memory emptyDir holding more than its sizeLimit)
keeps running. The test writes 65 MiB in all, under its own directory, and removes it.
"""

from __future__ import annotations

import functools
import json
import shutil
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from runtime.containerd.embedded import EmbeddedContainerd
from runtime.cri.client import CRIClient
from runtime.cri.types import ContainerState
from tests.apiserver import EmulatedAPIServer
from tests.e2e.test_cluster_emulated_apiserver import (
    NODE,
    SERVE,
    Cluster,
    containers_of,
    pod_manifest,
)
from tests.helpers import wait_for

pytestmark = pytest.mark.e2e

PODS = ("spill", "hoard", "chatty", "calm")
MESSAGES = {
    "spill": 'Usage of EmptyDir volume "scratch" exceeds the limit "10Mi". ',
    "hoard": "Pod ephemeral local storage usage exceeds the total limit of containers 20Mi. ",
    "chatty": 'Container main exceeded its local ephemeral storage limit "10Mi". ',
}


def writer(name: str, command: str, limit: str = "") -> dict[str, Any]:
    """A container that runs ``command`` then idles, with an ephemeral-storage limit."""
    container: dict[str, Any] = {
        "name": name, "image": pod_manifest("x")["spec"]["containers"][0]["image"],
        "command": ["sh", "-c", f"{command}; {SERVE}"],
        "volumeMounts": [{"name": "scratch", "mountPath": "/scratch"}]}
    if limit:
        container["resources"] = {"limits": {"ephemeral-storage": limit}}
    return container


def storage_pod(name: str, scratch: dict[str, Any], *containers: dict[str, Any]
                ) -> dict[str, Any]:
    pod = pod_manifest(name)
    pod["spec"]["terminationGracePeriodSeconds"] = 30  # eviction overrides it: 1 s
    pod["spec"]["containers"] = list(containers)
    pod["spec"]["volumes"] = [{"name": "scratch", "emptyDir": scratch}]
    return pod


def dd(path: str, mib: int) -> str:
    return f"dd if=/dev/zero of={path} bs=1M count={mib}"


MANIFESTS = (
    storage_pod("spill", {"sizeLimit": "10Mi"}, writer("main", dd("/scratch/fill", 20))),
    storage_pod("hoard", {}, writer("main", dd("/scratch/fill", 25), "10Mi"),
                writer("side", "true", "10Mi")),
    storage_pod("chatty", {}, writer("main", dd("/tmp/fill", 20), "10Mi"),
                writer("side", "true", "100Mi")),
    storage_pod("calm", {"medium": "Memory", "sizeLimit": "1Mi"},
                writer("main", dd("/scratch/fill", 2), "10Mi")),
)


@pytest.fixture
def node(containerd: EmbeddedContainerd, cri: CRIClient) -> Iterator[Cluster]:
    workdir = containerd.base_dir / "cluster" / uuid.uuid4().hex[:8]
    (workdir / "manifests").mkdir(parents=True)
    with EmulatedAPIServer(bookmark_interval=0.5) as server:
        # No threshold the node is near: only the local storage limits evict.
        c = Cluster(server, workdir, containerd.endpoint, "--eviction-hard",
                    "memory.available<1Mi", "--stats-collection-period", "1s",
                    "--volume-stats-agg-period", "1s")
        try:
            yield c
        finally:
            for name in PODS:
                c.kubectl.run("delete", "pod", name, "--wait=false", check=False)
            c.daemon.stop()
            print(c.daemon.log_path.read_text(errors="replace"))  # shown when the test failed
            shutil.rmtree(workdir / "root" / "pods", ignore_errors=True)  # what was written


def apply(c: Cluster, manifest: dict[str, Any]) -> None:
    path = c.workdir / f"{manifest['metadata']['name']}.json"
    path.write_text(json.dumps(manifest))
    c.kubectl.run("apply", "-f", str(path))


def api_failed(c: Cluster, name: str) -> dict[str, Any] | None:
    pod = c.pod(name)
    return pod if pod and pod["status"].get("phase") == "Failed" else None


def evicted_events(c: Cluster, name: str) -> list[dict[str, Any]]:
    listed = c.kubectl.json("get", "events", "--field-selector",
                            f"involvedObject.name={name},reason=Evicted")
    return list(listed["items"])


def test_pods_over_their_local_storage_limits_are_evicted_emulated_apiserver(
        node: Cluster, cri: CRIClient) -> None:
    c = node
    c.daemon.start()
    wait_for(lambda: c.node_ready() == "True", 30, "the Node Ready", ignore=(AssertionError,),
             interval=0.5)
    for manifest in MANIFESTS:
        apply(c, manifest)

    def failed() -> dict[str, dict[str, Any]] | None:
        pods = c.daemon.pods()  # the daemon's own /pods
        done = {n: pods[n] for n in MESSAGES
                if n in pods and pods[n]["status"].get("phase") == "Failed"}
        return done if len(done) == len(MESSAGES) else None

    local = wait_for(failed, 90, "the three pods evicted", interval=1.0)
    assert local is not None
    for name, message in MESSAGES.items():
        status = local[name]["status"]
        assert (status["reason"], status["message"]) == ("Evicted", message), status
        assert all("terminated" in s["state"] for s in status["containerStatuses"]), status
        assert all(x["type"] != "DisruptionTarget" for x in status.get("conditions", []))
        uid = local[name]["metadata"]["uid"]
        assert not [x for x in containers_of(cri, uid) if x.state == ContainerState.RUNNING]
        # The API server has it too, and the Evicted event says why.
        api = wait_for(functools.partial(api_failed, c, name), 30,
                       f"{name} Failed in the API", interval=0.5)
        assert api is not None
        assert (api["status"]["reason"], api["status"]["message"]) == ("Evicted", message)
        events = wait_for(functools.partial(evicted_events, c, name), 30,
                          f"{name}'s Evicted event", interval=0.5)
        assert [(e["type"], e["message"]) for e in events] == [("Warning", message)]

    # Under its limits (a memory emptyDir is not disk): still running, never evicted.
    assert c.running("calm")
    assert not evicted_events(c, "calm")
    assert c.get("node", NODE)  # the node is still there and answering
