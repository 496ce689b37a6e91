"""Commands that talk to a running daemon over its HTTP API (``kubelet-actors logs``,
and the streaming commands): the connection options they share, and each command."""
