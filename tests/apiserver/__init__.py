"""An emulated kube-apiserver for testing the kubelet's cluster mode without a cluster."""
