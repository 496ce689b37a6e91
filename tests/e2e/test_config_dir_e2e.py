"""The whole KubeletConfiguration on a real containerd: the daemon starts from a
kubeadm-style ``--config`` (kubeadm's ``0s`` durations, its logging block, memorySwap,
rotateCertificates, shutdown fields) with ``--config-dir`` drop-ins merged over it and a
flag over both, and ``/configz`` shows the merged values; ``enableServer: false`` turns
the main port off; a file with a field upstream does not have or a key written twice, a
drop-in with a value this node does not implement, or ``--port 0``, stops the start with
upstream's words on stderr and exit code 2, before anything runs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from actors.app.main import EXIT_USAGE
from runtime.containerd.embedded import EmbeddedContainerd
from runtime.cri.client import CRIClient
from tests.e2e.conftest import REPO
from tests.e2e.daemon import daemon_on, stopped_after

pytestmark = pytest.mark.e2e

HEAD = "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n"

# tests/data/kubeadm-kubelet-config.yaml as kubeadm writes it, adjusted for a standalone
# node on this machine: the embedded containerd's cgroupfs driver, no API server to send
# webhook reviews to (anonymous, AlwaysAllow), no cluster CA.
KUBEADM_STYLE = """\
authentication:
  anonymous:
    enabled: true
  webhook:
    cacheTTL: 0s
    enabled: false
authorization:
  mode: AlwaysAllow
  webhook:
    cacheAuthorizedTTL: 0s
    cacheUnauthorizedTTL: 0s
cgroupDriver: cgroupfs
clusterDNS:
- 10.96.0.10
clusterDomain: cluster.local
containerRuntimeEndpoint: ""
cpuManagerReconcilePeriod: 0s
crashLoopBackOff: {}
evictionPressureTransitionPeriod: 0s
featureGates:
  EventedPLEG: true
httpCheckFrequency: 0s
imageMaximumGCAge: 0s
imageMinimumGCAge: 0s
logging:
  flushFrequency: 0
  options:
    json:
      infoBufferSize: "0"
    text:
      infoBufferSize: "0"
  verbosity: 0
maxPods: 30
memorySwap: {}
nodeStatusReportFrequency: 0s
nodeStatusUpdateFrequency: 0s
rotateCertificates: true
runtimeRequestTimeout: 0s
shutdownGracePeriod: 0s
shutdownGracePeriodCriticalPods: 0s
streamingConnectionIdleTimeout: 0s
syncFrequency: 0s
volumeStatsAggPeriod: 0s
"""


def test_config_and_drop_ins_merged_as_configz_shows(containerd: EmbeddedContainerd,
                                                     cri: CRIClient) -> None:

    daemon = daemon_on(containerd, "config-dir", config=KUBEADM_STYLE)
    dropins = daemon.workdir / "kubelet.conf.d"
    dropins.mkdir()
    (dropins / "10-dns.conf").write_text(
        HEAD + "maxPods: 40\nclusterDNS: [10.96.0.11, 10.96.0.12]\n"
        "featureGates:\n  KubeletPodResourcesGet: true\nnodeStatusMaxImages: 3\n")
    (dropins / "20-pods.conf").write_text(HEAD + "maxPods: 50\nclusterDNS: [10.96.0.20]\n")
    (dropins / "README").write_text("not a drop-in: maxPods: 1\n")
    daemon.flags = (*daemon.flags, "--config-dir", str(dropins), "--node-status-max-images",
                    "7")
    with stopped_after(daemon.start()):
        code, body = daemon.get("/configz", port=daemon.port)
        assert code == 200, body
        config = json.loads(body)["kubeletconfig"]
    assert config["maxPods"] == 50  # the last drop-in over the first and the file
    assert config["clusterDNS"] == ["10.96.0.20"]  # a list replaced, not appended
    assert config["featureGates"] == {"EventedPLEG": True, "KubeletPodResourcesGet": True}
    assert config["nodeStatusMaxImages"] == 7  # the flag over the drop-in
    assert config["clusterDomain"] == "cluster.local"  # the file's, no drop-in sets it
    # kubeadm's 0s durations are upstream's defaults
    assert (config["syncFrequency"], config["runtimeRequestTimeout"],
            config["authentication"]["webhook"]["cacheTTL"],
            config["evictionPressureTransitionPeriod"]) == ("1m0s", "2m0s", "2m0s", "5m0s")
    assert config["cgroupDriver"] == "cgroupfs"
    assert config["logging"]["format"] == "text"
    assert config["logging"]["verbosity"] == 4  # the daemon's --v=4 over logging.verbosity
    assert config["containerRuntimeEndpoint"] == containerd.endpoint  # the flag's


def _start_refused(tmp_path: Path, *flags: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "bin.main", "--pod-manifest-path", str(tmp_path),
         "--root-dir", str(tmp_path / "root"), *flags],
        cwd=REPO, capture_output=True, text=True, timeout=60,
        env={**os.environ, "PYTHONPATH": str(REPO)})


def test_an_unknown_field_stops_the_start(tmp_path: Path) -> None:
    config = tmp_path / "kubelet.yaml"
    config.write_text(HEAD + KUBEADM_STYLE + "authentication2: {}\n")
    proc = _start_refused(tmp_path, "--config", str(config))
    assert proc.returncode == EXIT_USAGE, proc.stderr
    assert (f"failed to load Kubelet config file {config}, error failed to decode: strict "
            'decoding error: unknown field "authentication2"') in proc.stderr, proc.stderr
    assert not (tmp_path / "root").exists()  # nothing started


def test_a_drop_in_asking_for_what_this_node_lacks_stops_the_start(tmp_path: Path) -> None:
    (tmp_path / "d").mkdir()
    dropin = tmp_path / "d" / "10-cpu.conf"
    dropin.write_text(HEAD + "cpuManagerPolicy: static\n")
    proc = _start_refused(tmp_path, "--config-dir", str(tmp_path / "d"))
    assert proc.returncode == EXIT_USAGE, proc.stderr
    assert (f"--config-dir {dropin}: cpuManagerPolicy: kubelet-actors does not implement "
            "cpuManagerPolicy") in proc.stderr, proc.stderr
    assert not (tmp_path / "root").exists()


def test_a_key_set_twice_stops_the_start(tmp_path: Path) -> None:
    config = tmp_path / "kubelet.yaml"
    config.write_text(HEAD + KUBEADM_STYLE + "maxPods: 40\n")  # maxPods: 30 is above
    line = len((HEAD + KUBEADM_STYLE).splitlines()) + 1
    proc = _start_refused(tmp_path, "--config", str(config))
    assert proc.returncode == EXIT_USAGE, proc.stderr
    assert (f"failed to load Kubelet config file {config}, error failed to decode: strict "
            f"decoding error: yaml: unmarshal errors:\n  line {line}: key \"maxPods\" already "
            "set in map") in proc.stderr, proc.stderr
    assert not (tmp_path / "root").exists()


def test_port_0_on_the_command_line_stops_the_start_as_upstream(tmp_path: Path) -> None:
    proc = _start_refused(tmp_path, "--port", "0")
    assert proc.returncode == EXIT_USAGE, proc.stderr
    assert ("invalid configuration: port (--port) 0 must be between 1 and 65535, inclusive"
            in proc.stderr), proc.stderr
    assert not (tmp_path / "root").exists()


def test_enable_server_false_turns_the_main_port_off(containerd: EmbeddedContainerd,
                                                     cri: CRIClient) -> None:
    daemon = daemon_on(containerd, "no-server", config="enableServer: false\n")
    with stopped_after(daemon.start()):
        code, body = daemon.get("/pods")  # the read-only port still serves
        assert code == 200, body
        with pytest.raises(OSError):  # nothing listens on the main port
            daemon.get("/configz", port=daemon.port)
