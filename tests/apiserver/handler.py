"""The emulated API server's HTTP request handler: one request, from headers to answer.

Each request is authenticated (bearer token or client certificate; anonymous is 401),
authorized by the test's policy, passed through the fault rules, then routed to discovery,
the registry's verbs, TokenReview/SubjectAccessReview, or proxied to the node's kubelet
(pods/log here, pods/exec, attach and portforward through streams.py). Watches go out as
chunked streams of JSON events, as Tables when the client asks for them.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import socket
import ssl
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler
from typing import TYPE_CHECKING, Any

import yaml

from tests.apiserver import errors, protobuf
from tests.apiserver.auth import Attributes, Authenticator, User
from tests.apiserver.auth import subject_access_review as answer_sar
from tests.apiserver.errors import APIError
from tests.apiserver.listwatch import ListOptions
from tests.apiserver.registry import DeleteOptions
from tests.apiserver.resources import ResourceType, discovery, openapi_v3
from tests.apiserver.routes import Route, parse_route
from tests.apiserver.selectors import parse_fields, parse_labels
from tests.apiserver.streams import STREAM_SUBRESOURCES, kubelet_location, proxy_stream
from tests.apiserver.tables import table

if TYPE_CHECKING:
    from tests.apiserver.server import EmulatedAPIServer

VERSION = {"major": "1", "minor": "32", "gitVersion": "v1.32.0-emulated",
           "gitCommit": "emulated", "gitTreeState": "clean", "buildDate": "2025-01-01T00:00:00Z",
           "goVersion": "go1.23", "compiler": "gc", "platform": "linux/amd64"}

_LOG_OPTIONS = ("follow", "previous", "timestamps", "sinceSeconds", "sinceTime", "tailLines",
                "limitBytes")


def _flag(query: dict[str, str], name: str) -> bool:
    return query.get(name, "").lower() in ("1", "true")


class Handler(BaseHTTPRequestHandler):
    """One connection's requests to an EmulatedAPIServer, served on the connection's thread."""

    protocol_version = "HTTP/1.1"
    server: EmulatedAPIServer  # type: ignore[assignment]

    def log_message(self, format: str, *args: Any) -> None:
        return  # quiet: tests read the server's state, not its access log

    def do_GET(self) -> None:
        self._serve("GET")

    def do_POST(self) -> None:
        self._serve("POST")

    def do_PUT(self) -> None:
        self._serve("PUT")

    def do_PATCH(self) -> None:
        self._serve("PATCH")

    def do_DELETE(self) -> None:
        self._serve("DELETE")

    # --- plumbing -----------------------------------------------------------------------

    def _send_json(self, code: int, body: Any, headers: dict[str, str] | None = None) -> None:
        data = json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Cache-Control", "no-cache, private")
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

    def _send_error(self, err: APIError) -> None:
        self._send_json(err.code, err.status(), err.headers)

    def _body(self) -> Any:
        self._body_read = True
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        if not raw:
            return {}
        if self.headers.get("Content-Type", "").split(";")[0].strip() == protobuf.MEDIA_TYPE:
            return protobuf.decode_object(raw)
        try:
            return json.loads(raw)
        except ValueError:
            try:
                return yaml.safe_load(raw)
            except yaml.YAMLError:
                raise errors.bad_request("the body of the request could not be decoded as "
                                         "JSON or YAML") from None

    def _user(self) -> User | None:
        auth = self.headers.get("Authorization", "")
        if auth.lower().startswith("bearer "):
            return self.server.authenticator.by_token(auth[7:].strip())
        if isinstance(self.connection, ssl.SSLSocket):
            cert = self.connection.getpeercert()
            if cert:
                now = self.server.authenticator.clock()
                if not (ssl.cert_time_to_seconds(str(cert["notBefore"])) <= now
                        <= ssl.cert_time_to_seconds(str(cert["notAfter"]))):
                    return None  # "x509: certificate has expired or is not yet valid"
                subject = cert.get("subject")
                return Authenticator.by_certificate(subject)  # type: ignore[arg-type]
        return None

    # --- dispatch -----------------------------------------------------------------------

    def _serve(self, method: str) -> None:
        self.server.requests += 1
        self._body_read = False
        parsed = urllib.parse.urlsplit(self.path)
        query = dict(urllib.parse.parse_qsl(parsed.query, keep_blank_values=True))
        try:
            user = self._user()
            if user is None:
                raise errors.unauthorized()
            self._requester = user
            self._dispatch(method, parsed.path, query, user)
        except APIError as err:
            if not self._body_read:
                # Refused before its body was read (401, 403, a fault): drain it, as Go's
                # net/http does, or the next request on this kept-alive connection would
                # start inside it.
                with contextlib.suppress(OSError, ValueError):
                    self.rfile.read(int(self.headers.get("Content-Length") or 0))
            self._send_error(err)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True
        except Exception as err:
            self._send_error(errors.internal(f"{type(err).__name__}: {err}"))

    def _dispatch(self, method: str, path: str, query: dict[str, str], user: User) -> None:
        srv = self.server
        if method == "GET" and path in ("/healthz", "/livez", "/readyz"):
            data = b"ok"
            self.send_response(200)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
            return
        if method == "GET" and path == "/version":
            self._send_json(200, VERSION)
            return
        if method == "GET" and (path in ("/api", "/apis") or path.startswith(("/api/", "/apis/"))):
            doc = discovery(path.rstrip("/") or "/", srv.address)
            if doc is not None:
                self._send_json(200, doc)
                return
        if method == "GET" and path.startswith("/openapi/v3"):
            spec = openapi_v3(path.rstrip("/"))
            if spec is not None:
                self._send_json(200, spec)
                return
        route = parse_route(path)
        if route is None:
            raise APIError(404, "NotFound", "the server could not find the requested resource",
                           {"causes": [{"reason": "UnexpectedServerResponse",
                                        "message": "404 page not found"}]})
        verb = self._verb(method, route, query)
        if verb not in route.rt.verbs and not route.subresource:
            raise errors.method_not_allowed(
                "the server does not allow this method on the requested resource")
        attrs = Attributes(user, verb, route.rt.plural, route.subresource, route.rt.group,
                           route.namespace, route.name)
        if not srv.authorize(attrs):
            raise errors.forbidden(user.name, verb, route.resource, route.rt.group,
                                   route.namespace, route.name)
        fault = srv.faults.take(verb, route.resource)
        srv.request_log.record(verb, route.resource, route.name, query,
                               fault.code or 0 if fault is not None else 0)
        if fault is not None:
            if fault.latency:
                time.sleep(fault.latency)  # the point of the fault: a slow server
            err = fault.error()
            if err is not None:
                raise err
        getattr(self, f"_verb_{verb}")(route, query)

    @staticmethod
    def _verb(method: str, route: Route, query: dict[str, str]) -> str:
        if method == "GET":
            if route.name:
                return "get"
            return "watch" if _flag(query, "watch") else "list"
        if method == "POST":
            return "create"
        if method == "PUT":
            return "update"
        if method == "PATCH":
            return "patch"
        if method == "DELETE":
            return "delete" if route.name else "deletecollection"
        raise errors.method_not_allowed(f"method {method} is not supported")

    def _wants_table(self) -> bool:
        return "as=Table" in self.headers.get("Accept", "")

    def _list_options(self, rt: ResourceType, query: dict[str, str]) -> ListOptions:
        limit = query.get("limit", "") or "0"
        timeout = query.get("timeoutSeconds", "")
        try:
            return ListOptions(
                labels=parse_labels(query.get("labelSelector", "")),
                fields=parse_fields(query.get("fieldSelector", ""), rt.field_labels, rt.plural),
                resource_version=query.get("resourceVersion"),
                resource_version_match=query.get("resourceVersionMatch", ""),
                limit=int(limit), continue_token=query.get("continue", ""),
                allow_bookmarks=_flag(query, "allowWatchBookmarks"),
                timeout=float(timeout) if timeout else None,
                send_initial_events=_flag(query, "sendInitialEvents"))
        except ValueError as err:
            raise errors.bad_request(str(err)) from None

    # --- verbs --------------------------------------------------------------------------

    def _verb_get(self, route: Route, query: dict[str, str]) -> None:
        reg = self.server.registry
        if route.subresource == "log":
            self._proxy_log(route, query)
            return
        if route.subresource in STREAM_SUBRESOURCES:
            self._proxy_stream(route)
            return
        if route.subresource and route.subresource not in ("status", "approval"):
            raise errors.method_not_allowed(f"GET is not supported on {route.resource}")
        obj = reg.get(route.rt, route.namespace, route.name)
        if self._wants_table():
            self._send_json(200, table(route.rt.kind, [obj], {
                "resourceVersion": obj["metadata"].get("resourceVersion", "")},
                query.get("includeObject", "Metadata")))
            return
        self._send_json(200, obj)

    def _verb_list(self, route: Route, query: dict[str, str]) -> None:
        result = self.server.registry.list(route.rt, route.namespace,
                                           self._list_options(route.rt, query))
        if self._wants_table():
            for item in result["items"]:
                item["kind"] = route.rt.kind
                item["apiVersion"] = route.rt.api_version
            self._send_json(200, table(route.rt.kind, result["items"], result["metadata"],
                                       query.get("includeObject", "Metadata")))
            return
        self._send_json(200, result)

    def _verb_watch(self, route: Route, query: dict[str, str]) -> None:
        srv = self.server
        opts = self._list_options(route.rt, query)
        as_table = self._wants_table()
        include = query.get("includeObject", "Metadata")
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.send_header("Cache-Control", "no-cache, private")
        self.end_headers()
        self.wfile.flush()
        stream = srv.registry.watch(route.rt, route.namespace, opts, lambda: srv.stopping)
        dropped = False
        try:
            for event in stream:
                if event is None:
                    continue
                if event.type == "DROP":
                    dropped = True
                    break
                body = event.json()
                if as_table and event.type in ("ADDED", "MODIFIED", "DELETED"):
                    body["object"] = table(route.rt.kind, [event.object], {
                        "resourceVersion": event.object["metadata"].get("resourceVersion")},
                        include)
                data = json.dumps(body).encode() + b"\n"
                self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
                self.wfile.flush()
        finally:
            stream.close()
        if dropped:
            # A dropped stream ends without the last chunk: the client sees the cut.
            self.close_connection = True
            with contextlib.suppress(OSError):
                self.connection.shutdown(socket.SHUT_RDWR)
            return
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    def _verb_create(self, route: Route, query: dict[str, str]) -> None:
        srv = self.server
        reg = srv.registry
        body = self._body()
        rt = route.rt
        if route.subresource == "binding":
            self._send_json(201, reg.bind(route.namespace, route.name, body))
        elif route.subresource == "token":
            self._send_json(201, reg.token_request(route.namespace, route.name, body))
        elif route.subresource in STREAM_SUBRESOURCES:
            self._proxy_stream(route)
        elif route.subresource:
            raise errors.method_not_allowed(f"POST is not supported on {route.resource}")
        elif rt.kind == "TokenReview":
            answer = srv.authenticator.token_review(body)
            srv.record_review(answer)
            self._send_json(201, answer)
        elif rt.kind == "SubjectAccessReview":
            answer = answer_sar(body, srv.sar_policy)
            srv.record_review(answer)
            self._send_json(201, answer)
        else:
            obj = reg.create(rt, route.namespace, body, dry_run="dryRun" in query,
                             requester=self._requester.json())
            self._send_json(201, obj)

    def _verb_update(self, route: Route, query: dict[str, str]) -> None:
        obj = self.server.registry.update(route.rt, route.namespace, route.name, self._body(),
                                          route.subresource)
        self._send_json(200, obj)

    def _verb_patch(self, route: Route, query: dict[str, str]) -> None:
        content_type = self.headers.get("Content-Type", "").split(";")[0].strip()
        if content_type == "application/apply-patch+yaml":
            raise errors.unsupported_media_type(content_type + " (server-side apply is not "
                                                "emulated)")
        obj = self.server.registry.patch(route.rt, route.namespace, route.name, content_type,
                                         self._body(), route.subresource)
        self._send_json(200, obj)

    def _delete_options(self, query: dict[str, str]) -> DeleteOptions:
        body = self._body() or {}
        grace = body.get("gracePeriodSeconds", query.get("gracePeriodSeconds"))
        pre = body.get("preconditions") or {}
        return DeleteOptions(int(grace) if grace not in (None, "") else None,
                             pre.get("uid"), pre.get("resourceVersion"))

    def _verb_delete(self, route: Route, query: dict[str, str]) -> None:
        result = self.server.registry.delete(route.rt, route.namespace, route.name,
                                             self._delete_options(query))
        self._send_json(200, result)

    def _verb_deletecollection(self, route: Route, query: dict[str, str]) -> None:
        reg = self.server.registry
        opts = self._delete_options(query)
        listed = reg.list(route.rt, route.namespace, self._list_options(route.rt, query))
        for item in listed["items"]:
            with contextlib.suppress(APIError):
                reg.delete(route.rt, item["metadata"].get("namespace", ""),
                           item["metadata"]["name"], opts)
        self._send_json(200, {"kind": "Status", "apiVersion": "v1", "metadata": {},
                              "status": "Success"})

    # --- pods/exec, attach, portforward ---------------------------------------------------

    def _proxy_stream(self, route: Route) -> None:
        srv = self.server
        pod = srv.registry.get(route.rt, route.namespace, route.name)
        query = urllib.parse.parse_qs(urllib.parse.urlsplit(self.path).query,
                                      keep_blank_values=True)
        location = kubelet_location(route.subresource, pod, query)
        proxy_stream(self, srv.kubelet_url(pod["spec"]["nodeName"]),
                     srv.kubelet_client_context(), location,
                     f"{route.subresource} {route.namespace}/{route.name}")

    # --- pods/log -----------------------------------------------------------------------

    def _proxy_log(self, route: Route, query: dict[str, str]) -> None:
        srv = self.server
        pod = srv.registry.get(route.rt, route.namespace, route.name)
        containers = [c["name"] for c in pod["spec"].get("containers", [])]
        container = query.pop("container", "")
        if not container:
            if len(containers) != 1:
                raise errors.bad_request(
                    f"a container name must be specified for pod {route.name}, choose one of: "
                    f"[{' '.join(containers)}]")
            container = containers[0]
        node_name = pod["spec"].get("nodeName", "")
        if not node_name:
            raise errors.bad_request(f"pod {route.name} does not have a host assigned")
        base = srv.kubelet_url(node_name)
        url = (f"{base}/containerLogs/{urllib.parse.quote(route.namespace)}/"
               f"{urllib.parse.quote(route.name)}/{urllib.parse.quote(container)}")
        # Only PodLogOptions go on to the kubelet, as upstream's LogLocation builds the URL
        # (a client's ``timeout`` and the like stay here).
        forwarded = {k: v for k, v in query.items() if k in _LOG_OPTIONS}
        if forwarded:
            url += "?" + urllib.parse.urlencode(forwarded)
        target = urllib.parse.urlsplit(url)
        conn: http.client.HTTPConnection
        if target.scheme == "https":
            conn = http.client.HTTPSConnection(target.hostname or "", target.port,
                                               context=srv.kubelet_client_context(), timeout=30)
        else:
            conn = http.client.HTTPConnection(target.hostname or "", target.port, timeout=30)
        try:
            try:
                conn.request("GET", target.path + (f"?{target.query}" if target.query else ""))
                upstream = conn.getresponse()
            except OSError as err:
                raise errors.internal(f"Get \"{url}\": {err}") from None
            self.send_response(upstream.status)
            self.send_header("Content-Type", upstream.getheader("Content-Type") or "text/plain")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            while True:
                chunk = upstream.read1(65536)
                if not chunk:
                    break
                self.wfile.write(f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n")
                self.wfile.flush()
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
        finally:
            conn.close()

