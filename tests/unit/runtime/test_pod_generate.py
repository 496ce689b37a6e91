"""The generated model matches the stored upstream definitions (what --check checks)."""

from __future__ import annotations

import json
from pathlib import Path

import msgspec
import pytest

from runtime.pod import generate, model


def test_generated_model_is_current() -> None:
    assert generate.is_current(), "run `python -m runtime.pod.generate`"


def test_check_command_passes() -> None:
    assert generate.main(["--check"]) == 0


def test_every_stored_definition_is_a_model_class_with_every_field() -> None:
    stored = json.loads(generate.DEFINITIONS.read_text())
    assert stored["release"] == model.KUBERNETES_RELEASE
    for ref, schema in stored["definitions"].items():
        if ref in generate.ALIASES:
            continue
        cls = getattr(model, generate.short(ref))
        names = {f.encode_name for f in msgspec.structs.fields(cls)}
        assert names == set(schema.get("properties", {})), ref


@pytest.mark.parametrize(
    ("name", "attr"),
    [("hostIPC", "host_ipc"), ("podIPs", "pod_ips"), ("httpGet", "http_get"),
     ("targetWWNs", "target_wwns"), ("scaleIO", "scale_io"), ("diskURI", "disk_uri"),
     ("setHostnameAsFQDN", "set_hostname_as_fqdn"), ("readOnly", "read_only")],
)
def test_snake_names(name: str, attr: str) -> None:
    assert generate.snake(name) == attr


def test_check_fails_when_stale(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    stale = tmp_path / "generated.py"
    stale.write_text(generate.GENERATED.read_text() + "# edited\n")
    monkeypatch.setattr(generate, "GENERATED", stale)
    assert generate.main(["--check"]) == 1


def test_the_model_knows_what_real_pods_use() -> None:
    pod = msgspec.convert(
        {"spec": {"containers": [{"name": "c", "envFrom": [{"configMapRef": {"name": "x"}}],
                                  "resizePolicy": [{"resourceName": "cpu",
                                                    "restartPolicy": "NotRequired"}]}],
                  "hostUsers": False, "shareProcessNamespace": True,
                  "hostAliases": [{"ip": "10.0.0.1", "hostnames": ["a"]}],
                  "resources": {"limits": {"cpu": "1"}},
                  "volumes": [{"name": "s", "secret": {"secretName": "s"}}]}},
        model.Pod,
    )
    assert pod.spec.host_users is False
    assert pod.spec.volumes[0].secret is not None
    assert model.volume_source(pod.spec.volumes[0]) == "secret"
