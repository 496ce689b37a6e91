"""The certificate flags: --bootstrap-kubeconfig, --rotate-certificates and
--rotate-server-certificates (rotateCertificates, serverTLSBootstrap), as upstream."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from actors.app.config.flags import parse_flags
from runtime.errors import ConfigError


def test_defaults_as_upstream(tmp_path: Path) -> None:
    flags = parse_flags(["--kubeconfig", str(tmp_path / "k"), "--root-dir", str(tmp_path)])
    assert (flags.bootstrap_kubeconfig, flags.rotate_certificates,
            flags.server_tls_bootstrap) == ("", False, False)
    assert flags.cert_dir == os.path.join(str(tmp_path), "pki")


def test_flags_and_the_files_fields(tmp_path: Path) -> None:
    flags = parse_flags(["--kubeconfig", "k", "--bootstrap-kubeconfig", "b",
                         "--rotate-certificates", "--rotate-server-certificates=true",
                         "--cert-dir", "pki"])
    assert flags.bootstrap_kubeconfig == os.path.abspath("b")
    assert flags.rotate_certificates and flags.server_tls_bootstrap
    assert flags.cert_dir == os.path.abspath("pki")
    config = tmp_path / "kubelet.yaml"
    config.write_text("apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n"
                      "rotateCertificates: true\nserverTLSBootstrap: true\n")
    from_file = parse_flags(["--kubeconfig", "k", "--config", str(config)])
    assert from_file.rotate_certificates and from_file.server_tls_bootstrap


def test_a_bootstrap_kubeconfig_needs_a_kubeconfig_to_write() -> None:
    with pytest.raises(ConfigError, match="--bootstrap-kubeconfig needs --kubeconfig"):
        parse_flags(["--pod-manifest-path", "/tmp", "--bootstrap-kubeconfig", "b"])


def test_configz_shows_them_when_set() -> None:
    from actors.app.config.configz import kubelet_configuration

    flags = parse_flags(["--kubeconfig", "k", "--rotate-certificates",
                         "--rotate-server-certificates"])
    config = kubelet_configuration(flags)
    assert (config["rotateCertificates"], config["serverTLSBootstrap"]) == (True, True)
    default = kubelet_configuration(parse_flags(["--kubeconfig", "k"]))
    assert "rotateCertificates" not in default and "serverTLSBootstrap" not in default
