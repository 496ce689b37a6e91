"""Serve the emulated API server until SIGINT or SIGTERM: the back end of scripts/dev-cluster.sh.

``python -m tests.apiserver --dir DIR --node NAME --admin-kubeconfig PATH [--port 6443]``
serves over TLS on 127.0.0.1, binds pods created without spec.nodeName to NAME (a one-node
scheduler), and writes into DIR what a kubelet joining it needs: ``kubelet.kubeconfig``
(user ``system:node:NAME`` in ``system:nodes``, by client certificate) and ``ca.crt`` (the
cluster CA, which also signs the kubelet-client certificate the server shows to the node's
port 10250 for ``kubectl logs``). Once the Node NAME is Ready it writes an admin kubeconfig
to PATH (atomically: a reader never sees half a file). Exits 0 when signalled.

``--bootstrap-token-file PATH`` also writes a bootstrap token there (valid a day) and
``bootstrap.kubeconfig`` with it into DIR, for ``--bootstrap-kubeconfig``; CSRs are
auto-approved and signed by the cluster CA, for at most ``--cluster-signing-duration``
seconds. ``--control-port N`` (0: any free port) also serves the control endpoint (control.py:
faults, partitions, the request log) on 127.0.0.1, for drills run from another process;
``--ready-file PATH`` gets ``{"api": URL, "control": URL}`` once both listen.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import threading
from pathlib import Path
from types import FrameType
from typing import Any

from tests.apiserver.control import ControlServer
from tests.apiserver.server import EmulatedAPIServer


def node_ready(server: EmulatedAPIServer, node: str) -> bool:
    obj: dict[str, Any] | None = server.store.get("nodes", ("", node))
    if obj is None:
        return False
    conditions = obj.get("status", {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.apiserver", description=__doc__)
    parser.add_argument("--dir", required=True, type=Path,
                        help="where kubelet.kubeconfig and ca.crt are written")
    parser.add_argument("--node", required=True, help="the one node pods are bound to")
    parser.add_argument("--admin-kubeconfig", required=True, type=Path,
                        help="written once the node is Ready")
    parser.add_argument("--port", type=int, default=6443)
    parser.add_argument("--control-port", type=int, default=None,
                        help="serve the control endpoint (faults) on this loopback port")
    parser.add_argument("--ready-file", type=Path, default=None,
                        help="written with the API and control URLs once they listen")
    parser.add_argument("--parent-pid", type=int, default=None,
                        help="stop when this process is gone (a drill that died)")
    parser.add_argument("--bookmark-interval", type=float, default=1.0,
                        help="seconds between watch bookmarks (default %(default)g)")
    parser.add_argument("--cluster-signing-duration", type=float, default=None,
                        help="seconds: the longest certificate the CSR signer issues "
                             "(kube-controller-manager's flag; default one year)")
    parser.add_argument("--bootstrap-token-file", type=Path, default=None,
                        help="write a new bootstrap token (<id>.<secret>) here, and a "
                             "bootstrap kubeconfig with it as bootstrap.kubeconfig in --dir")
    args = parser.parse_args(argv)

    stop = threading.Event()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)

    args.dir.mkdir(parents=True, exist_ok=True)
    signing = ({"cluster_signing_duration": args.cluster_signing_duration}
               if args.cluster_signing_duration is not None else {})
    with EmulatedAPIServer(port=args.port, schedule_to=args.node,
                           bookmark_interval=args.bookmark_interval, **signing) as server:
        server.write_kubeconfig(args.dir / "kubelet.kubeconfig", f"system:node:{args.node}",
                                groups=("system:nodes",))
        (args.dir / "ca.crt").write_bytes(server.ca.cert_pem)
        if args.bootstrap_token_file is not None:
            token = server.create_bootstrap_token(ttl=24 * 3600.0)
            server.write_bootstrap_kubeconfig(args.dir / "bootstrap.kubeconfig", token)
            args.bootstrap_token_file.write_text(token + "\n")
        control = (ControlServer(server, args.control_port).start()
                   if args.control_port is not None else None)
        print(f"emulated API server: serving on {server.url}", flush=True)
        if args.ready_file is not None:
            urls = {"api": server.url,
                    "control": f"http://127.0.0.1:{control.port}" if control else None}
            tmp_ready = args.ready_file.with_name(f".{args.ready_file.name}.tmp")
            tmp_ready.write_text(json.dumps(urls))
            os.replace(tmp_ready, args.ready_file)
        while not stop.is_set() and not node_ready(server, args.node):
            stop.wait(0.2)
            if args.parent_pid is not None and os.getppid() != args.parent_pid:
                stop.set()  # the drill that started this died: nobody will stop it
        if not stop.is_set():
            tmp = args.admin_kubeconfig.with_name(f".{args.admin_kubeconfig.name}.tmp")
            server.write_kubeconfig(tmp)
            os.replace(tmp, args.admin_kubeconfig)
            print(f"emulated API server: node {args.node} Ready; admin kubeconfig in "
                  f"{args.admin_kubeconfig}", flush=True)
        while not stop.wait(1.0):
            if args.parent_pid is not None and os.getppid() != args.parent_pid:
                break
        if control is not None:
            control.stop()
    print("emulated API server: stopped", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
