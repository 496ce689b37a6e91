"""Node-pressure eviction as upstream's kubelet does it (pkg/kubelet/eviction), as pure
functions: thresholds and their flags, signal observations from the stats summary, threshold
evaluation with grace and transition periods, pod ranking, the eviction message and the
admission decision under pressure. The actor that runs them is actors.kubelet.eviction."""
