"""What the runtime tells the Node: the image list (upstream's setters_test.go TestImages
and sliceutils.ByImageSize), the runtime's conditions as the Ready condition's errors
(kubelet.go updateRuntimeUp) and the fast status update's decision (kubelet_test.go
TestFastStatusUpdateOnce's cases), plus --node-status-max-images."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from actors.app.config.flags import parse_flags
from runtime.cri.types import Image, RuntimeCondition, RuntimeStatus
from runtime.errors import ConfigError
from runtime.kubeapi import nodestatus as ns
from runtime.kubeapi.nodestatus import (
    MAX_NAMES_PER_IMAGE,
    MachineFacts,
    NodeConfig,
    NodeHealth,
)
from runtime.kubeapi.runtimestate import (
    FastStep,
    condition_errors,
    fast_status_step,
    node_images,
)

MIN_SIZE, MAX_SIZE = 23 * 1024 * 1024, 1000 * 1024 * 1024
CAPACITY = (("cpu", "2"), ("memory", "1Gi"), ("ephemeral-storage", "10Gi"), ("pods", "110"))


def make_images(count: int, names: int) -> list[Image]:
    """makeImageList: ``count`` images of ``names`` tags each, sizes spread between the
    bounds (deterministic here: upstream draws them at random)."""
    step = (MAX_SIZE - MIN_SIZE) // max(count, 1)
    return [Image(id=f"sha256:{i:064x}",
                  repo_tags=tuple(f"repo/img{i}:tag{n}" for n in range(names)),
                  size=MIN_SIZE + step * i) for i in range(count)]


def expected(images: list[Image], max_images: int) -> list[dict[str, Any]]:
    """makeExpectedImageList: sorted by size, capped, digests then tags, names capped."""
    ordered = sorted(images, key=lambda i: (i.size, i.id), reverse=True)
    if max_images > -1:
        ordered = ordered[:max_images]
    return [{"names": [*i.repo_digests, *i.repo_tags][:MAX_NAMES_PER_IMAGE],
             "sizeBytes": i.size} for i in ordered]


# setters_test.go TestImages: (desc, maxImages, image list)
_IMAGES: list[tuple[str, int, list[Image]]] = [
    ("max images enforced", 1, make_images(2, 1)),
    ("no max images cap for -1", -1, make_images(2, 1)),
    ("max names per image enforced", -1, make_images(1, MAX_NAMES_PER_IMAGE + 1)),
    ("images are sorted by size, descending", -1,
     [Image(id="a", size=3), Image(id="b", size=1), Image(id="c", size=4),
      Image(id="d", size=2)]),
    ("repo digests and tags both show up in image names", -1,
     [Image(id="x", repo_digests=("foo", "bar"), repo_tags=("baz", "quux"))]),
]


@pytest.mark.parametrize("case", _IMAGES, ids=[c[0] for c in _IMAGES])
def test_images_setter(case: tuple[str, int, list[Image]]) -> None:
    _, max_images, images = case
    cfg = NodeConfig(node_name="n", hostname="n", node_ip="10.0.0.1", architecture="amd64",
                     max_images=max_images)
    facts = MachineFacts(capacity=CAPACITY, allocatable=CAPACITY, images=node_images(images))
    node = ns.set_node_status({"status": {}}, cfg, facts, NodeHealth(), 0.0)
    assert node["status"]["images"] == expected(images, max_images)


def test_names_are_digests_then_tags_and_equal_sizes_sort_by_id_descending() -> None:
    images = node_images([Image(id="a", repo_tags=("t",), repo_digests=("d",), size=5),
                          Image(id="b", size=5), Image(id="c", size=9)])
    assert [i.id for i in images] == ["c", "b", "a"]  # ByImageSize
    assert images[2].names == ("d", "t")


def _status(*conditions: RuntimeCondition) -> RuntimeStatus:
    return RuntimeStatus(conditions=conditions)


READY = RuntimeCondition("RuntimeReady", True)
NET = RuntimeCondition("NetworkReady", True)

# updateRuntimeUp: (desc, status, runtime error, network error)
_CONDITIONS: list[tuple[str, RuntimeStatus, str | None, str | None]] = [
    ("both ready", _status(READY, NET), None, None),
    ("network not ready", _status(READY, RuntimeCondition(
        "NetworkReady", False, "NetworkPluginNotReady", "cni plugin not initialized")), None,
     "container runtime network not ready: NetworkReady=false "
     "reason:NetworkPluginNotReady message:cni plugin not initialized"),
    ("network condition missing", _status(READY), None,
     "container runtime network not ready: <nil>"),
    ("runtime not ready", _status(RuntimeCondition("RuntimeReady", False, "Down", "gone"), NET),
     "container runtime not ready: RuntimeReady=false reason:Down message:gone", None),
    ("nothing reported", _status(), "container runtime not ready: <nil>",
     "container runtime network not ready: <nil>"),
]


@pytest.mark.parametrize("case", _CONDITIONS, ids=[c[0] for c in _CONDITIONS])
def test_runtime_conditions(case: tuple[str, RuntimeStatus, str | None, str | None]) -> None:
    _, status, runtime_error, network_error = case
    assert condition_errors(status) == (runtime_error, network_error)


def test_network_not_ready_makes_the_node_not_ready_with_upstreams_message() -> None:
    _, network = condition_errors(_status(READY, RuntimeCondition(
        "NetworkReady", False, "NetworkPluginNotReady", "cni plugin not initialized")))
    assert network is not None
    cfg = NodeConfig(node_name="n", hostname="n", node_ip="10.0.0.1", architecture="amd64")
    facts = MachineFacts(capacity=CAPACITY, allocatable=CAPACITY)
    node = ns.set_node_status({"status": {}}, cfg, facts,
                              NodeHealth(network_errors=(network,)), 0.0)
    ready = next(c for c in node["status"]["conditions"] if c["type"] == "Ready")
    assert (ready["status"], ready["reason"], ready["message"]) == (
        "False", "KubeletNotReady", network)


def _node(ready: str | None) -> dict[str, Any]:
    conditions = [] if ready is None else [{"type": "Ready", "status": ready}]
    return {"status": {"conditions": conditions}}


# fastNodeStatusUpdate: (desc, seen, updated, changed, timed out, step)
_FAST: list[tuple[str, dict[str, Any] | None, dict[str, Any] | None, bool, bool, FastStep]] = [
    ("timeout", _node("False"), None, False, True, FastStep.DONE),
    ("no node in the lister yet", None, None, False, False, FastStep.AGAIN),
    ("node without a Ready condition", _node(None), _node("True"), True, False,
     FastStep.AGAIN),
    ("already ready", _node("True"), _node("True"), False, False, FastStep.DONE),
    ("unchanged", _node("False"), _node("False"), False, False, FastStep.AGAIN),
    ("changed but still not ready", _node("False"), _node("False"), True, False,
     FastStep.AGAIN),
    ("turns ready: patch", _node("False"), _node("True"), True, False, FastStep.PATCH),
    ("from unknown to ready: patch", _node("Unknown"), _node("True"), True, False,
     FastStep.PATCH),
]


@pytest.mark.parametrize("case", _FAST, ids=[c[0] for c in _FAST])
def test_fast_status_step(case: tuple[str, dict[str, Any] | None, dict[str, Any] | None,
                                      bool, bool, FastStep]) -> None:
    _, seen, updated, changed, timed_out, step = case
    assert fast_status_step(seen, updated, changed, timed_out) is step


def test_node_status_max_images_flag_and_config_field(tmp_path: Path) -> None:
    kubeconfig = str(tmp_path / "k")
    assert parse_flags(["--kubeconfig", kubeconfig]).node_status_max_images == 50
    assert parse_flags(["--kubeconfig", kubeconfig, "--node-status-max-images", "-1"]
                       ).node_status_max_images == -1
    config = tmp_path / "config.yaml"
    config.write_text("apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n"
                      "nodeStatusMaxImages: 3\n")
    assert parse_flags(["--config", str(config), "--kubeconfig", kubeconfig]
                       ).node_status_max_images == 3
    with pytest.raises(ConfigError, match=r"invalid configuration: nodeStatusMaxImages "
                                          r"\(--node-status-max-images\) -2 must be -1 or "
                                          r"greater"):
        parse_flags(["--kubeconfig", kubeconfig, "--node-status-max-images", "-2"])
