"""Every valid corpus manifest (tests/data/manifests/valid) in the daemon's manifest
directory, on containerd (issue 9, item 6): none is a manifest error, and each pod shows
in /pods with what upstream's kubelet reports for it on a node with no API server and no
internet. The pods go in batches (the machine has two cores), each removed before the
next.

The expected family of each pod comes from its manifest by upstream's order of work:
admission first (a Failed pod), then its volumes (FailedMount: Pending, no sandbox, the
containers ContainerCreating), then the images (ErrImagePull or ImagePullBackOff for an
image not in the loopback registry, InvalidImageName for one that is no reference), and
only then the containers' config (CreateContainerConfigError) and Running.
"""

from __future__ import annotations

import shutil
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from runtime.containerd.embedded import EmbeddedContainerd
from runtime.cri.client import CRIClient
from runtime.machine import apparmor_enabled
from runtime.pod.admission import apparmor_required
from runtime.pod.manifest import parse_manifest
from runtime.pod.model import Pod, volume_source
from tests.e2e.daemon import Daemon
from tests.e2e.test_daemon import sandboxes_of
from tests.helpers import wait_for

pytestmark = pytest.mark.e2e

CORPUS = Path(__file__).resolve().parents[1] / "data" / "manifests" / "valid"
VALID = sorted(CORPUS.glob("*.yaml"))
BATCH = 21
NODE = "e2e-node"

# Pods whose nodeSelector or required node affinity no node here matches (the test's
# node has only the kubelet's own labels).
NODE_AFFINITY = {
    "website-pods-pod-nginx.yaml",  # nodeSelector disktype: ssd
    "website-pods-assigning-pods-to-nodes-affinity.yaml",  # zone antarctica-east1/-west1
}
# Volume sources that need an object, a claim, a driver or a plugin this node lacks.
NODE_VOLUMES = {"emptyDir", "hostPath", "downwardAPI"}


def expected(path: Path, pod: Pod) -> set[str]:
    """The outcomes upstream's kubelet would show for ``pod``."""
    if path.name in NODE_AFFINITY:
        return {"Failed:NodeAffinity"}
    if not apparmor_enabled() and apparmor_required(pod):
        return {"Failed:AppArmor"}  # upstream's AppArmor admit handler, on this kernel
    context = pod.spec.security_context
    if context is not None and context.supplemental_groups_policy == "Strict":
        # containerd 1.6 does not report the feature: upstream's admission refuses it
        return {"Failed:SupplementalGroupsPolicyNotSupported"}
    # Requests may not fit next to the pods of the same batch: any OutOf* is upstream's.
    outcomes = {"Failed:OutOf*"} if any(
        c.resources is not None and (c.resources.requests or c.resources.limits)
        for c in pod.all_containers()) else set()
    for v in pod.spec.volumes:
        if v.host_path is not None and not _host_path_ok(v.host_path.path, v.host_path.type):
            return outcomes | {"FailedMount"}
        if (v.host_path is not None and v.host_path.type == "FileOrCreate"
                and not Path(v.host_path.path).parent.is_dir()):
            # Upstream makes the file, not its directory: whether another pod of the batch
            # made that directory first (a DirectoryOrCreate below it) is a race.
            outcomes.add("FailedMount")
        source = volume_source(v) or "emptyDir"
        optional = bool(v.config_map.optional if v.config_map is not None
                        else v.secret.optional if v.secret is not None else False)
        projected_ok = v.projected is not None and all(
            s.downward_api is not None or (s.config_map is not None and s.config_map.optional)
            or (s.secret is not None and s.secret.optional) for s in v.projected.sources)
        if source not in NODE_VOLUMES and not optional and not projected_ok:
            return outcomes | {"FailedMount"}
    images = [c.image for c in pod.all_containers()]
    if any(not _is_reference(i) for i in images):
        return outcomes | {"InvalidImageName", "ImagePull"}
    if any(not i.startswith("localhost:5000/") for i in images):
        return outcomes | {"ImagePull"}
    return outcomes | {"Running", "CreateContainerConfigError"}


def _host_path_ok(path: str, kind: str | None) -> bool:
    """Whether this machine passes upstream's hostPath type check for ``path``."""
    p = Path(path)
    check = {"Directory": p.is_dir, "File": p.is_file, "Socket": p.is_socket,
             "CharDevice": p.is_char_device, "BlockDevice": p.is_block_device}.get(kind or "")
    return check is None or check()


def created_host_paths(pods: list[Pod]) -> list[Path]:
    """What the pods' DirectoryOrCreate and FileOrCreate hostPaths will make on this
    machine: the topmost missing part of each path, to remove after the batch."""
    made: set[Path] = set()
    for pod in pods:
        for v in pod.spec.volumes:
            if v.host_path is None or v.host_path.type not in ("DirectoryOrCreate",
                                                               "FileOrCreate"):
                continue
            path = Path(v.host_path.path)
            if path.exists():
                continue
            while not path.parent.exists():
                path = path.parent
            made.add(path)
    return sorted(made)


def _is_reference(image: str) -> bool:
    return bool(image) and "<" not in image and " " not in image


def outcome(pod: dict[str, Any], log: str) -> str | None:
    """The family /pods (and for FailedMount the daemon's log) shows for ``pod``; None
    while it is still on its way."""
    status = pod["status"]
    if status.get("phase") == "Failed" and status.get("reason"):
        return f"Failed:{status['reason']}"
    statuses = [*status.get("initContainerStatuses", []), *status.get("containerStatuses", [])]
    reasons = {s["state"].get("waiting", {}).get("reason") for s in statuses}
    if reasons & {"ErrImagePull", "ImagePullBackOff"}:
        return "ImagePull"
    for reason in ("InvalidImageName", "CreateContainerConfigError"):
        if reason in reasons:
            return reason
    if statuses and status.get("phase") == "Running" and all(
            "running" in s["state"] for s in status.get("containerStatuses", [])):
        return "Running"
    if status.get("phase") == "Pending" and reasons <= {"ContainerCreating", "PodInitializing"}:
        prefix = f" {pod['metadata']['name']} [{pod['metadata']['uid'][:8]}] FailedMount: "
        if any(prefix in line for line in log.splitlines()):
            return "FailedMount"
    return None


def matches(found: str | None, wanted: set[str]) -> bool:
    if found is None:
        return False
    return found in wanted or (found.startswith("Failed:OutOf") and "Failed:OutOf*" in wanted)


@pytest.fixture
def daemon(containerd: EmbeddedContainerd, cri: CRIClient) -> Iterator[Daemon]:
    """``cri`` removes whatever pods are left once the daemon has stopped."""
    workdir = containerd.base_dir / "daemon" / uuid.uuid4().hex[:8]
    (workdir / "manifests").mkdir(parents=True)
    d = Daemon(workdir, workdir / "manifests", "--container-runtime-endpoint",
               containerd.endpoint).start()
    yield d
    d.stop()
    print(d.log())  # shown when the test failed


def run_batch(daemon: Daemon, cri: CRIClient, number: int, batch: list[Path]) -> None:
    """Drop ``batch`` in, check every pod's family, take the batch out again, and remove
    what its hostPath volumes made on this machine."""
    pods = [parse_manifest(path.read_bytes(), str(path))[0] for path in batch]
    made = created_host_paths(pods)
    try:
        check_batch(daemon, cri, number, batch, pods)
    finally:
        for path in batch:
            (daemon.manifests / path.name).unlink(missing_ok=True)
        wait_for(lambda: daemon.pods() == {}, 120.0, f"batch {number} to leave /pods")
        for path in made:
            if path.is_dir():
                shutil.rmtree(path)
            elif path.exists():
                path.unlink()


def check_batch(daemon: Daemon, cri: CRIClient, number: int, batch: list[Path],
                batch_pods: list[Pod]) -> None:
    wanted: dict[str, tuple[Path, set[str]]] = {}
    for path, pod in zip(batch, batch_pods, strict=True):
        wanted[f"{pod.metadata.name}-{NODE}"] = (path, expected(path, pod))
        (daemon.manifests / path.name).write_bytes(path.read_bytes())

    def wrong() -> dict[str, tuple[str | None, set[str]]]:
        pods, log = daemon.pods(), daemon.log_path.read_text(errors="replace")
        return {p.name: (outcome(pods[n], log) if n in pods else "missing", want)
                for n, (p, want) in wanted.items()
                if n not in pods or not matches(outcome(pods[n], log), want)}

    try:
        wait_for(lambda: not wrong(), 240.0, f"batch {number} to settle")
    except AssertionError:
        raise AssertionError(f"batch {number}: pods not as upstream reports them: "
                             f"{wrong()}") from None
    code, metrics = daemon.get("/metrics", port=daemon.port)
    assert code == 200
    errors = [line for line in metrics.splitlines()
              if line.startswith("kubelet_actors_manifest_errors_current")]
    assert errors == ['kubelet_actors_manifest_errors_current{source="file"} 0.0'], (
        errors, [line for line in daemon.log_path.read_text(errors="replace").splitlines()
                 if "static pod manifest" in line and " rejected: " in line])
    pods, log = daemon.pods(), daemon.log_path.read_text(errors="replace")
    for name, (path, _) in wanted.items():
        if outcome(pods[name], log) == "FailedMount":
            assert sandboxes_of(cri, pods[name]["metadata"]["uid"]) == [], path.name
    for path in batch:
        (daemon.manifests / path.name).unlink()
    wait_for(lambda: daemon.pods() == {}, 120.0, f"batch {number} to leave /pods")
    uids = [p["metadata"]["uid"] for p in pods.values()]
    wait_for(lambda: not any(sandboxes_of(cri, uid) for uid in uids), 120.0,
             f"batch {number}'s sandboxes to go")


def batches(paths: list[Path]) -> list[list[Path]]:
    """``paths`` in batches of at most BATCH, no two pods of a batch with the same name
    (two manifests naming one static pod are a manifest error upstream too: its pod
    config keeps the first and reports the other)."""
    result: list[tuple[list[Path], set[str]]] = []
    for path in paths:
        (pod,) = parse_manifest(path.read_bytes(), str(path))
        name = f"{pod.metadata.namespace}/{pod.metadata.name}"
        spot = next((b for b in result if len(b[0]) < BATCH and name not in b[1]), None)
        if spot is None:
            spot = ([], set())
            result.append(spot)
        spot[0].append(path)
        spot[1].add(name)
    return [b for b, _ in result]


@pytest.mark.timeout(1800)  # ~90 pods in 7 batches: 1.5 min here, more on a loaded machine
def test_every_valid_corpus_manifest_runs_or_waits_as_upstream_reports(
        daemon: Daemon, cri: CRIClient) -> None:
    assert len(VALID) >= 80
    for number, batch in enumerate(batches(VALID), start=1):
        started = time.monotonic()
        run_batch(daemon, cri, number, batch)
        print(f"batch {number}: {len(batch)} pods in {time.monotonic() - started:.0f}s")
    assert not [line for line in daemon.log_path.read_text(errors="replace").splitlines()
                if "static pod manifest" in line and " rejected: " in line]
