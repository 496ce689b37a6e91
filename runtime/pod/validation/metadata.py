"""The pod's metadata: upstream's ValidateObjectMeta (apimachinery's, with core's finalizer
rule) and the label rules other callers share (``--node-labels``).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from runtime.pod.model import ManagedFieldsEntry, ObjectMeta, OwnerReference
from runtime.pod.validation.fields import (
    _NON_NEGATIVE,
    Problem,
    _qualified_name,
    invalid,
    label_faults,
    label_value,
    name_is_dns_subdomain,
    required,
    too_long,
)

TOTAL_ANNOTATION_SIZE_LIMIT = 256 * 1024
"""upstream TotalAnnotationSizeLimitB: the keys and values of all annotations, in bytes."""

ORPHAN = "orphan"
FOREGROUND_DELETION = "foregroundDeletion"
STANDARD_FINALIZERS = frozenset({"kubernetes", ORPHAN, FOREGROUND_DELETION})
"""upstream helper.IsStandardFinalizerName: the only finalizers without a domain prefix."""

BANNED_OWNERS = frozenset({("", "v1", "Event")})
"""upstream BannedOwners (group, version, kind)."""


def object_meta(meta: ObjectMeta) -> Iterator[Problem]:
    """upstream ValidateObjectMeta for a namespaced object named by NameIsDNSSubdomain, with
    core's validateKubeFinalizerName. A namespace left empty is the kubelet's to default
    (upstream's file source sets it before validating), so it is not required here."""
    for why in name_is_dns_subdomain(meta.generate_name, prefix=True) if (
            meta.generate_name) else ():
        yield invalid("metadata.generateName", meta.generate_name, why)
    if not meta.name:
        yield required("metadata.name", "name or generateName is required")
    for why in name_is_dns_subdomain(meta.name) if meta.name else ():
        yield invalid("metadata.name", meta.name, why)
    for why in label_faults(meta.namespace) if meta.namespace else ():
        yield invalid("metadata.namespace", meta.namespace, why)
    if meta.generation < 0:
        yield invalid("metadata.generation", meta.generation, _NON_NEGATIVE)
    yield from labels(meta.labels, "metadata.labels")
    yield from annotation_map(meta.annotations, "metadata.annotations")
    yield from owner_references(meta.owner_references, "metadata.ownerReferences")
    yield from finalizers(meta.finalizers, "metadata.finalizers")
    yield from managed_fields(meta.managed_fields, "metadata.managedFields")


def labels(values: Mapping[str, str], path: str) -> Iterator[Problem]:
    """upstream ValidateLabels: keys are qualified names, values label values; both are
    reported at the map itself, not at the key."""
    for key, value in values.items():
        for why in _qualified_name(key):
            yield invalid(path, key, why)
        for why in label_value(value):
            yield invalid(path, value, why)


def validate_labels(values: Mapping[str, str], path: str) -> list[Problem]:
    """Upstream's label rules, for labels that do not come in a pod (``--node-labels``)."""
    return list(labels(values, path))


def annotation_map(values: Mapping[str, str], path: str) -> Iterator[Problem]:
    """upstream ValidateAnnotations: a key is a qualified name whatever its case, and all of
    them together fit in 256 KiB."""
    for key in values:
        for why in _qualified_name(key.lower()):
            yield invalid(path, key, why)
    size = sum(len(k.encode()) + len(v.encode()) for k, v in values.items())
    if size > TOTAL_ANNOTATION_SIZE_LIMIT:
        yield too_long(path, TOTAL_ANNOTATION_SIZE_LIMIT)


def _group_version(api_version: str) -> tuple[str, str] | None:
    """upstream schema.ParseGroupVersion; None where it fails (more than one '/')."""
    if api_version in ("", "/"):
        return "", ""
    if api_version.count("/") > 1:
        return None
    group, _, version = api_version.rpartition("/")
    return group, version


def owner_references(refs: tuple[OwnerReference, ...], path: str) -> Iterator[Problem]:
    """upstream ValidateOwnerReferences."""
    first_controller = ""
    for ref in refs:
        group, version = _group_version(ref.api_version) or ("", "")
        if not version:
            yield invalid(f"{path}.apiVersion", ref.api_version, "version must not be empty")
        if not ref.kind:
            yield invalid(f"{path}.kind", ref.kind, "must not be empty")
        if not ref.name:
            yield invalid(f"{path}.name", ref.name, "must not be empty")
        if not ref.uid:
            yield invalid(f"{path}.uid", ref.uid, "must not be empty")
        if (group, version, ref.kind) in BANNED_OWNERS:
            # upstream prints the reference as a Go struct dump (pointers and all) as the
            # value; it has no stable text, so the value shown is empty
            yield invalid(path, "", f"{group}/{version}, Kind={ref.kind} is disallowed from "
                          "being an owner")
        if ref.controller:
            current = f"{ref.kind}/{ref.name}"
            if first_controller:
                yield invalid(path, "", "Only one reference can have Controller set to true. "
                              f'Found "true" in references for {first_controller} and '
                              f"{current}")
            else:
                first_controller = current


FIELD_MANAGER_MAX_LENGTH = 128
"""upstream FieldManagerMaxLength, in bytes."""
MAX_SUBRESOURCE_NAME_LENGTH = 256
"""upstream MaxSubresourceNameLength, in bytes."""


def managed_fields(entries: tuple[ManagedFieldsEntry, ...], path: str) -> Iterator[Problem]:
    """upstream ValidateManagedFields (apimachinery's, which ValidateObjectMeta calls): the
    operation and fields type named, the manager's length and characters, the
    subresource's length."""
    for i, entry in enumerate(entries):
        p = f"{path}[{i}]"
        if entry.operation not in ("Apply", "Update"):
            yield invalid(f"{p}.operation", entry.operation, "must be `Apply` or `Update`")
        if entry.fields_type and entry.fields_type != "FieldsV1":
            yield invalid(f"{p}.fieldsType", entry.fields_type, "must be `FieldsV1`")
        yield from _field_manager(entry.manager, f"{p}.manager")
        if len(entry.subresource.encode()) > MAX_SUBRESOURCE_NAME_LENGTH:
            yield too_long(f"{p}.subresource", MAX_SUBRESOURCE_NAME_LENGTH)


def _field_manager(manager: str, path: str) -> Iterator[Problem]:
    """upstream ValidateFieldManager: each unprintable character (Go's unicode.IsPrint, as
    Python's isprintable: letters, marks, numbers, punctuation, symbols and the ASCII
    space), at its byte offset, as Go's %#U prints it."""
    if len(manager.encode()) > FIELD_MANAGER_MAX_LENGTH:
        yield too_long(path, FIELD_MANAGER_MAX_LENGTH)
    offset = 0
    for char in manager:
        if not char.isprintable():
            yield invalid(path, manager,
                          f"invalid character U+{ord(char):04X} (at position {offset})")
        offset += len(char.encode())


def finalizers(names: tuple[str, ...], path: str) -> Iterator[Problem]:
    """upstream ValidateFinalizers (each at the list, as upstream reports it) and core's
    validateKubeFinalizerName (each at its index)."""
    for name in names:
        for why in _qualified_name(name):
            yield invalid(path, name, why)
    if ORPHAN in names and FOREGROUND_DELETION in names:
        # upstream shows the list as a Go slice: []string{"a", "b"}
        shown = ", ".join(f'"{n}"' for n in names)
        yield path, (f"Invalid value: []string{{{shown}}}: finalizer {ORPHAN} and "
                     f"{FOREGROUND_DELETION} cannot be both set")
    for i, name in enumerate(names):
        if "/" not in name and name not in STANDARD_FINALIZERS:
            yield invalid(f"{path}[{i}]", name,
                          "name is neither a standard finalizer name nor is it fully qualified")
