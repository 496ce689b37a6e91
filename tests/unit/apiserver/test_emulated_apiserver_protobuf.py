"""The emulated API server's protobuf reader: bodies it must refuse, and how it says so."""

from __future__ import annotations

import pytest

from tests.apiserver import protobuf
from tests.apiserver.errors import APIError


def _field(number: int, payload: bytes) -> bytes:
    assert len(payload) < 128 and number < 16
    return bytes([number << 3 | 2, len(payload)]) + payload


def _envelope(kind: str, raw: bytes) -> bytes:
    type_meta = _field(1, b"v1") + _field(2, kind.encode())
    return b"k8s\x00" + _field(1, type_meta) + _field(2, raw)


def test_a_config_map_in_the_envelope_decodes_to_its_json_form() -> None:
    meta = _field(1, b"cfg") + _field(11, _field(1, b"app") + _field(2, b"web"))
    raw = _field(1, meta) + _field(2, _field(1, b"k") + _field(2, b"v")) + bytes([4 << 3, 1])
    assert protobuf.decode_object(_envelope("ConfigMap", raw)) == {
        "apiVersion": "v1", "kind": "ConfigMap", "immutable": True,
        "metadata": {"name": "cfg", "labels": {"app": "web"}}, "data": {"k": "v"}}


@pytest.mark.parametrize(("body", "code", "words"), [
    (b"{}", 400, "magic number"),
    (_envelope("Pod", b""), 415, "not Pod"),
    (_envelope("ConfigMap", b"\x0a\x7f"), 400, "runs past the end"),
    (_envelope("ConfigMap", b"\x0b"), 400, "wire type 3"),
])
def test_bodies_the_emulated_apiserver_refuses(body: bytes, code: int, words: str) -> None:
    with pytest.raises(APIError) as caught:
        protobuf.decode_object(body)
    assert caught.value.code == code
    assert words in caught.value.status()["message"]
