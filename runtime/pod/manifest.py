"""Manifest bytes to validated pods.

A manifest is YAML or JSON (JSON is YAML): one or more ``---`` documents, each a v1 Pod or
a ``kind: PodList`` with ``items``. Every fault becomes a ManifestError naming the source,
the field path and the cause (``spec.containers[1].image: required``), so the person who
wrote the manifest can fix it without reading kubelet code. A pod that decodes is given
upstream's API defaults (runtime.pod.defaults) and, as upstream does, validated in that
defaulted form (runtime.pod.validation) with all its faults reported at once, worded as
upstream's field errors (``spec.containers[0].ports[1].name: Duplicate value: "http"``).

The static-pod rules (renaming, UIDs, annotations) are in runtime.pod.static.
"""

from __future__ import annotations

import json
import re
from typing import Any

import msgspec

from runtime.errors import ManifestError
from runtime.pod.defaults import api_defaults, apply_defaults
from runtime.pod.model import ConfigMapVolumeSource, Pod, volume_source
from runtime.pod.validation import validate_pod

# yaml-rs is imported here, by whatever imports this module (the program's main thread),
# not on first use: its library keeps state of the thread that loaded it, and a load on
# another thread after that one ended (a file source actor restarted by its supervisor)
# crashes the process (tests/unit/runtime/test_manifest_threads.py).
from runtime.pod.yaml_fast import fast_load

__all__ = ["parse_manifest", "parse_manifest_with_warnings"]

# The volume sources this kubelet can mount; the others decode (they are valid pods) but
# need an API server or a volume plugin, so the pod is warned about here and, as on an
# upstream node where the object or plugin is missing, stays Pending (FailedMount; see
# runtime.kuberuntime.volumes) rather than running without them.
MOUNTABLE_VOLUMES = ("emptyDir", "hostPath", "downwardAPI")

_NOT_OPTIONAL = ConfigMapVolumeSource(optional=False)

# Fields accepted so common manifests decode but without effect on a lone node.
_IGNORED = "accepted but has no effect on this kubelet"


def parse_manifest(data: bytes, source: str) -> tuple[Pod, ...]:
    """The validated, defaulted pods of a manifest; ManifestError if anything is wrong.

    ``source`` (a file path or URL) only names the manifest in errors. The pods are not
    yet static pods: see runtime.pod.static.make_static_pod.
    """
    return parse_manifest_with_warnings(data, source)[0]


def parse_manifest_with_warnings(
    data: bytes, source: str
) -> tuple[tuple[Pod, ...], tuple[str, ...]]:
    """Like parse_manifest, plus warnings for fields accepted but ignored here.

    Each warning is a ready-to-log line: ``<source>: spec.nodeSelector: accepted but has
    no effect on this kubelet (...)``. The first pod at fault fails the whole manifest, so
    a file is either taken whole or not at all.
    """
    documents = _load_documents(_text(data, source), source)
    if not documents:
        raise ManifestError(source, "", "no pod in the file")
    multi = len(documents) > 1
    pods: list[Pod] = []
    warnings: list[str] = []
    for number, document in documents:
        where = _Where(source, number if multi else None)
        for prefix, raw in _pod_objects(document, where):
            pod, pod_warnings = _decode_pod(raw, prefix, where)
            pods.append(pod)
            warnings += pod_warnings
    return tuple(pods), tuple(warnings)


class _Where:
    """Which file and document an error is about; builds ManifestErrors and warnings."""

    def __init__(self, source: str, document: int | None) -> None:
        self.source = source
        self.document = document

    def error(self, problems: list[tuple[str, str]]) -> ManifestError:
        path, cause = problems[0]
        errors = tuple(f"{p}: {c}" if p else c for p, c in problems)
        return ManifestError(self.source, path, cause, errors=errors, document=self.document)

    def warning(self, path: str, why: str) -> str:
        where = self.source if self.document is None else f"{self.source}: document {self.document}"
        return f"{where}: {path}: {why}"


MAX_MANIFEST_BYTES = 10 * 1024 * 1024
"""Larger is not a pod manifest (upstream caps manifest URLs at the same size)."""


def _text(data: bytes, source: str) -> str:
    if len(data) > MAX_MANIFEST_BYTES:
        raise ManifestError(source, "", f"larger than {MAX_MANIFEST_BYTES} bytes: not a manifest")
    # A NUL never occurs in a text manifest, and catching it here gives a clearer message
    # than the YAML reader's "unacceptable character".
    if b"\x00" in data:
        raise ManifestError(source, "", "not a text file (contains NUL bytes)")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        raise ManifestError(
            source, "", f"not a text file (invalid UTF-8 at byte {err.start})"
        ) from err


def _unique_keys(pairs: list[tuple[str, object]]) -> dict[str, object]:
    """A JSON object's members; ValueError on a repeated key (the YAML reader names it)."""
    members = dict(pairs)
    if len(members) != len(pairs):
        raise ValueError("duplicate key")
    return members


def _not_json(name: str) -> object:
    """NaN and Infinity are not JSON (Python's reader takes them): the YAML reader decides."""
    raise ValueError(name)


def _load_documents(text: str, source: str) -> list[tuple[int, object]]:
    """The non-empty YAML documents, numbered from 1 by their place in the file.

    A manifest that is strict JSON (as kubectl writes with -o json) is read by the JSON
    reader, some 20 times faster than the YAML reader; a single YAML mapping with nothing
    YAML 1.1 and 1.2 read differently by the fast YAML 1.2 reader (runtime.pod.yaml_fast);
    anything else (several documents, octal modes, anchors, a repeated key, broken YAML)
    goes to the exact YAML reader, which also gives the errors.
    """
    if text.lstrip()[:1] in ("{", "["):
        try:
            document = json.loads(text, object_pairs_hook=_unique_keys,
                                  parse_constant=_not_json)
        except ValueError:
            pass
        else:
            return [(1, document)]
    if (mapping := fast_load(text)) is not None:
        return [(1, mapping)]
    # The exact reader (PyYAML on libyaml) is imported on the first manifest it must read:
    # a daemon with no static pods (cluster mode) never pays for it.
    from runtime.pod.yaml_exact import exact_load

    documents = exact_load(text, source)
    return [(i, doc) for i, doc in enumerate(documents, start=1) if doc is not None]


def _type_name(value: object) -> str:
    return {
        dict: "object", list: "array", str: "string", bool: "boolean", int: "integer",
        float: "number",
    }.get(type(value), type(value).__name__)  # fmt: skip


def _check_type(obj: dict[Any, Any], path: str, kinds: tuple[str, ...]) -> list[tuple[str, str]]:
    """Faults of a document's apiVersion and kind (both optional: v1 and the first kind)."""
    prefix = f"{path}." if path else ""
    problems: list[tuple[str, str]] = []
    api_version = obj.get("apiVersion", "v1")
    if api_version != "v1":
        problems.append(
            (f"{prefix}apiVersion", f'unsupported apiVersion "{api_version}": expected v1')
        )
    kind = obj.get("kind", kinds[0])
    if kind not in kinds:
        problems.append(
            (f"{prefix}kind", f'unsupported kind "{kind}": expected {" or ".join(kinds)}')
        )
    return problems


def _pod_objects(document: object, where: _Where) -> list[tuple[str, dict[Any, Any]]]:
    """The raw pod objects of one document with their path prefix ("" or ``items[i]``)."""
    if not isinstance(document, dict):
        raise where.error([("", f"expected a Pod or PodList object, got {_type_name(document)}")])
    if problems := _check_type(document, "", ("Pod", "PodList")):
        raise where.error(problems)
    if document.get("kind") != "PodList":
        return [("", document)]
    # A list's metadata is ListMeta (resourceVersion, continue): nothing a kubelet uses.
    unknown = [k for k in document if k not in ("apiVersion", "kind", "metadata", "items")]
    if unknown:
        raise where.error([(str(k), "unknown field") for k in unknown])
    items = document.get("items")
    if items is None:  # `items:` with nothing after it, as an empty list serialises
        items = []
    if not isinstance(items, list):
        raise where.error([("items", f"expected array, got {_type_name(items)}")])
    result: list[tuple[str, dict[Any, Any]]] = []
    for i, item in enumerate(items):
        if not isinstance(item, dict):
            raise where.error([(f"items[{i}]", f"expected a Pod object, got {_type_name(item)}")])
        if problems := _check_type(item, f"items[{i}]", ("Pod",)):
            raise where.error(problems)
        result.append((f"items[{i}]", item))
    return result


def _decode_pod(raw: dict[Any, Any], prefix: str, where: _Where) -> tuple[Pod, list[str]]:
    def at(path: str) -> str:
        return f"{prefix}.{path}" if prefix and path else prefix or path

    warnings: list[str] = []
    # kubectl writes `status: {}` into generated manifests; status is the kubelet's to
    # report, never an input, so it is dropped rather than refused.
    if "status" in raw:
        if raw["status"]:
            warnings.append(where.warning(at("status"), "ignored (status is reported, not set)"))
        raw = {k: v for k, v in raw.items() if k != "status"}
    try:
        pod = msgspec.convert(raw, Pod)
    except msgspec.ValidationError as err:
        path, cause = _from_msgspec(str(err))
        raise where.error([(at(path), cause)]) from err
    # As upstream, what is validated is the pod with every API default applied.
    kept = apply_defaults(pod)
    if problems := validate_pod(api_defaults(kept, defaulted=True)):
        raise where.error([(at(path), cause) for path, cause in problems])
    spec = pod.spec
    ignored = (
        ("spec.schedulerName", bool(spec.scheduler_name), "no scheduler"),
        ("spec.priorityClassName", bool(spec.priority_class_name), "no API server"),
        ("spec.serviceAccountName", bool(spec.service_account_name), "no API server"),
        (
            "spec.automountServiceAccountToken",
            spec.automount_service_account_token is not None,
            "no API server",
        ),
        ("spec.enableServiceLinks", spec.enable_service_links is not None, "no services"),
    )
    warnings += [where.warning(at(path), f"{_IGNORED} ({why})") for path, on, why in ignored if on]
    for i, volume in enumerate(spec.volumes):
        source = volume_source(volume)
        optional = (volume.config_map or volume.secret or _NOT_OPTIONAL).optional
        if volume.projected is not None:
            # Mountable when every source is the pod's own (downwardAPI) or optional.
            optional = all(
                p.downward_api is not None
                or (p.config_map is not None and bool(p.config_map.optional))
                or (p.secret is not None and bool(p.secret.optional))
                for p in volume.projected.sources)
        if source is not None and source not in MOUNTABLE_VOLUMES and not optional:
            warnings.append(where.warning(
                at(f"spec.volumes[{i}].{source}"),
                f"this kubelet has no API server or volume plugin to get {source} volumes "
                f"from (only {', '.join(MOUNTABLE_VOLUMES)}): the pod will stay Pending",
            ))
    return kept, warnings


# msgspec: "<what>[ - at `<path>`]" or "<what> - at `key` in `<path>`" for a mapping key.
_MSGSPEC = re.compile(r"(?P<what>.*?)(?: - at `(?P<at>[^`]*)`(?: in `(?P<in>[^`]*)`)?)?", re.S)
_FIELD = re.compile(r"Object (?P<kind>missing required|contains unknown) field `(?P<name>[^`]*)`")
_EXPECTED = re.compile(r"Expected `(?P<want>[^`]*)`(?:, got `(?P<got>[^`]*)`)?")


def _from_msgspec(message: str) -> tuple[str, str]:
    """msgspec's ``Object missing required field `x` - at `$.a[0]` `` as ``("a[0].x", ...)``."""
    match = _MSGSPEC.fullmatch(message)
    assert match is not None  # the pattern matches any string
    what, at, inside = match["what"], match["at"] or "$", match["in"]
    is_key = inside is not None and at == "key"
    path = (inside if is_key else at).removeprefix("$").removeprefix(".")
    if field := _FIELD.fullmatch(what):
        path = f"{path}.{field['name']}" if path else field["name"]
        if field["kind"] == "missing required":
            return path, "required"
        return path, "unknown field"
    if expected := _EXPECTED.fullmatch(what):
        cause = f"expected {expected['want']}"
        if is_key:
            cause = f"keys must be {expected['want']}"
        if expected["got"]:
            cause += f", got {expected['got']}"
        return path, cause
    return path, what.replace("`", "")[:1].lower() + what.replace("`", "")[1:]
