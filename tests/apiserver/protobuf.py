"""Reading the protobuf bodies that kubectl's typed clients send, for the kinds they create.

``kubectl create configmap|secret|namespace|serviceaccount`` go through client-go's typed
clientset, which writes ``application/vnd.kubernetes.protobuf`` and never falls back to JSON
(kubectl 1.32 was seen answering a 415 with the error, not a retry). A real API server decodes
them; so does this module, for the kinds in ``_KINDS``, into the JSON form the registry keeps.

The format (k8s.io/apimachinery runtime/serializer/protobuf): the magic ``k8s\\0``, then a
``runtime.Unknown`` (typeMeta = 1 {apiVersion = 1, kind = 2}, raw = 2, contentEncoding = 3,
contentType = 4) whose ``raw`` is the object in protobuf. The field numbers below are those of
k8s.io/api core/v1 and apimachinery meta/v1 ``generated.proto``. A kind outside the table is
refused with 415, as a server without that codec would refuse it.
"""

from __future__ import annotations

import base64
import datetime
from collections.abc import Iterator
from typing import Any, TypeAlias

from tests.apiserver import errors

MEDIA_TYPE = "application/vnd.kubernetes.protobuf"
_MAGIC = b"k8s\x00"

# A field's type: a scalar name, ("message", schema), ("map", key, value) or ("list", type).
FieldType: TypeAlias = Any
Schema: TypeAlias = dict[int, tuple[str, FieldType]]

_TIME: Schema = {1: ("seconds", "int"), 2: ("nanos", "int")}
_TYPE_META: Schema = {1: ("apiVersion", "string"), 2: ("kind", "string")}
_UNKNOWN: Schema = {1: ("typeMeta", ("message", _TYPE_META)), 2: ("raw", "raw"),
                    3: ("contentEncoding", "string"), 4: ("contentType", "string")}
_OWNER_REFERENCE: Schema = {
    1: ("kind", "string"), 3: ("name", "string"), 4: ("uid", "string"),
    5: ("apiVersion", "string"), 6: ("controller", "bool"), 7: ("blockOwnerDeletion", "bool")}
_OBJECT_META: Schema = {
    1: ("name", "string"), 2: ("generateName", "string"), 3: ("namespace", "string"),
    4: ("selfLink", "string"), 5: ("uid", "string"), 6: ("resourceVersion", "string"),
    7: ("generation", "int"), 8: ("creationTimestamp", "time"),
    9: ("deletionTimestamp", "time"), 10: ("deletionGracePeriodSeconds", "int"),
    11: ("labels", ("map", "string", "string")),
    12: ("annotations", ("map", "string", "string")),
    13: ("ownerReferences", ("list", ("message", _OWNER_REFERENCE))),
    14: ("finalizers", ("list", "string")),
    # 17 managedFields: server-side apply bookkeeping the emulator does not keep.
}
_METADATA = (1, ("metadata", ("message", _OBJECT_META)))
_OBJECT_REFERENCE: Schema = {
    1: ("kind", "string"), 2: ("namespace", "string"), 3: ("name", "string"),
    4: ("uid", "string"), 5: ("apiVersion", "string"), 6: ("resourceVersion", "string"),
    7: ("fieldPath", "string")}
_LOCAL_OBJECT_REFERENCE: Schema = {1: ("name", "string")}

_CSR_CONDITION: Schema = {
    1: ("type", "string"), 6: ("status", "string"), 2: ("reason", "string"),
    3: ("message", "string"), 4: ("lastUpdateTime", "time"), 5: ("lastTransitionTime", "time")}
# certificates.k8s.io/v1 (kubectl certificate approve|deny PUT the whole object to /approval).
# spec.extra (6, a map of messages) is left out: the server sets it from the requester.
_CSR_SPEC: Schema = {
    1: ("request", "bytes"), 7: ("signerName", "string"), 8: ("expirationSeconds", "int"),
    5: ("usages", ("list", "string")), 2: ("username", "string"), 3: ("uid", "string"),
    4: ("groups", ("list", "string"))}
_CSR_STATUS: Schema = {1: ("conditions", ("list", ("message", _CSR_CONDITION))),
                       2: ("certificate", "bytes")}

_KINDS: dict[str, Schema] = {
    "CertificateSigningRequest": dict([_METADATA, (2, ("spec", ("message", _CSR_SPEC))),
                                       (3, ("status", ("message", _CSR_STATUS)))]),
    "ConfigMap": dict([_METADATA, (2, ("data", ("map", "string", "string"))),
                       (3, ("binaryData", ("map", "string", "bytes"))),
                       (4, ("immutable", "bool"))]),
    "Secret": dict([_METADATA, (2, ("data", ("map", "string", "bytes"))),
                    (3, ("type", "string")),
                    (4, ("stringData", ("map", "string", "string"))),
                    (5, ("immutable", "bool"))]),
    "Namespace": dict([_METADATA, (2, ("spec", ("message", {
        1: ("finalizers", ("list", "string"))}))),
        (3, ("status", ("message", {1: ("phase", "string")})))]),
    "ServiceAccount": dict([_METADATA,
                            (2, ("secrets", ("list", ("message", _OBJECT_REFERENCE)))),
                            (3, ("imagePullSecrets",
                                 ("list", ("message", _LOCAL_OBJECT_REFERENCE)))),
                            (4, ("automountServiceAccountToken", "bool"))]),
}


class WireError(ValueError):
    """The bytes are not protobuf of the shape the schema says."""


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        if pos >= len(data):
            raise WireError("truncated varint")
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, pos
        shift += 7
        if shift > 63:
            raise WireError("varint longer than 64 bits")


def _fields(data: bytes) -> Iterator[tuple[int, int, Any]]:
    """(field number, wire type, value) for each field; value is int or bytes."""
    pos = 0
    while pos < len(data):
        key, pos = _varint(data, pos)
        number, wire = key >> 3, key & 7
        value: int | bytes
        if wire == 0:
            value, pos = _varint(data, pos)
        elif wire == 2:
            length, pos = _varint(data, pos)
            if pos + length > len(data):
                raise WireError(f"field {number} runs past the end of the message")
            value, pos = data[pos:pos + length], pos + length
        elif wire == 1:
            value, pos = int.from_bytes(data[pos:pos + 8], "little"), pos + 8
        elif wire == 5:
            value, pos = int.from_bytes(data[pos:pos + 4], "little"), pos + 4
        else:
            raise WireError(f"field {number} has wire type {wire}, which proto2 does not use")
        yield number, wire, value


def _scalar(kind: str, value: Any) -> Any:
    if kind == "string":
        return bytes(value).decode("utf-8")
    if kind == "bytes":  # JSON carries []byte as base64, as Go's encoding/json does
        return base64.b64encode(value).decode("ascii")
    if kind == "raw":
        return bytes(value)
    if kind == "bool":
        return bool(value)
    if kind == "int":  # int64 two's complement in a varint
        return value - (1 << 64) if value >= 1 << 63 else value
    if kind == "time":
        seconds = decode_message(value, _TIME).get("seconds", 0)
        if not seconds:  # the zero time.Time: JSON writes null, dropped above
            return None
        moment = datetime.datetime.fromtimestamp(seconds, datetime.UTC)
        return moment.strftime("%Y-%m-%dT%H:%M:%SZ")
    raise WireError(f"no decoder for {kind}")


def _value(kind: FieldType, value: Any) -> Any:
    if isinstance(kind, tuple) and kind[0] == "message":
        return decode_message(value, kind[1])
    return _scalar(kind, value)


def decode_message(data: bytes, schema: Schema) -> dict[str, Any]:
    """One message as a JSON object; fields the schema does not name are dropped."""
    out: dict[str, Any] = {}
    for number, _wire, value in _fields(data):
        if number not in schema:
            continue
        name, kind = schema[number]
        if isinstance(kind, tuple) and kind[0] == "map":
            entry = {n: v for n, _w, v in _fields(value)}
            key = _scalar(kind[1], entry.get(1, b""))
            out.setdefault(name, {})[key] = _scalar(kind[2], entry.get(2, b""))
        elif isinstance(kind, tuple) and kind[0] == "list":
            out.setdefault(name, []).append(_value(kind[1], value))
        else:
            decoded = _value(kind, value)
            # Go's marshaller writes every non-pointer field, set or not; JSON's omitempty
            # (what the registry's objects follow) leaves the empty ones out.
            if decoded not in ("", 0, None) or isinstance(decoded, bool):
                out[name] = decoded
    return out


def decode_object(body: bytes) -> dict[str, Any]:
    """A request body in Kubernetes' protobuf envelope, as the JSON object it stands for."""
    if not body.startswith(_MAGIC):
        raise errors.bad_request("the body of the request could not be decoded: the "
                                 "protobuf envelope's magic number k8s\\0 is missing")
    try:
        unknown = decode_message(body[len(_MAGIC):], _UNKNOWN)
        type_meta = unknown.get("typeMeta", {})
        kind = type_meta.get("kind", "")
        if kind not in _KINDS:
            raise errors.APIError(
                415, "UnsupportedMediaType",
                f"the body of the request was in an unknown format - accepted media types "
                f"include: application/json, application/yaml (this server reads "
                f"{MEDIA_TYPE} only for {', '.join(sorted(_KINDS))}, not {kind or 'no kind'})")
        obj = decode_message(unknown.get("raw", b""), _KINDS[kind])
    except (WireError, UnicodeDecodeError) as err:
        raise errors.bad_request(f"the body of the request could not be decoded as "
                                 f"protobuf: {err}") from None
    return {"apiVersion": type_meta.get("apiVersion", "v1"), "kind": kind, **obj}
