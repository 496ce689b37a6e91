"""Kubernetes core/v1 Events as the kubelet records them (upstream client-go tools/record).

- ``reasons``: the reasons upstream's kubelet records (pkg/kubelet/events/event.go);
- ``recorder``: the narrow EventRecorder role the runtime and the actors call, object
  references (``spec.containers{name}`` field paths) and fakes for tests;
- ``correlator``: client-go's EventCorrelator (dedup with a count, aggregation of similar
  events, the per-object spam filter), ported with its test tables;
- ``v1``: an Event as the API's JSON, and Go's duration format for messages.

Nothing here does I/O: the kubelet's actors send, log and write what these decide.
"""
