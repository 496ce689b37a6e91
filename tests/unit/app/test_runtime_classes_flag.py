"""--runtime-classes and the config file's runtimeClasses: a standalone node's table of
runtime class name -> CRI runtime handler, checked before anything starts, and carried to
the runtime manager (NodeSettings.runtime_classes)."""

from __future__ import annotations

from pathlib import Path

import pytest

from actors.app.config.flags import parse_flags
from actors.app.node import node_settings
from runtime.errors import ConfigError

BASE = ["--pod-manifest-path", "/nonexistent"]


def test_the_flag_names_the_handlers() -> None:
    flags = parse_flags([*BASE, "--runtime-classes", " alt=runc-alt, fast = runc "])
    assert flags.runtime_classes == (("alt", "runc-alt"), ("fast", "runc"))
    assert node_settings(flags).runtime_classes == (("alt", "runc-alt"), ("fast", "runc"))
    assert parse_flags(BASE).runtime_classes == ()


def test_the_config_file_names_the_handlers_and_the_flag_wins(tmp_path: Path) -> None:
    config = tmp_path / "kubelet.yaml"
    config.write_text("apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n"
                      "runtimeClasses:\n  alt: runc-alt\n")
    assert parse_flags([*BASE, "--config", str(config)]).runtime_classes == (
        ("alt", "runc-alt"),)
    assert parse_flags([*BASE, "--config", str(config), "--runtime-classes", "b=runc"]
                       ).runtime_classes == (("b", "runc"),)


@pytest.mark.parametrize(("value", "message"), [
    ("Alt=runc", '--runtime-classes: runtime class "Alt": metadata.name: Invalid value: '
                 '"Alt": a lowercase RFC 1123 subdomain must consist of'),
    ("alt=", '--runtime-classes: runtime class "alt": handler: Invalid value: "": a '
             "lowercase RFC 1123 label must consist of"),
])
def test_a_bad_table_is_refused(value: str, message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_flags([*BASE, "--runtime-classes", value])
    assert str(caught.value).startswith(message)


def test_joined_to_a_cluster_the_api_s_classes_are_the_only_ones(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_flags(["--kubeconfig", str(tmp_path / "kubeconfig"),
                     "--runtime-classes", "alt=runc-alt"])
    assert str(caught.value) == (
        "--runtime-classes: with --kubeconfig the API server's RuntimeClass objects name the "
        "runtime handlers; a table of the node's own is for a standalone node")
