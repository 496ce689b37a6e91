"""The kubelet's client of the Kubernetes API: kubeconfig, transport, verbs, reflector,
node registration and status, and the node lease.

Choice of client: our own, over raw JSON, on the standard library (``http.client``,
``ssl``, ``subprocess`` for exec plugins) and the msgspec and PyYAML the project already
pins. No new dependency.

- The official ``kubernetes`` client (37) imports in about 0.6 s and 57 MiB, and brings a
  typed model for every API object that the kubelet would convert again, and an informer
  whose inputs a trace cannot see. ``lightkube`` (1.0) is lighter (about 0.11 s and 23 to
  31 MiB) but still a model layer, and it would only save us kubeconfig loading.
- A reflector of our own hands every input on as plain JSON values a trace can record and a
  replay can answer; upstream's reflector, status and lease code are the model, rule by rule.
- Measured here (2 cores, Python 3.11, ``python -X importtime`` and ``VmRSS`` after import,
  median of 5 cold runs): ``import runtime.kubeapi`` with its submodules FILL_IMPORT;
  the interpreter alone FILL_BASE.

Floors: ``kubeconfig`` (the file) -> ``transport`` (HTTP, TLS, credentials, errors) ->
``client`` (verbs) -> ``reflector`` (list and watch), ``nodestatus`` (the pure Node
computations), ``node`` (registration and status updates), ``lease`` (the node lease).
"""
