"""The program's tools: what a person runs to look at a kubelet, not the kubelet itself.

The trace viewers (``trace show``'s timeline, the Perfetto export, the timeline page and
its data, the plug-in hooks they ask the program's messages through, and the kubelet's
plug-in), ``explain``, and the commands that talk to a running daemon (logs, exec, attach,
port-forward). The daemon imports none of it at its start; its /debug/timeline page
imports the page on its first request.
"""
