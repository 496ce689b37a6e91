"""What every verb of the emulated API server does to an object as a whole.

Where the store keeps a resource's objects (resource_key, and back), kind and apiVersion
stamped on what goes out and checked on what comes in, a write's body decoded as upstream
converts it into its Go types, timestamps as RFC 3339 seconds, and the alphabet of
generated names.
"""

from __future__ import annotations

import base64
from datetime import UTC, datetime
from typing import Any

from tests.apiserver import errors
from tests.apiserver.patch import typed_roundtrip
from tests.apiserver.resources import RESOURCES, ResourceType

GENERATE_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"


def rfc3339(at: float) -> str:
    return datetime.fromtimestamp(at, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def resource_key(rt: ResourceType) -> str:
    return f"{rt.plural}.{rt.group}" if rt.group else rt.plural


def by_resource_key(key: str) -> ResourceType:
    for rt in RESOURCES:
        if resource_key(rt) == key:
            return rt
    raise KeyError(key)


def with_type(rt: ResourceType, obj: dict[str, Any]) -> dict[str, Any]:
    obj["kind"] = rt.kind
    obj["apiVersion"] = rt.api_version
    return obj


def check_type(rt: ResourceType, body: dict[str, Any]) -> None:
    kind = body.get("kind")
    api_version = body.get("apiVersion")
    if (kind and kind != rt.kind) or (api_version and api_version != rt.api_version):
        raise errors.bad_request(
            f"the API version in the data ({api_version}) does not match the expected API "
            f"version ({rt.api_version})" if kind == rt.kind else
            f"{kind} in version \"{api_version}\" cannot be handled as a {rt.kind}")


def decoded(rt: ResourceType, obj: Any) -> Any:
    """What a write's body becomes once decoded into the API's Go types and converted.

    Beyond typed_roundtrip: a Secret's write-only ``stringData`` is merged into ``data``
    (base64), its keys winning over the same keys of ``data``, and never stored: upstream's
    v1 -> internal conversion of Secret does exactly this.
    """
    obj = typed_roundtrip(obj)
    if rt.kind == "Secret" and isinstance(obj, dict) and "stringData" in obj:
        data = dict(obj.get("data") or {})
        for key, text in (obj.pop("stringData") or {}).items():
            data[key] = base64.b64encode(str(text).encode()).decode("ascii")
        obj["data"] = data
    return obj
