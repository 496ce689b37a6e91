"""Commands that talk to a running kubelet over its main port (logs, exec, attach,
port-forward), as kubectl talks to one through the API server: the connection options they
share, and each command."""
