"""An emulated kube-apiserver for testing the kubelet's cluster mode without a cluster.

``from tests.apiserver import EmulatedAPIServer``; see server.py for what it serves and what
it does not, and tests/unit/apiserver for the upstream code (kubectl) that pins its semantics.
"""

from tests.apiserver.server import EmulatedAPIServer

__all__ = ["EmulatedAPIServer"]
