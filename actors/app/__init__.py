"""The kubelet-actors program: flags and configuration, the daemon and run-once modes, the
HTTP API, the trace and drill commands, and the test bed they share.

The rule of this package: it is the top floor. It may import ``actors.kubelet``,
``actors.core`` and ``runtime``; nothing in those imports it.
"""
