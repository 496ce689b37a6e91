"""``kubelet-actors get pods`` against a daemon in cluster mode (joined to the emulated API
server, on a real containerd): the read-only port is off and the main port answers only
whom the API server vouches for, so the command authenticates as logs and exec do, with
a bearer token (TokenReview) or a client certificate, each authorized by a
SubjectAccessReview on nodes/pods."""

from __future__ import annotations

import json

import pytest

from runtime.containerd.embedded import EmbeddedContainerd
from runtime.cri.client import CRIClient
from tests.apiserver import EmulatedAPIServer
from tests.apiserver.auth import Rules
from tests.e2e.daemon import client_pair, daemon_on, joining, stopped_after
from tests.e2e.test_get_pods import NODE, get, manifest
from tests.helpers import wait_for

pytestmark = pytest.mark.e2e

STATIC = f"web-{NODE}"


def test_get_pods_with_a_token_or_a_certificate_emulated_apiserver(
        containerd: EmbeddedContainerd, cri: CRIClient) -> None:
    rules = (Rules().allow("pod-lister", verbs=("get",), subresources=("pods",), name=NODE)
             .allow("cert-lister", verbs=("get",), subresources=("pods",), name=NODE))
    with EmulatedAPIServer(sar_policy=rules) as server:
        daemon = daemon_on(containerd, "get-pods-cluster")
        (daemon.manifests / "web.json").write_text(
            manifest("web", "trap 'exit 0' TERM; while true; do sleep 1; done"))
        joined = joining(server, daemon.workdir)
        daemon.flags += (*joined.flags, "--read-only-port", "0")
        lister = client_pair(server, daemon.workdir, "cert-lister")
        server.add_token("pods-token", "pod-lister")
        https = ("--server", f"https://127.0.0.1:{daemon.port}",
                 "--certificate-authority", str(joined.ca))

        def running() -> bool:
            done = get("pods", "-o", "json", *https, "--token", "pods-token")
            if done.returncode != 0:  # not serving yet
                assert "cannot reach the kubelet" in done.stderr, done.stderr
                return False
            items = json.loads(done.stdout)["items"]
            return [(p["metadata"]["name"], p["status"].get("phase")) for p in items] == [
                (STATIC, "Running")]

        # The read-only port is off: the command itself says when the daemon serves.
        with stopped_after(daemon):
            daemon.start(wait=False)
            wait_for(running, 90, "the static pod Running in get pods", interval=0.5)
            done = get("pods", *https, "--token", "pods-token")
            assert done.returncode == 0, done.stderr
            lines = [line.split() for line in done.stdout.splitlines()]
            assert lines[0] == ["NAME", "READY", "STATUS", "RESTARTS", "AGE"]
            assert [line[:4] for line in lines[1:]] == [[STATIC, "1/1", "Running", "0"]]
            done = get("pods", "-o", "wide", *https, *lister)
            assert done.returncode == 0, done.stderr
            assert done.stdout.splitlines()[1].split()[6] == NODE
            forged = get("pods", *https, "--token", "forged")
            assert (forged.returncode, forged.stderr.strip()) == (
                1, "Error from server (Unauthorized): Unauthorized")
            anonymous = get("pods", *https)  # anonymous is off in cluster mode
            assert anonymous.returncode == 1 and "Unauthorized" in anonymous.stderr
            assert [r["spec"]["token"] for r in server.reviews_of("TokenReview")][-1] == (
                "forged")

            def gone() -> bool:
                done = get("pods", "-o", "json", *https, "--token", "pods-token")
                return done.returncode == 0 and not json.loads(done.stdout)["items"]

            for path in daemon.manifests.iterdir():
                path.unlink()
            wait_for(gone, 90, "the static pod gone")
