"""The kubelet as actors: the sync loop, pod workers, PLEG, probes, status, killer, sources.

The rule of this package: it builds on ``actors.core`` and ``runtime`` and never imports
``actors.app`` (the program that runs it). Its names (addresses, tick kinds, health keys)
live in ``names``, its wiring in ``tree``, its plug-ins to core's traces in ``trace``.
"""
