"""The HTTP API: read-only views and debugging handlers, as upstream's kubelet serves them."""
