"""A pod's ``spec.resourceClaims``: what upstream's DRA manager must prepare before the
pod's sandbox is made (pkg/kubelet/cm/dra/manager.go prepareResources).

Upstream's kubelet looks up each claim's ResourceClaim object (by name, or for a claim
made from a template by the name the pod's status records), then the DRA driver that
allocated it, and asks the driver to prepare it. Any step that fails stops the sync
before the sandbox: a FailedPrepareDynamicResources event ("Failed to prepare dynamic
resources: ..."), the pod stays Pending and none of its containers runs.

This node has no DRA drivers and reads no ResourceClaim objects, so no claim can be
prepared: every pod with a claim to prepare is held there with upstream's error for the
first step that fails for it, never run without its devices. A claim whose ResourceClaim
the pod's status says was intentionally not created needs nothing (as upstream).
"""

from __future__ import annotations

from runtime.pod.model import Pod, PodResourceClaim

__all__ = ["prepare_error"]


def _claim_name(pod: Pod, claim: PodResourceClaim) -> tuple[str | None, str]:
    """Upstream resourceclaim.Name: (the ResourceClaim's name or None when there is none
    to prepare, the error when it cannot be told)."""
    where = f'pod "{pod.metadata.namespace}/{pod.metadata.name}"'
    if claim.resource_claim_name:
        return claim.resource_claim_name, ""
    if claim.resource_claim_template_name:
        statuses = pod.status.resource_claim_statuses if pod.status is not None else ()
        for status in statuses:
            if status.name == claim.name:
                return status.resource_claim_name or None, ""
        return None, f"{where}: ResourceClaim not created yet"
    return None, f'{where}, spec.resourceClaim "{claim.name}": none of the supported fields are set'


def prepare_error(pod: Pod) -> str | None:
    """None when the pod has no claim to prepare, else upstream's error (the one
    PrepareResources returns) for the first claim this node cannot prepare."""
    claims = list(pod.spec.resource_claims)
    extended = pod.status.extended_resource_claim_status if pod.status is not None else None
    if extended is not None:
        # The claim the scheduler made for the pod's extended resources backed by DRA
        # (upstream's DRAExtendedResource), prepared after the pod's own.
        claims.append(PodResourceClaim(name="", resource_claim_name=extended.resource_claim_name))
    for claim in claims:
        name, error = _claim_name(pod, claim)
        if error:
            return f"prepare dynamic resources: {error}"
        if name is None:
            continue
        # What the API server answers for a ResourceClaim it does not have; this node
        # has none (client-go's NotFound StatusError).
        return (f"prepare dynamic resources: fetch ResourceClaim {name}: "
                f'resourceclaims.resource.k8s.io "{name}" not found')
    return None
