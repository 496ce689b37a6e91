"""Semantic checks of a decoded, defaulted pod, after upstream's ValidatePodCreate.

Decoding (runtime.pod.manifest) already guarantees the shape and types of a pod; this
package checks what the types cannot say (names, ranges, enumerations, references between
fields), following upstream's ``ValidatePodCreate`` and what it calls
(pkg/apis/core/validation/validation.go), on the pod with upstream's API defaults applied
(runtime.pod.defaults.api_defaults), as upstream validates it. Each fault is reported the
way upstream words it: the field path and ``Required value``, ``Invalid value: <value>:
<why>``, ``Duplicate value: <value>``, ``Unsupported value: <value>: supported values:
...``, ``Forbidden: <why>`` or ``Not found: <value>``.

Every check reports ``(path, cause)`` pairs rather than raising, so a manifest with
several mistakes is reported in one go. One module an area: fields (the wording and the
name rules), metadata, pod (the pod as a whole), containers, resources, security, volumes,
scheduling, annotations, gojson (Go's JSON errors, for the tolerations annotation).
"""

from runtime.pod.defaults import apply_defaults, default_pull_policy
from runtime.pod.validation.fields import Problem, dns1123_label, dns1123_subdomain
from runtime.pod.validation.metadata import validate_labels
from runtime.pod.validation.pod import validate_pod

__all__ = [
    "Problem",
    "apply_defaults",
    "default_pull_policy",
    "dns1123_label",
    "dns1123_subdomain",
    "validate_labels",
    "validate_pod",
]
