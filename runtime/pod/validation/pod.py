"""The pod as a whole: upstream's ValidatePodCreate, ValidatePodSpec and ValidateObjectMeta.
"""

from __future__ import annotations

from collections.abc import Iterator

from runtime.pod.model import Pod, PodSpec
from runtime.pod.validation.annotations import pod_annotations
from runtime.pod.validation.containers import (
    _container,
    _host_port_conflicts,
    file_key_ref_volumes,
)
from runtime.pod.validation.fields import (
    _MAX_INT32,
    _NON_NEGATIVE,
    Problem,
    duplicate,
    forbidden,
    invalid,
    label_faults,
    not_supported,
    required,
    subdomain_faults,
)
from runtime.pod.validation.metadata import labels, object_meta
from runtime.pod.validation.resources import overhead, pod_claims, pod_resources
from runtime.pod.validation.scheduling import (
    _affinity,
    _dns_config,
    _toleration,
    gates_and_aliases,
    topology_spread,
)
from runtime.pod.validation.security import (
    host_users,
    operating_system,
    pod_security_context,
    windows_host_process,
)
from runtime.pod.validation.volumes import volumes

RESTART_POLICIES = ("Always", "OnFailure", "Never")
DNS_POLICIES = ("ClusterFirst", "ClusterFirstWithHostNet", "Default", "None")
PREEMPTION_POLICIES = ("PreemptLowerPriority", "Never")

# --- the pod -----------------------------------------------------------------------------


def validate_pod(pod: Pod) -> list[Problem]:
    """Every semantic fault of a decoded, defaulted pod, in field order; empty when valid."""
    problems: list[Problem] = list(object_meta(pod.metadata))
    spec = pod.spec
    good, volume_problems = volumes(spec, pod.metadata.name)
    problems += volume_problems
    usable = {v.name: v for v in spec.volumes if v.name in good}
    problems += pod_claims(spec.resource_claims)
    if not spec.containers:
        problems.append(required("spec.containers"))
    grace = spec.termination_grace_period_seconds
    seen: set[str] = set()
    for field, containers in (
        ("initContainers", spec.init_containers),
        ("containers", spec.containers),
    ):
        for i, c in enumerate(containers):
            path = f"spec.{field}[{i}]"
            if c.name and c.name in seen:
                problems.append(duplicate(f"{path}.name", c.name))
            seen.add(c.name)
            problems += _container(c, path, usable, grace, init=field == "initContainers",
                                   host_users=spec.host_users is not False,
                                   claims=frozenset(r.name for r in spec.resource_claims if r.name),
                                   pod_restart_policy=spec.restart_policy)
    problems += _host_port_conflicts(spec.containers, "spec.containers")
    problems += pod_resources(spec)
    problems += _host_network_ports(spec)
    if spec.ephemeral_containers:
        problems.append(forbidden("spec.ephemeralContainers", "cannot be set on create"))
    if spec.restart_policy not in RESTART_POLICIES:
        problems.append(not_supported("spec.restartPolicy", spec.restart_policy,
                                      RESTART_POLICIES))
    if spec.dns_policy not in DNS_POLICIES:
        problems.append(not_supported("spec.dnsPolicy", spec.dns_policy, DNS_POLICIES))
    problems += _dns_config(pod)
    if grace is not None and grace < 0:
        problems.append(invalid("spec.terminationGracePeriodSeconds", grace, _NON_NEGATIVE))
    deadline = spec.active_deadline_seconds
    if deadline is not None and not 1 <= deadline <= _MAX_INT32:
        problems.append(invalid("spec.activeDeadlineSeconds", deadline,
                                "must be between 1 and 2147483647, inclusive"))
    problems += pod_security_context(spec)
    problems += labels(spec.node_selector, "spec.nodeSelector")
    for i, t in enumerate(spec.tolerations):
        problems += _toleration(t, f"spec.tolerations[{i}]")
    problems += _affinity(pod)
    problems += windows_host_process(spec)
    problems += host_users(spec)
    for field, label in (("hostname", spec.hostname), ("subdomain", spec.subdomain)):
        problems += [invalid(f"spec.{field}", label, why)
                     for why in (label_faults(label) if label else ())]
    problems += [invalid("spec.priorityClassName", spec.priority_class_name, why)
                 for why in subdomain_faults(spec.priority_class_name)
                 if spec.priority_class_name]
    if spec.runtime_class_name is not None:
        problems += [invalid("spec.runtimeClassName", spec.runtime_class_name, why)
                     for why in subdomain_faults(spec.runtime_class_name)]
    # upstream validateImagePullSecrets ("only name may be set") cannot fail here: a
    # LocalObjectReference has no other field, and decoding refuses unknown ones; an empty
    # name upstream lets through.
    for field, name in (("serviceAccountName", spec.service_account_name),
                        ("nodeName", spec.node_name)):
        problems += [invalid(f"spec.{field}", name, why)
                     for why in (subdomain_faults(name) if name else ())]
    if spec.preemption_policy is not None:
        if not spec.preemption_policy:
            problems.append(required("spec.preemptionPolicy"))
        elif spec.preemption_policy not in PREEMPTION_POLICIES:
            problems.append(not_supported("spec.preemptionPolicy", spec.preemption_policy,
                                          PREEMPTION_POLICIES))
    problems += overhead(spec.overhead)
    problems += gates_and_aliases(spec)
    problems += topology_spread(spec)
    problems += operating_system(spec)
    # upstream validatePodMetadataAndSpec's "serviceAccountToken: must not be specified when
    # serviceAccountName is not set" is not applied: upstream's ServiceAccount admission sets
    # serviceAccountName "default" before validating, so a real pod never meets it (the
    # Kubernetes docs' projected token example names no service account).
    problems += file_key_ref_volumes(spec)
    problems += pod_annotations(pod)
    return problems


def _host_network_ports(spec: PodSpec) -> Iterator[Problem]:
    """upstream validatePodHostNetworkDeps (for a pod, ResourceIsPod): in the host's network
    a container's port is the host's port."""
    if not spec.host_network:
        return
    for i, c in enumerate(spec.containers):
        for j, port in enumerate(c.ports):
            if port.host_port != port.container_port:
                yield invalid(f"spec.containers[{i}].ports[{j}].hostPort", port.host_port,
                              "must match `containerPort` when `hostNetwork` is true")
