"""The v1 Pod, as immutable values.

The classes are generated from upstream's API definitions (runtime.pod.generated, by
``python -m runtime.pod.generate``) and know every field of a core/v1 Pod of the
Kubernetes release named there. They are decoded straight from a manifest (see
runtime.pod.manifest): field names are the Kubernetes JSON names, unknown fields are
refused, and after decoding nothing changes them (frozen; sequences are tuples; mappings
are typed read-only). Fields upstream defaults unconditionally carry that default, so a
decoded pod looks like one the API server would hand a kubelet; the contextual defaults
are applied by runtime.pod.defaults. ``omit_defaults`` keeps the JSON encoding (and so
the container hash) stable when a field with a default is added later.

The hand-written behaviour of Pod and Container (``uid``, ``full_name``, ``is_static``,
``all_containers()``, ``container()``, ``is_restartable_init``) lives in
runtime.pod.methods, mixed into the generated classes; import everything from here.
"""

from __future__ import annotations

import msgspec

from runtime.pod.generated import *  # noqa: F403  (the model is the generated classes)
from runtime.pod.generated import Container, Pod, Volume
from runtime.pod.generated import __all__ as _generated

__all__ = [*_generated, "container_to_json", "pod_to_json", "volume_source", "volume_sources"]


def pod_to_json(pod: Pod) -> bytes:
    """The pod's canonical JSON (field order fixed by the Structs, defaults omitted)."""
    return msgspec.json.encode(pod)


def container_to_json(container: Container) -> bytes:
    return msgspec.json.encode(container)


_VOLUME_SOURCES = tuple(
    (f.name, f.encode_name) for f in msgspec.structs.fields(Volume) if f.name != "name"
)


def volume_sources(volume: Volume) -> list[str]:
    """The JSON names of the sources a volume sets (one, in a valid pod)."""
    return [json for attr, json in _VOLUME_SOURCES if getattr(volume, attr) is not None]


def volume_source(volume: Volume) -> str | None:
    """The JSON name of a volume's first source (``emptyDir``), None when it sets none."""
    sources = volume_sources(volume)
    return sources[0] if sources else None


# msgspec (0.22) builds a Struct type's decoding info lazily, at its first decode, and two
# threads doing that at once for the same type crash the interpreter (a segfault: in cluster
# mode the API source and the file source decode their first pods together). Built here,
# once, at import (under the import lock), every decode after finds it ready.
_POD_DECODER = msgspec.json.Decoder(Pod)
