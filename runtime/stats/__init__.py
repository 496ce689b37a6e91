"""Resource statistics of the node and its pods: what /stats/summary and the resource
metrics report (upstream's pkg/kubelet/stats with its CRI stats provider, no cAdvisor)."""
