"""Generate the v1 Pod model (runtime/pod/generated.py) from upstream's API definitions.

Run from the repository root::

    python -m runtime.pod.generate            # rewrite runtime/pod/generated.py
    python -m runtime.pod.generate --check    # exit 1 if generated.py is stale
    python -m runtime.pod.generate --trim DEFINITIONS.json --release v1.37.0 --source TEXT
        # rewrite runtime/pod/openapi/core-v1-pod.json from a full definitions file
        # (kubernetes-validate's _definitions.json, or upstream's OpenAPI v3 components)

The stored definitions (runtime/pod/openapi/core-v1-pod.json) hold only what is reachable
from io.k8s.api.core.v1.Pod, trimmed to what this generator reads: each object's
required fields and, per field, its JSON type, format, ``$ref``, ``items`` and
``additionalProperties``. The OpenAPI schema does not say which Go fields are pointers,
which carry a static default (upstream's SetDefaults_*) or in which order the hand-written
model encoded its fields, so three small tables below add that:

* ``STATIC_DEFAULTS``: the defaults upstream sets unconditionally; those fields keep a
  plain (non-Optional) type with the default value, so ``probe.timeout_seconds`` is an int.
* ``VALUE_FIELDS``: integer and boolean fields that are Go values (not pointers): zero
  means unset, so they are plain ``int = 0`` / ``bool = False``. Other integers and
  booleans are pointers upstream (``runAsUser: 0`` differs from no runAsUser) and decode
  as ``X | None = None``. Strings are the reverse: Go value strings by default (``""``
  means unset), with the few pointer strings listed in ``POINTER_STRINGS``.
* ``FIELD_ORDER``: the field order of the hand-written model this one replaced. msgspec
  encodes fields in declaration order, and the container hash and the static-pod UID
  hash that encoding, so those classes keep their order (new fields follow,
  alphabetically); other classes list fields alphabetically, as the definitions do.
"""

from __future__ import annotations

import argparse
import json
import keyword
import re
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[2]
DEFINITIONS = REPO_ROOT / "runtime/pod/openapi/core-v1-pod.json"
GENERATED = REPO_ROOT / "runtime/pod/generated.py"
ROOT = "io.k8s.api.core.v1.Pod"

# Definitions that become type aliases rather than classes.
ALIASES = {
    "io.k8s.apimachinery.pkg.api.resource.Quantity": ("Quantity", "str | int | float"),
    "io.k8s.apimachinery.pkg.util.intstr.IntOrString": ("IntOrString", "int | str"),
    "io.k8s.apimachinery.pkg.apis.meta.v1.Time": ("Time", "str"),
    "io.k8s.apimachinery.pkg.apis.meta.v1.MicroTime": ("MicroTime", "str"),
    "io.k8s.apimachinery.pkg.apis.meta.v1.FieldsV1": ("FieldsV1", "Mapping[str, Any]"),
}

# Upstream's unconditional API defaults (pkg/apis/core/v1/defaults.go and the
# +default markers of staging/src/k8s.io/api/core/v1/types.go), as Python literals.
_CONTAINER_DEFAULTS = {
    "terminationMessagePath": '"/dev/termination-log"',
    "terminationMessagePolicy": '"File"',
}
STATIC_DEFAULTS: Mapping[str, Mapping[str, str]] = {
    "Pod": {"apiVersion": '"v1"', "kind": '"Pod"'},
    "PodSpec": {
        "restartPolicy": '"Always"',
        "dnsPolicy": '"ClusterFirst"',
        # A pointer upstream (nil is "not set"), defaulted to 30 by SetDefaults_PodSpec.
        "terminationGracePeriodSeconds": "30 | None",
    },
    "Container": _CONTAINER_DEFAULTS,
    "EphemeralContainer": _CONTAINER_DEFAULTS,
    "ContainerPort": {"protocol": '"TCP"'},
    "Probe": {
        "timeoutSeconds": "1",
        "periodSeconds": "10",
        "successThreshold": "1",
        "failureThreshold": "3",
    },
    "HTTPGetAction": {"scheme": '"HTTP"'},
    "ObjectFieldSelector": {"apiVersion": '"v1"'},
    "ResourceFieldSelector": {"divisor": '"1"'},
}

_CONTAINER_VALUES = ("stdin", "stdinOnce", "tty")
VALUE_FIELDS: Mapping[str, tuple[str, ...]] = {
    "ObjectMeta": ("generation",),
    "ContainerPort": ("hostPort",),
    "Probe": ("initialDelaySeconds",),
    "VolumeMount": ("readOnly",),
    "Container": _CONTAINER_VALUES,
    "EphemeralContainer": _CONTAINER_VALUES,
    "PodSpec": ("hostNetwork", "hostPID", "hostIPC"),
}

POINTER_STRINGS: Mapping[str, tuple[str, ...]] = {
    "ObjectMeta": ("creationTimestamp", "deletionTimestamp"),
    "GRPCAction": ("service",),
    "Container": ("restartPolicy",),
    "EphemeralContainer": ("restartPolicy",),
    "PodDNSConfigOption": ("value",),
    "PodSpec": ("runtimeClassName", "preemptionPolicy", "hostnameOverride"),
    "SeccompProfile": ("localhostProfile",),
    "AppArmorProfile": ("localhostProfile",),
    "VolumeMount": ("recursiveReadOnly",),
    "PersistentVolumeClaimSpec": ("storageClassName", "volumeMode", "volumeAttributesClassName"),
    "CSIVolumeSource": ("fsType",),
}

# Required upstream, but checked by validation (so every fault of a pod is reported at
# once, and a Pod without a spec can still be built).
NOT_REQUIRED: Mapping[str, tuple[str, ...]] = {"PodSpec": ("containers",)}

# Objects present even when the manifest leaves them out.
FACTORY_DEFAULTS: Mapping[str, tuple[str, ...]] = {"Pod": ("metadata", "spec")}

# Classes with hand-written behaviour mixed in (runtime/pod/methods.py).
MIXINS: Mapping[str, str] = {"Pod": "PodMethods", "Container": "ContainerMethods"}

FIELD_ORDER: Mapping[str, str] = {
    "ObjectMeta": "name generateName namespace uid labels annotations creationTimestamp "
    "deletionTimestamp deletionGracePeriodSeconds resourceVersion generation",
    "ExecAction": "command",
    "HTTPHeader": "name value",
    "HTTPGetAction": "port path host scheme httpHeaders",
    "TCPSocketAction": "port host",
    "GRPCAction": "port service",
    "SleepAction": "seconds",
    "LifecycleHandler": "exec httpGet tcpSocket sleep",
    "Lifecycle": "postStart preStop",
    "Probe": "exec httpGet tcpSocket grpc initialDelaySeconds timeoutSeconds periodSeconds "
    "successThreshold failureThreshold terminationGracePeriodSeconds",
    "ContainerPort": "containerPort hostPort protocol name hostIP",
    "ObjectFieldSelector": "fieldPath apiVersion",
    "ResourceFieldSelector": "resource containerName divisor",
    "EnvVarSource": "fieldRef resourceFieldRef",
    "EnvVar": "name value valueFrom",
    "ResourceRequirements": "limits requests",
    "VolumeMount": "name mountPath readOnly subPath mountPropagation",
    "Capabilities": "add drop",
    "SecurityContext": "privileged runAsUser runAsGroup runAsNonRoot readOnlyRootFilesystem "
    "allowPrivilegeEscalation capabilities",
    "Container": "name image command args workingDir ports env resources volumeMounts "
    "lifecycle livenessProbe readinessProbe startupProbe terminationMessagePath "
    "terminationMessagePolicy imagePullPolicy securityContext restartPolicy stdin "
    "stdinOnce tty",
    "EmptyDirVolumeSource": "medium sizeLimit",
    "HostPathVolumeSource": "path type",
    "Volume": "name emptyDir hostPath",
    "PodDNSConfigOption": "name value",
    "PodDNSConfig": "nameservers searches options",
    "PodSecurityContext": "runAsUser runAsGroup runAsNonRoot fsGroup sysctls",
    "PodSpec": "containers initContainers restartPolicy terminationGracePeriodSeconds "
    "activeDeadlineSeconds dnsPolicy dnsConfig hostNetwork hostPID hostIPC hostname "
    "subdomain nodeName volumes securityContext nodeSelector tolerations priorityClassName "
    "priority schedulerName serviceAccountName automountServiceAccountToken "
    "enableServiceLinks",
    "Pod": "apiVersion kind metadata spec",
}

_TOKEN = re.compile(r"[A-Z]{2,}s?(?![a-z])|[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z0-9]+|[A-Z]+")


def snake(name: str) -> str:
    """``hostIPC`` -> ``host_ipc``, ``podIPs`` -> ``pod_ips``, ``httpGet`` -> ``http_get``."""
    words = _TOKEN.findall(name)
    result = "_".join(w.lower() for w in words)
    return f"{result}_" if keyword.iskeyword(result) else result


def camel(name: str) -> str:
    """msgspec's ``rename="camel"``, to tell when a field needs an explicit name."""
    first, *rest = name.rstrip("_").split("_") if name.strip("_") else [name]
    return first + "".join(w[:1].upper() + w[1:] for w in rest)


def short(ref: str) -> str:
    return ref.rsplit("/", 1)[-1].rsplit(".", 1)[-1]


# --- trimming -----------------------------------------------------------------------------


def _type_of(schema: Mapping[str, Any]) -> str | None:
    kind = schema.get("type")
    if isinstance(kind, list):
        kinds = [k for k in kind if k != "null"]
        return kinds[0] if kinds else None
    return kind if isinstance(kind, str) else None


def _trim_schema(schema: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if "$ref" in schema:
        out["$ref"] = schema["$ref"].rsplit("/", 1)[-1]
    elif "allOf" in schema and len(schema["allOf"]) == 1:  # OpenAPI v3's ref-with-default
        out["$ref"] = schema["allOf"][0]["$ref"].rsplit("/", 1)[-1]
    if (kind := _type_of(schema)) is not None:
        out["type"] = kind
    if "format" in schema:
        out["format"] = schema["format"]
    if "items" in schema:
        out["items"] = _trim_schema(schema["items"])
    if isinstance(schema.get("additionalProperties"), dict):
        out["additionalProperties"] = _trim_schema(schema["additionalProperties"])
    if "oneOf" in schema:
        out["oneOf"] = [_trim_schema(s) for s in schema["oneOf"]]
    return out


def _refs(value: object) -> list[str]:
    if isinstance(value, dict):
        found = [value["$ref"].rsplit("/", 1)[-1]] if isinstance(value.get("$ref"), str) else []
        return found + [r for v in value.values() for r in _refs(v)]
    if isinstance(value, list):
        return [r for v in value for r in _refs(v)]
    return []


def trim(full: Mapping[str, Any], release: str, source: str) -> dict[str, Any]:
    """The definitions reachable from the Pod, each trimmed to what ``generate`` reads."""
    defs = full.get("$defs") or full.get("definitions") or full["components"]["schemas"]
    reachable: set[str] = set()
    todo = [ROOT]
    while todo:
        name = todo.pop()
        if name not in reachable:
            reachable.add(name)
            todo += _refs(defs[name])
    trimmed: dict[str, Any] = {}
    for name in sorted(reachable):
        schema = defs[name]
        entry = _trim_schema(schema)
        if "properties" in schema:
            entry["properties"] = {
                p: _trim_schema(s) for p, s in sorted(schema["properties"].items())
            }
        if schema.get("required"):
            entry["required"] = sorted(schema["required"])
        trimmed[name] = entry
    return {"release": release, "source": source, "root": ROOT, "definitions": trimmed}


# --- generation ---------------------------------------------------------------------------


def _type_expr(schema: Mapping[str, Any], defs: Mapping[str, Any]) -> str:
    if "$ref" in schema:
        ref = schema["$ref"]
        return ALIASES[ref][0] if ref in ALIASES else short(ref)
    kind = schema.get("type")
    if kind == "array":
        return f"tuple[{_type_expr(schema['items'], defs)}, ...]"
    if kind == "object":
        if "additionalProperties" in schema:
            return f"Mapping[str, {_type_expr(schema['additionalProperties'], defs)}]"
        return "Mapping[str, Any]"
    return {"string": "str", "integer": "int", "number": "float", "boolean": "bool"}.get(
        str(kind), "Any"
    )


def _field(cls: str, prop: str, schema: Mapping[str, Any], required: bool,
           defs: Mapping[str, Any]) -> str:
    attr = snake(prop)
    annotation = _type_expr(schema, defs)
    name = f', name="{prop}"' if camel(attr) != prop else ""
    kind = schema.get("type")
    static = STATIC_DEFAULTS.get(cls, {}).get(prop)
    if static is not None:
        value, _, optional = static.partition(" | ")
        if optional:
            annotation += " | None"
        default: str | None = value
    elif required:
        default = None
    elif prop in FACTORY_DEFAULTS.get(cls, ()):
        default = f"msgspec.field(default_factory={annotation}{name})"
        return f"    {attr}: {annotation} = {default}"
    elif kind == "array":
        default = "()"
    elif kind == "object" and "$ref" not in schema:
        return f"    {attr}: {annotation} = msgspec.field(default_factory=dict{name})"
    elif kind == "string" and "$ref" not in schema and prop not in POINTER_STRINGS.get(cls, ()):
        default = '""'
    elif kind in ("integer", "boolean") and prop in VALUE_FIELDS.get(cls, ()):
        default = "0" if kind == "integer" else "False"
    else:
        annotation += " | None"
        default = "None"
    if default is None:
        return f"    {attr}: {annotation}" + (f" = msgspec.field({name[2:]})" if name else "")
    if name:
        return f"    {attr}: {annotation} = msgspec.field(default={default}{name})"
    return f"    {attr}: {annotation} = {default}"


def _ordered(cls: str, props: Mapping[str, Any]) -> list[str]:
    legacy = FIELD_ORDER.get(cls, "").split()
    missing = [p for p in legacy if p not in props]
    if missing:
        raise SystemExit(f"{cls}: FIELD_ORDER names fields the definitions lack: {missing}")
    return legacy + sorted(p for p in props if p not in legacy)


HEADER = '''\
"""The v1 Pod and everything it embeds, generated from upstream's API definitions.

DO NOT EDIT: generated by ``python -m runtime.pod.generate`` from
runtime/pod/openapi/core-v1-pod.json: Kubernetes {release}, from
{source}.
Import from runtime.pod.model, which adds the hand-written parts.
"""

# ruff: noqa: E501

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import msgspec

from runtime.pod.methods import ContainerMethods, PodMethods

KUBERNETES_RELEASE = "{release}"


class Model(
    msgspec.Struct,
    frozen=True,
    forbid_unknown_fields=True,
    rename="camel",
    kw_only=True,
    omit_defaults=True,
):
    """Base of every manifest value."""


'''


def _dependency_order(defs: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(class, definition) pairs, each after the classes it uses (a default_factory needs
    its class defined first), otherwise alphabetical."""
    done: list[tuple[str, str]] = []
    seen: set[str] = set()

    def visit(ref: str) -> None:
        if ref in seen or ref in ALIASES:
            return
        seen.add(ref)
        for used in sorted(set(_refs(defs[ref]))):
            visit(used)
        done.append((short(ref), ref))

    for ref in sorted(defs, key=short):
        visit(ref)
    return done


def generate(stored: Mapping[str, Any]) -> str:
    """The text of generated.py for the stored (trimmed) definitions."""
    defs: Mapping[str, Any] = stored["definitions"]
    blocks = [HEADER.format(release=stored["release"], source=stored["source"]).rstrip()]
    aliases = [ALIASES[r] for r in sorted(ALIASES, key=lambda r: ALIASES[r][0]) if r in defs]
    blocks.append("\n".join(f"{alias} = {expr}" for alias, expr in aliases))
    classes = _dependency_order(defs)
    names = [c for c, _ in classes]
    if len(set(names)) != len(names):
        raise SystemExit("two definitions share a short name; extend the generator")
    for cls, ref in classes:
        schema = defs[ref]
        props: Mapping[str, Any] = schema.get("properties", {})
        required = set(schema.get("required", ())) - set(NOT_REQUIRED.get(cls, ()))
        bases = f"Model, {MIXINS[cls]}" if cls in MIXINS else "Model"
        lines = [f"class {cls}({bases}, frozen=True, kw_only=True):"]
        lines += [_field(cls, p, props[p], p in required, defs) for p in _ordered(cls, props)]
        if not props:
            lines.append("    pass")
        blocks.append("\n".join(lines))
    exported = ["KUBERNETES_RELEASE", *sorted(["Model", *names, *(a for a, _ in aliases)])]
    blocks.append("__all__ = [\n" + "".join(f'    "{n}",\n' for n in exported) + "]")
    return "\n\n\n".join(blocks) + "\n"


def load() -> dict[str, Any]:
    result: dict[str, Any] = json.loads(DEFINITIONS.read_text())
    return result


def is_current() -> bool:
    return GENERATED.exists() and GENERATED.read_text() == generate(load())


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m runtime.pod.generate", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true",
                        help="do not write; exit 1 if generated.py differs from a fresh one")
    parser.add_argument("--trim", metavar="DEFINITIONS",
                        help="rewrite the stored definitions from this full definitions file")
    parser.add_argument("--release", help="with --trim: the Kubernetes release, e.g. v1.37.0")
    parser.add_argument("--source", help="with --trim: where the definitions came from")
    opts = parser.parse_args(argv)
    if opts.trim:
        if not opts.release or not opts.source:
            parser.error("--trim needs --release and --source")
        full = json.loads(Path(opts.trim).read_text())
        DEFINITIONS.parent.mkdir(parents=True, exist_ok=True)
        DEFINITIONS.write_text(
            json.dumps(trim(full, opts.release, opts.source), indent=1, sort_keys=True) + "\n"
        )
        print(f"wrote {DEFINITIONS.relative_to(REPO_ROOT)}")
    if opts.check:
        if not is_current():
            print("stale runtime/pod/generated.py (run `python -m runtime.pod.generate`)",
                  file=sys.stderr)
            return 1
        print("runtime/pod/generated.py is up to date")
        return 0
    GENERATED.write_text(generate(load()))
    print(f"wrote {GENERATED.relative_to(REPO_ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
