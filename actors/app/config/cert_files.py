"""Where the kubelet keeps its own serving pair: ``kubelet.crt`` and ``kubelet.key`` in
``--cert-dir`` (``<root-dir>/pki`` by default), the names upstream's kubelet gives the
self-signed pair it makes when no ``--tls-cert-file`` is named.

The server (actors.app.http.tls) writes and reads them there; the commands that talk to
the local daemon (actors.app.tools.remote) trust the certificate found there. Both floors
read the names here, so neither imports the other for them.
"""

from __future__ import annotations

CERT_NAME, KEY_NAME = "kubelet.crt", "kubelet.key"

CERT_DIR_NAME = "pki"
"""``--cert-dir``'s default directory under ``--root-dir``."""
