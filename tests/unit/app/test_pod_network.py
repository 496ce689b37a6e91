"""The pod network's flags (--pod-cidr, --cni-bin-dir, --cni-conf-dir), the embedded
containerd's network from them, and --pod-cidr given to the runtime at start."""

from __future__ import annotations

from pathlib import Path
from typing import Any, cast

import pytest

from actors.app.config.flags import parse_flags
from actors.app.pod_network import embedded_network, give_pod_cidr_at_start
from actors.kubelet.cluster.context import Cluster
from runtime.cri.intercept import Proceed, intercept
from runtime.cri.service import CRIRuntime
from runtime.errors import ConfigError
from runtime.kubeapi.client import KubeClient
from runtime.kubeapi.nodestatus import NodeConfig
from runtime.testing.fake_runtime import FakeRuntime


def _flags(tmp_path: Path, *args: str) -> list[str]:
    return ["--pod-manifest-path", str(tmp_path), *args]


def test_standalone_keeps_its_fixed_network_and_cluster_mode_takes_the_nodes(
        tmp_path: Path) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text("")
    standalone = embedded_network(parse_flags(_flags(tmp_path)))
    assert standalone == {"bridge_name": "kacni0", "subnet": "10.88.0.0/16",
                          "cni_bin_dir": "/usr/lib/cni", "cni_conf_dir": None,
                          "pod_cidr_from_kubelet": False}
    given = embedded_network(parse_flags(_flags(
        tmp_path, "--pod-cidr", "10.85.1.0/24", "--cni-bin-dir", str(tmp_path),
        "--cni-conf-dir", str(tmp_path))))
    assert (given["subnet"], given["cni_bin_dir"], given["cni_conf_dir"]) == (
        "10.85.1.0/24", str(tmp_path), str(tmp_path))
    assert embedded_network(parse_flags(_flags(
        tmp_path, "--kubeconfig", str(kubeconfig))))["pod_cidr_from_kubelet"] is True


@pytest.mark.parametrize(("args", "words"), [
    (["--cni-bin-dir", "lib/cni"], '--cni-bin-dir "lib/cni": must be an absolute path'),
    (["--cni-conf-dir", "/nonexistent/net.d"],
     '--cni-conf-dir "/nonexistent/net.d": no such directory'),
    (["--cni-bin-dir", "/usr", "--container-runtime-endpoint", "unix:///run/c.sock"],
     '--cni-bin-dir "/usr": only the embedded containerd takes it; the runtime at '
     '--container-runtime-endpoint "unix:///run/c.sock" reads its own CNI configuration'),
])
def test_bad_cni_dirs_are_refused_by_name(tmp_path: Path, args: list[str], words: str) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_flags(_flags(tmp_path, *args))
    assert words in str(caught.value)


def test_the_pod_cidr_flag_reaches_the_runtime_at_start_once(tmp_path: Path) -> None:
    runtime = FakeRuntime()
    give_pod_cidr_at_start(parse_flags(_flags(tmp_path)), runtime, None)
    assert runtime.calls_to("update_runtime_config") == []  # not set: nothing sent
    flags = parse_flags(_flags(tmp_path, "--pod-cidr", "10.85.1.0/24"))
    cluster = Cluster(cast(KubeClient, None), cast(KubeClient, None),
                      NodeConfig(node_name="n1", hostname="n1", node_ip="10.0.0.1",
                                 architecture="amd64"))
    give_pod_cidr_at_start(flags, runtime, cluster)
    assert [c.args for c in runtime.calls_to("update_runtime_config")] == [("10.85.1.0/24",)]
    # The Node's podCIDRs, the same: not sent again (the cluster's record is shared).
    assert cluster.pod_cidr.update(runtime, "10.85.1.0/24") is False


def test_the_call_passes_the_interceptors_a_trace_records_with(tmp_path: Path) -> None:
    seen: list[tuple[str, str, tuple[Any, ...]]] = []

    class Seen:
        def around(self, target: str, method: str, args: tuple[Any, ...],
                   proceed: Proceed) -> Any:
            seen.append((target, method, args))
            return proceed()

    runtime = intercept(FakeRuntime(), CRIRuntime, Seen())
    give_pod_cidr_at_start(parse_flags(_flags(tmp_path, "--pod-cidr", "10.85.1.0/24")),
                           runtime, None)
    assert seen == [("runtime", "update_runtime_config", ("10.85.1.0/24",))]
