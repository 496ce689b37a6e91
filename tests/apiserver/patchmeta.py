"""Upstream's strategic-merge-patch metadata (``patchStrategy``/``patchMergeKey`` struct tags).

kube-apiserver reads these tags from the Go types of k8s.io/api; the emulator has no Go types,
so the tags of the fields a kubelet (and kubectl apply) touch are written down here. Fields not
listed have no strategy: their lists are replaced whole. tests/unit/apiserver checks the
patches built on these tables against ``kubectl patch --local --type strategic``.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Field:
    """One struct field's tags, and the schema of its value (or of its list's elements)."""

    strategy: str = ""  # "", "merge", "replace", "merge,retainKeys", "retainKeys"
    key: str = ""  # patchMergeKey, for lists of maps
    schema: Schema | None = None

    @property
    def merges(self) -> bool:
        return "merge" in self.strategy.split(",")


@dataclass(frozen=True)
class Schema:
    """The tagged fields of one struct; every other field is untagged."""

    fields: dict[str, Field] = field(default_factory=dict)

    def lookup(self, name: str) -> Field:
        return self.fields.get(name, _PLAIN)


_PLAIN = Field()
EMPTY = Schema()


def _merge(key: str = "", schema: Schema | None = None, retain: bool = False) -> Field:
    return Field("merge,retainKeys" if retain else "merge", key, schema)


OBJECT_META = Schema({
    "finalizers": _merge(),
    "ownerReferences": _merge("uid"),
})

CONTAINER = Schema({
    "ports": _merge("containerPort"),
    "env": _merge("name"),
    "volumeMounts": _merge("mountPath"),
    "volumeDevices": _merge("devicePath"),
})

POD_SPEC = Schema({
    "volumes": _merge("name", retain=True),
    "initContainers": _merge("name", CONTAINER),
    "containers": _merge("name", CONTAINER),
    "ephemeralContainers": _merge("name", CONTAINER),
    "imagePullSecrets": _merge("name"),
    "hostAliases": _merge("ip"),
    "topologySpreadConstraints": _merge("topologyKey"),
    "schedulingGates": _merge("name"),
    "resourceClaims": _merge("name", retain=True),
})

# containerStatuses, initContainerStatuses and ephemeralContainerStatuses carry no tags
# upstream: a status patch replaces those lists whole (the kubelet always sends all of them).
POD_STATUS = Schema({
    "conditions": _merge("type"),
    "podIPs": _merge("ip"),
    "hostIPs": _merge("ip"),
    "resourceClaimStatuses": _merge("name", retain=True),
})

POD = Schema({
    "metadata": Field(schema=OBJECT_META),
    "spec": Field(schema=POD_SPEC),
    "status": Field(schema=POD_STATUS),
})

NODE = Schema({
    "metadata": Field(schema=OBJECT_META),
    "spec": Field(schema=Schema({"podCIDRs": _merge()})),
    # images and volumesAttached have no tags: replaced whole.
    "status": Field(schema=Schema({
        "conditions": _merge("type"),
        "addresses": _merge("type"),
    })),
})

SERVICE = Schema({
    "metadata": Field(schema=OBJECT_META),
    "spec": Field(schema=Schema({"ports": _merge("port")})),
    "status": Field(schema=Schema({"conditions": _merge("type")})),
})

GENERIC = Schema({"metadata": Field(schema=OBJECT_META)})

BY_KIND: dict[str, Schema] = {"Pod": POD, "Node": NODE, "Service": SERVICE}


def for_kind(kind: str) -> Schema:
    """The patch schema of a kind; kinds without tagged lists share the metadata one."""
    return BY_KIND.get(kind, GENERIC)
