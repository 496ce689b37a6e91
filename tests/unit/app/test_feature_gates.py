"""--feature-gates and featureGates: known gates only, Go booleans, this build's defaults."""

from __future__ import annotations

from pathlib import Path

import pytest

from actors.app.config.feature_gates import (
    EVENTED_PLEG,
    KUBELET_FINE_GRAINED_AUTHZ,
    enabled,
    parse_feature_gates,
)
from actors.app.config.flags import parse_flags
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
