"""--feature-gates and featureGates: every upstream gate known, Go booleans, locked gates,
gates asking for what this node lacks refused, this build's own gates' defaults."""

from __future__ import annotations

from pathlib import Path

import pytest
from loguru import logger

from actors.app.config.feature_gates import (
    DEFAULTS,
    EVENTED_PLEG,
    KUBELET_FINE_GRAINED_AUTHZ,
    OWN_DEFAULTS,
    enabled,
    parse_feature_gates,
)
from actors.app.config.flags import parse_flags
from actors.app.config.upstream_gates import UPSTREAM_GATES, GateSpec
from runtime.errors import ConfigError


@pytest.mark.parametrize(("text", "gates"), [
    ("", ()),
    ("EventedPLEG=false", ((EVENTED_PLEG, False),)),
    (" EventedPLEG=T ,", ((EVENTED_PLEG, True),)),
    ("KubeletFineGrainedAuthz=true", ((KUBELET_FINE_GRAINED_AUTHZ, True),)),
])
def test_feature_gates_parse(text: str, gates: tuple[tuple[str, bool], ...]) -> None:
    assert parse_feature_gates(text) == gates


@pytest.mark.parametrize(("text", "words"), [
    ("NoSuchGate=true", "unrecognized feature gate: NoSuchGate"),
    ("EventedPLEG=maybe", 'invalid value of EventedPLEG=maybe, err: strconv.ParseBool: '
                          'parsing "maybe": invalid syntax'),
    ("EventedPLEG", "missing bool value for EventedPLEG"),
    ("KubeletFineGrainedAuthz=false", "cannot set feature gate KubeletFineGrainedAuthz to "
                                      "false, feature is locked to true"),
])
def test_bad_feature_gates_are_refused_as_upstream_words_it(text: str, words: str) -> None:
    with pytest.raises(ConfigError, match=words):
        parse_feature_gates(text)


def test_the_evented_pleg_is_on_unless_turned_off(tmp_path: Path) -> None:
    base = ["--pod-manifest-path", str(tmp_path)]
    assert enabled(parse_flags(base).feature_gates, EVENTED_PLEG)
    off = parse_flags([*base, "--feature-gates", "EventedPLEG=false"]).feature_gates
    assert not enabled(off, EVENTED_PLEG)
    config = tmp_path / "config.yaml"
    config.write_text("apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n"
                      "featureGates:\n  EventedPLEG: false\n")
    from_file = parse_flags([*base, "--config", str(config)]).feature_gates
    assert not enabled(from_file, EVENTED_PLEG)


def test_every_upstream_gate_at_its_default_is_accepted(tmp_path: Path) -> None:
    """A stock configuration naming every gate of upstream's release at its default."""
    config = tmp_path / "config.yaml"
    config.write_text("apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n"
                      "featureGates:\n" + "".join(
                          f"  {name}: {str(spec.default).lower()}\n"
                          for name, spec in UPSTREAM_GATES.items()))
    gates = parse_flags(["--pod-manifest-path", str(tmp_path), "--config",
                         str(config)]).feature_gates
    assert len(gates) == len(UPSTREAM_GATES)
    assert all(on == UPSTREAM_GATES[name].default for name, on in gates)


def test_the_table_is_upstreams_shape() -> None:
    assert len(UPSTREAM_GATES) > 200
    assert UPSTREAM_GATES["SidecarContainers"] == GateSpec(True, "GA", True, True)
    assert UPSTREAM_GATES["MemoryQoS"] == GateSpec(False, "ALPHA", False, True)
    assert not UPSTREAM_GATES["GangScheduling"].kubelet
    assert all(spec.default == DEFAULTS[name] for name, spec in UPSTREAM_GATES.items()
               if name not in OWN_DEFAULTS)


@pytest.mark.parametrize(("text", "words"), [
    ("SidecarContainers=false", "cannot set feature gate SidecarContainers to false, feature "
                                "is locked to true"),
    ("AllowOverwriteTerminationGracePeriodSeconds=true",
     "cannot set feature gate AllowOverwriteTerminationGracePeriodSeconds to true, feature is "
     "locked to false"),
    ("MemoryQoS=true", "feature gate MemoryQoS=true: not implemented by kubelet-actors"),
    ("EnvFiles=false", "feature gate EnvFiles=false: not implemented by kubelet-actors"),
    ("AllAlpha=true", "feature gate AllAlpha=true: not implemented by kubelet-actors"),
    ("AllBeta=true", "feature gate AllBeta=true: not implemented by kubelet-actors"),
])
def test_a_gate_asking_for_what_this_node_lacks_is_refused(text: str, words: str) -> None:
    with pytest.raises(ConfigError, match=words) as caught:
        parse_feature_gates(text)
    assert caught.value.field == "featureGates"


@pytest.mark.parametrize("text", [
    "GangScheduling=true", "WinDSR=true", "APIServerIdentity=false",  # not the kubelet's
    "AllAlpha=false", "AllBeta=false", "RotateKubeletServerCertificate=true",
    "GracefulNodeShutdownBasedOnPodPriority=true", "KubeletPodResourcesGet=true",
    "KubeletCrashLoopBackOffMax=true", "EventedPLEG=false",  # this node's own: either value
])
def test_gates_this_node_honours_are_accepted(text: str) -> None:
    name, _, value = text.partition("=")
    assert parse_feature_gates(text) == ((name, value == "true"),)


def test_a_refused_gate_in_the_file_names_the_file(tmp_path: Path) -> None:
    config = tmp_path / "config.yaml"
    config.write_text("apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n"
                      "featureGates:\n  NodeLogQuery: true\n")
    with pytest.raises(ConfigError) as caught:
        parse_flags(["--pod-manifest-path", str(tmp_path), "--config", str(config)])
    assert str(caught.value) == (f"--config {config}: featureGates: feature gate "
                                 "NodeLogQuery=true: not implemented by kubelet-actors (only "
                                 "upstream's default, NodeLogQuery=false, is)")


def test_setting_a_ga_gate_warns_as_upstream() -> None:
    lines: list[str] = []
    sink = logger.add(lines.append, level="WARNING", format="{message}")
    try:
        parse_feature_gates("TopologyManagerPolicyOptions=true")
    finally:
        logger.remove(sink)
    assert lines == ["Setting GA feature gate TopologyManagerPolicyOptions=true. It will be "
                     "removed in a future release.\n"]
