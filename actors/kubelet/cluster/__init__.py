"""Cluster mode: the kubelet's actors that talk to an API server.

Each is an I/O actor of its own, as the file and URL sources are: its handlers make the
API calls (so no other actor ever waits on HTTP), and what it learns reaches the actors
that decide as messages the trace records (``SourceSnapshot("api", ...)`` for the sync
loop, ``HealthReport`` asked of the sync loop). Replays do not rebuild them: their
deliveries to the deciding actors are inputs there.

- ``node_status``: registration, then the Node's status every nodeStatusUpdateFrequency
  (upstream kubelet_node_status.go), Ready from the runtime's and the PLEG's health;
- ``lease``: kube-node-lease/<node> (upstream's lease controller);
- ``pod_source``: the API server as the third pod source (upstream's config/apiserver.go),
  started once the Node is registered;
- ``pod_writer``: pod status PATCHes, the final DELETE of gracefully deleted pods and the
  mirror pods of static pods (upstream's status_manager.go and pod/mirror_client.go).

``context.Cluster`` is what they share: the clients and the registration.
"""
