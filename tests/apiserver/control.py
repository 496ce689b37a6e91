"""The emulated API server's control endpoint: faults and observations over plain HTTP.

``python -m tests.apiserver --control-port N`` serves this on 127.0.0.1 next to the API, on
a port of its own that a partition does not close, so a drill in another process (the
product's ``kubelet-actors drill``, which must not import tests/) can drive the faults and
read what happened, through the emulator's own objects (EmulatedAPIServer.faults,
drop_watches, expire_watches, compact, partition, heal, request_log, store):

- ``POST /faults`` {verb, resource, code, retry_after, latency, times}: add a Fault rule;
  ``DELETE /faults``: remove them all;
- ``POST /watches/drop`` and ``POST /watches/expire`` {resource}: cut open watches, or end
  them with a 410 ERROR event; ``GET /watches?resource=pods``: how many are open;
- ``POST /compact``: compact history up to now (older versions answer 410);
- ``POST /partition`` {seconds}: refuse connections (for seconds, or until ``POST /heal``);
- ``GET /requests?since=T``: the request log (requestlog.Request) from wall time T;
- ``GET /objects/<plural>/<namespace or ->/<name>``: an object as stored (no fault applies);
- ``POST /objects/<plural>/<namespace>``: create an object as the admin would;
- ``GET /history/pods``: every write of every pod, summed up (phase, Ready, containers);
- ``POST /bootstrap-tokens`` {ttl, extra_groups, token_id, token_secret} (all optional; ttl in
  seconds, null: never expires): ``{"token": "<id>.<secret>"}``, a kube-system bootstrap
  token Secret as ``kubeadm token create`` makes;
- ``POST /csrs/<name>/approve`` and ``POST /csrs/<name>/deny`` {message}: add the Approved
  (reason TestApprove) or Denied (TestDeny) condition, as ``kubectl certificate approve``;
- ``GET /csr-signing``, ``POST /csr-signing`` {auto_approve: bool, duration: seconds}: the
  csrapproving switch and the signer's --cluster-signing-duration;
- ``GET /ca``: ``{"ca.crt": PEM}``, the cluster CA (API server, client and kubelet serving
  certificates).

Answers are JSON; errors are ``{"error": "..."}`` with 400 or 404. No authentication: it
listens on loopback only, for the test bed.
"""

from __future__ import annotations

import json
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from tests.apiserver.errors import APIError
from tests.apiserver.objects import resource_key
from tests.apiserver.resources import ResourceType, lookup
from tests.apiserver.server import EmulatedAPIServer
from tests.apiserver.store import Event

FAULT_FIELDS = {"verb": str, "resource": str, "code": int, "retry_after": int,
                "latency": float, "times": int}


def pod_summary(event: Event) -> dict[str, Any]:
    """What a drill checks of one write of a pod: who, which version, and its status."""
    obj = event.obj
    meta = obj.get("metadata") or {}
    status = obj.get("status") or {}
    conditions = {c.get("type"): c.get("status") for c in status.get("conditions") or []
                  if isinstance(c, dict)}
    containers = []
    for c in status.get("containerStatuses") or []:
        state = c.get("state") or {}
        which = next(iter(state), "")
        containers.append({"name": c.get("name"), "state": which,
                           "containerID": c.get("containerID", ""),
                           "restartCount": c.get("restartCount", 0),
                           "exitCode": (state.get("terminated") or {}).get("exitCode")})
    return {"rv": event.rv, "type": event.type, "namespace": event.key[0],
            "name": event.key[1], "uid": meta.get("uid", ""),
            "mirror": bool((meta.get("annotations") or {}).get("kubernetes.io/config.mirror")),
            "phase": status.get("phase", ""), "ready": conditions.get("Ready"),
            "containers": containers}


class PodHistory:
    """Every write of every pod, summed up as it happens (compaction does not touch it)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.items: list[dict[str, Any]] = []

    def __call__(self, event: Event) -> None:
        if event.resource == "pods":
            summary = pod_summary(event)
            with self._lock:
                self.items.append(summary)

    def snapshot(self) -> list[dict[str, Any]]:
        with self._lock:
            return list(self.items)


class ControlError(Exception):
    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code


def _fault_args(body: dict[str, Any]) -> dict[str, Any]:
    unknown = set(body) - set(FAULT_FIELDS)
    if unknown:
        raise ControlError(400, f"unknown fault field(s): {', '.join(sorted(unknown))}")
    try:
        return {k: FAULT_FIELDS[k](v) for k, v in body.items() if v is not None}
    except (TypeError, ValueError) as err:
        raise ControlError(400, f"bad fault field: {err}") from None


def _type(plural: str) -> ResourceType:
    rt = (lookup("", "v1", plural) or lookup("coordination.k8s.io", "v1", plural)
          or lookup("certificates.k8s.io", "v1", plural))
    if rt is None:
        raise ControlError(404, f"no resource {plural}")
    return rt


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: ControlServer

    def log_message(self, format: str, *args: Any) -> None:
        return

    def do_GET(self) -> None:
        self._serve("GET")

    def do_POST(self) -> None:
        self._serve("POST")

    def do_DELETE(self) -> None:
        self._serve("DELETE")

    def _serve(self, method: str) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        parsed = urllib.parse.urlsplit(self.path)
        query = dict(urllib.parse.parse_qsl(parsed.query))
        try:
            body = json.loads(raw) if raw else {}
            if not isinstance(body, dict):
                raise ControlError(400, "the body must be a JSON object")
            code, answer = 200, self.server.answer(method, parsed.path, query, body)
        except ControlError as err:
            code, answer = err.code, {"error": str(err)}
        except APIError as err:
            code, answer = err.code, {"error": err.message}
        except ValueError as err:
            code, answer = 400, {"error": f"bad request: {err}"}
        data = json.dumps(answer).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


class ControlServer(ThreadingHTTPServer):
    """The control endpoint of one EmulatedAPIServer; ``start()`` serves on a thread."""

    daemon_threads = True

    def __init__(self, api: EmulatedAPIServer, port: int = 0) -> None:
        super().__init__(("127.0.0.1", port), _Handler)
        self.api = api
        self.history = PodHistory()
        with api.store.cond:
            api.store.observers.append(self.history)
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        return int(self.server_address[1])

    def start(self) -> ControlServer:
        self._thread = threading.Thread(target=self.serve_forever, name="apiserver-control",
                                        daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self.shutdown()
        self.server_close()

    def answer(self, method: str, path: str, query: dict[str, str],
               body: dict[str, Any]) -> Any:
        api = self.api
        parts = [urllib.parse.unquote(p) for p in path.strip("/").split("/")]
        match method, parts:
            case "GET", ["healthz"]:
                return {"ok": True, "api": api.url}
            case "POST", ["faults"]:
                api.faults.inject(**_fault_args(body))
                return {"ok": True}
            case "DELETE", ["faults"]:
                api.faults.clear()
                return {"ok": True}
            case "POST", ["watches", "drop"]:
                return {"watches": api.drop_watches(body.get("resource"))}
            case "POST", ["watches", "expire"]:
                return {"watches": api.expire_watches(body.get("resource"))}
            case "GET", ["watches"]:
                return {"open": api.open_watches(query.get("resource"))}
            case "POST", ["compact"]:
                return {"compacted": api.compact()}
            case "POST", ["partition"]:
                seconds = body.get("seconds")
                api.partition(float(seconds) if seconds is not None else None)
                return {"ok": True}
            case "POST", ["heal"]:
                api.heal()
                return {"ok": True}
            case "GET", ["requests"]:
                since = float(query.get("since", "0"))
                return {"items": [r.json() for r in api.request_log.since(since)]}
            case "GET", ["objects", plural, ns, name]:
                with api.store.cond:
                    obj = api.store.get(self._resource(plural), ("" if ns == "-" else ns,
                                                                 name))
                if obj is None:
                    raise ControlError(404, f"{plural} {ns}/{name} not found")
                return obj
            case "POST", ["objects", plural, ns]:
                return api.registry.create(_type(plural), "" if ns == "-" else ns, body)
            case "GET", ["history", "pods"]:
                return {"items": self.history.snapshot()}
            case "POST", ["bootstrap-tokens"]:
                return {"token": self._bootstrap_token(body)}
            case "POST", ["csrs", name, "approve"]:
                return api.approve_csr(name, str(body.get("message") or "approved by the test"))
            case "POST", ["csrs", name, "deny"]:
                return api.deny_csr(name, str(body.get("message") or "denied by the test"))
            case "POST", ["csr-signing"]:
                if "duration" in body:
                    api.cluster_signing_duration = float(body["duration"])
                if "auto_approve" in body:
                    api.csr_auto_approve = bool(body["auto_approve"])
                return {"auto_approve": api.csr_auto_approve,
                        "duration": api.cluster_signing_duration}
            case "GET", ["csr-signing"]:
                return {"auto_approve": api.csr_auto_approve,
                        "duration": api.cluster_signing_duration}
            case "GET", ["ca"]:
                return {"ca.crt": api.ca.cert_pem.decode()}
        raise ControlError(404, f"no such control: {method} {path}")

    def _bootstrap_token(self, body: dict[str, Any]) -> str:
        unknown = set(body) - {"ttl", "extra_groups", "token_id", "token_secret"}
        if unknown:
            raise ControlError(400, f"unknown bootstrap token field(s): "
                                    f"{', '.join(sorted(unknown))}")
        kwargs: dict[str, Any] = {}
        if "ttl" in body:
            kwargs["ttl"] = None if body["ttl"] is None else float(body["ttl"])
        if "extra_groups" in body:
            kwargs["extra_groups"] = tuple(str(g) for g in body["extra_groups"] or ())
        return self.api.create_bootstrap_token(token_id=body.get("token_id"),
                                               token_secret=body.get("token_secret"), **kwargs)

    @staticmethod
    def _resource(plural: str) -> str:
        return resource_key(_type(plural))
