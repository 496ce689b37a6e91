"""Upstream's static-pod rules, and reading a manifest directory (the file source).

A static pod comes from a file or URL rather than an API server, so the kubelet gives it
the identity an API server would have: a name unique to the node (``<name>-<node>``), the
``default`` namespace when none is set, spec.nodeName, and a UID derived from the manifest
and where it came from, so the same manifest keeps its UID across restarts and an edited
one gets a new UID (and so a new pod). ``kubernetes.io/config.hash`` repeats the UID.

``kubernetes.io/config.seen`` is a wall-clock time: the config source stamps it when it
first sees the pod, so everything here stays a pure function of its inputs.
"""

from __future__ import annotations

import errno
import hashlib
import os
import stat
from pathlib import Path
from typing import Literal

from msgspec import Struct
from msgspec.structs import replace

from runtime.errors import ManifestError
from runtime.pod.manifest import MAX_MANIFEST_BYTES, parse_manifest_with_warnings
from runtime.pod.model import Pod, pod_to_json
from runtime.pod.validation import dns1123_subdomain

__all__ = [
    "CONFIG_HASH",
    "CONFIG_SEEN",
    "CONFIG_SOURCE",
    "ManifestDirResult",
    "SourcedPod",
    "make_static_pod",
    "read_manifest_dir",
    "read_manifest_file",
    "static_pod_uid",
]

CONFIG_SOURCE = "kubernetes.io/config.source"
CONFIG_HASH = "kubernetes.io/config.hash"
CONFIG_SEEN = "kubernetes.io/config.seen"

SourceKind = Literal["file", "http"]


def static_pod_uid(pod: Pod, node_name: str, source_kind: SourceKind, source: str) -> str:
    """Upstream's static-pod UID: md5 of the decoded pod and where it came from.

    As upstream, a file's UID also depends on the node (the same file on two nodes makes
    two pods), a URL's only on the URL.
    """
    hasher = hashlib.md5(usedforsecurity=False)
    hasher.update(pod_to_json(pod))
    if source_kind == "file":
        hasher.update(f"host:{node_name}".encode())
        hasher.update(f"file:{source}".encode())
    else:
        hasher.update(f"url:{source}".encode())
    return hasher.hexdigest()


def make_static_pod(pod: Pod, node_name: str, source_kind: SourceKind, source: str) -> Pod:
    """The pod as this node runs it: renamed, namespaced, bound to the node, with a UID.

    ``pod`` is a decoded manifest pod (runtime.pod.manifest), ``source`` the file path or
    URL it came from. A UID set in the manifest is kept, as upstream does. Raises
    ManifestError when the pod has no name or the node-qualified name is invalid.
    """
    if source_kind not in ("file", "http"):
        raise ValueError(f"source_kind must be 'file' or 'http', not {source_kind!r}")
    meta = pod.metadata
    if not meta.name:
        raise ManifestError(source, "metadata.name", "required for a static pod")
    # As upstream, the UID hashes the pod as the manifest wrote it, before the renaming
    # below: it covers what the author controls, not what this function adds.
    uid = meta.uid or static_pod_uid(pod, node_name, source_kind, source)
    name = f"{meta.name}-{node_name.lower()}"
    if why := dns1123_subdomain(name):
        raise ManifestError(source, "metadata.name", f"with the node name appended: {why}")
    annotations = {**meta.annotations, CONFIG_SOURCE: source_kind, CONFIG_HASH: uid}
    metadata = replace(
        meta, name=name, namespace=meta.namespace or "default", uid=uid, annotations=annotations
    )
    return replace(pod, metadata=metadata, spec=replace(pod.spec, node_name=node_name))


# --- the file source ------------------------------------------------------------------


class SourcedPod(Struct, frozen=True):
    """A static pod and the manifest file it came from."""

    pod: Pod
    source: str


class ManifestDirResult(Struct, frozen=True):
    """One listing of a manifest directory: every good pod, and every bad file's error.

    One bad file never hides the others' pods; ``warnings`` are ready-to-log lines about
    fields accepted but ignored.
    """

    pods: tuple[SourcedPod, ...] = ()
    errors: tuple[ManifestError, ...] = ()
    warnings: tuple[str, ...] = ()


def _read(path: str, node_name: str) -> tuple[tuple[Pod, ...], tuple[str, ...]]:
    try:
        if Path(path).stat().st_size > MAX_MANIFEST_BYTES:  # never read a huge file whole
            raise ManifestError(path, "", f"larger than {MAX_MANIFEST_BYTES} bytes: "
                                "not a manifest")
        data = Path(path).read_bytes()
    except OSError as err:
        raise ManifestError(path, "", f"cannot read: {err.strerror or err}") from err
    pods, warnings = parse_manifest_with_warnings(data, path)
    return tuple(make_static_pod(p, node_name, "file", path) for p in pods), warnings


def read_manifest_file(path: str | Path, node_name: str) -> tuple[Pod, ...]:
    """The static pods of one manifest file; ManifestError if it is unreadable or bad."""
    return _read(str(path), node_name)[0]


def read_manifest_dir(path: str | Path, node_name: str) -> ManifestDirResult:
    """The static pods of a manifest directory (or single file), as upstream's file source.

    Only the top level is read: entries matching ``[^.]*`` (dot-files, such as editors'
    swap files, are skipped), in name order; subdirectories are ignored. A missing path is
    an empty set, not an error, so the directory can be created later. When two pods have
    the same full name (after renaming) the first in name order wins and the later one is
    reported.
    """
    root = str(path)
    try:
        st = os.stat(root)
    except FileNotFoundError:
        return ManifestDirResult()
    except OSError as err:
        return ManifestDirResult(errors=(_os_error(root, "cannot stat", err),))
    if not stat.S_ISDIR(st.st_mode):
        entries = [root]
    else:
        try:
            names = sorted(n for n in os.listdir(root) if not n.startswith("."))
        except OSError as err:
            return ManifestDirResult(errors=(_os_error(root, "cannot list", err),))
        entries = [os.path.join(root, n) for n in names]

    pods: list[SourcedPod] = []
    errors: list[ManifestError] = []
    warnings: list[str] = []
    first_seen: dict[str, str] = {}
    for entry in entries:
        try:
            file_pods, file_warnings = _read_entry(entry, node_name)
        except ManifestError as err:
            errors.append(err)
            continue
        warnings += file_warnings
        for pod in file_pods:
            if (first := first_seen.get(pod.full_name)) is not None:
                errors.append(
                    ManifestError(
                        entry,
                        "metadata.name",
                        f'duplicate static pod "{pod.full_name}": already defined by {first}',
                    )
                )
                continue
            first_seen[pod.full_name] = entry
            pods.append(SourcedPod(pod, entry))
    return ManifestDirResult(tuple(pods), tuple(errors), tuple(warnings))


def _read_entry(entry: str, node_name: str) -> tuple[tuple[Pod, ...], tuple[str, ...]]:
    """One directory entry's pods; () for entries that are skipped, not faulty."""
    try:
        st = os.stat(entry)
    except FileNotFoundError as err:
        # Gone since the listing: a file being replaced; the next listing sees it again.
        if not os.path.lexists(entry):
            return (), ()
        raise _os_error(entry, "cannot stat (broken symlink?)", err) from err
    except OSError as err:
        raise _os_error(entry, "cannot stat", err) from err
    if stat.S_ISDIR(st.st_mode):
        return (), ()  # upstream does not recurse into subdirectories
    if not stat.S_ISREG(st.st_mode):
        raise ManifestError(entry, "", "not a regular file")
    try:
        return _read(entry, node_name)
    except ManifestError as err:
        cause = err.__cause__
        if isinstance(cause, OSError) and cause.errno == errno.ENOENT:
            return (), ()
        raise


def _os_error(path: str, what: str, err: OSError) -> ManifestError:
    error = ManifestError(path, "", f"{what}: {err.strerror or err}")
    error.__cause__ = err
    return error
