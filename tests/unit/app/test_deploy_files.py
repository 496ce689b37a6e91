"""deploy/'s files as an operator installs them (docs/install.md): the systemd unit verifies,
its command line parses, and the example KubeletConfiguration loads strictly with the
values the page promises."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from actors.app.config.flags import KubeletFlags, parse_flags
from actors.app.config.kubelet_config import load_kubelet_config
from tests.install_page import (
    CHECKOUT,
    DEPLOY,
    INSTALLED_BINARY,
    PAGE,
    UNIT,
    Host,
    join_blocks,
    run_block,
    unit_command,
)


@pytest.fixture
def host(tmp_path: Path) -> Host:
    """deploy/'s files installed by the page's first block, the page's paths under tmp."""
    host = Host.debian(tmp_path)
    run_block(join_blocks(PAGE.read_text())[0], host, dict(os.environ))
    host.move_file("/etc/kubelet-actors/config.yaml")
    host.move_file(f"/etc/systemd/system/{UNIT}")
    host.path("/etc/kubernetes/pki/ca.crt").write_text("")
    return host


def test_the_unit_verifies_with_systemd(host: Host, tmp_path: Path) -> None:
    analyze = shutil.which("systemd-analyze")
    assert analyze, "systemd-analyze (Debian's systemd package) checks the unit file"
    unit = host.path(f"/etc/systemd/system/{UNIT}")
    unit.write_text(unit.read_text().replace(INSTALLED_BINARY,
                                             str(CHECKOUT / "bin" / "kubelet-actors")))
    proc = subprocess.run([analyze, "verify", str(unit)], capture_output=True, text=True,
                          timeout=60, check=False)
    assert (proc.returncode, proc.stderr) == (0, ""), proc.stderr


def test_the_unit_runs_the_example_configuration(host: Host) -> None:
    args = unit_command(host.path(f"/etc/systemd/system/{UNIT}"), host)
    flags: KubeletFlags = parse_flags(args)
    assert flags.config_dir == str(host.path("/etc/kubelet-actors/config.d"))
    assert flags.kubeconfig == str(host.path("/etc/kubernetes/kubelet.conf"))
    assert flags.root_dir == str(host.path("/var/lib/kubelet-actors"))
    assert flags.pod_manifest_path == str(host.path("/etc/kubernetes/manifests"))
    assert flags.pod_infra_container_image == "registry.k8s.io/pause:3.10"
    # The kubelet's own containerd, on its own bridge (the page's default network).
    assert (flags.container_runtime_endpoint, flags.cni_conf_dir) == ("", "")
    assert (flags.address, flags.read_only_port) == ("0.0.0.0", 0)
    assert (flags.anonymous_auth, flags.authorization_mode) == (False, "Webhook")
    assert flags.client_ca_file == str(host.path("/etc/kubernetes/pki/ca.crt"))
    assert (flags.shutdown_grace_period, flags.shutdown_grace_period_critical_pods) == (30, 10)


def test_the_example_configuration_loads_strictly() -> None:
    values = load_kubelet_config(str(DEPLOY / "kubelet-config.yaml"))
    assert values["cluster_dns"] == ["10.96.0.10"]
    assert values["cluster_domain"] == "cluster.local"
