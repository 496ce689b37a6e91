"""Env vars from a file an init container wrote (``valueFrom.fileKeyRef``, upstream's EnvFiles)
on the daemon on containerd: the container gets the value, a key the file lacks fails it in
upstream's words, and a file the pod made a symlink to the node's own files is never read
(SecureJoin keeps the symlink inside the volume, and the open follows no symlink)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from actors.app.testbed import BUSYBOX_IMAGE
from runtime.containerd.embedded import EmbeddedContainerd
from runtime.cri.client import CRIClient
from tests.e2e.daemon import Daemon, daemon_on, remove_every_pod, stopped_after
from tests.e2e.test_subpath_attacks import created_containers, refused
from tests.helpers import wait_for

pytestmark = pytest.mark.e2e

SHARED = {"name": "shared", "mountPath": "/shared"}


def file_ref(name: str, key: str, optional: bool | None = None) -> dict[str, Any]:
    ref: dict[str, Any] = {"volumeName": "shared", "path": "config.env", "key": key}
    if optional is not None:
        ref["optional"] = optional
    return {"name": name, "valueFrom": {"fileKeyRef": ref}}


def env_pod(name: str, write: str, env: list[dict[str, Any]], script: str) -> str:
    """A manifest: the init container runs ``write`` with the emptyDir at /shared, then the
    container, with ``env``, runs ``script`` (the volume at /shared too) and exits."""
    spec = {
        "restartPolicy": "Never", "terminationGracePeriodSeconds": 2,
        "initContainers": [{"name": "write", "image": BUSYBOX_IMAGE,
                            "command": ["sh", "-c", write], "volumeMounts": [SHARED]}],
        "containers": [{"name": "main", "image": BUSYBOX_IMAGE, "env": env,
                        "command": ["sh", "-c", script], "volumeMounts": [SHARED]}],
        "volumes": [{"name": "shared", "emptyDir": {}}],
    }
    return json.dumps({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
                       "spec": spec}, indent=1)


@pytest.fixture
def daemon(containerd: EmbeddedContainerd, cri: CRIClient) -> Iterator[Daemon]:
    with stopped_after(daemon_on(containerd, "envfiles")) as d:
        yield d
        remove_every_pod(d)


def shared_dir(daemon: Daemon, pod_name: str) -> Path:
    found = daemon.pod(pod_name)
    assert found is not None
    uid: str = found["metadata"]["uid"]
    return daemon.workdir / "root" / "pods" / uid / "volumes" / "kubernetes.io~empty-dir" / "shared"


def test_the_container_gets_the_value_the_init_container_wrote(daemon: Daemon) -> None:
    write = ("printf \"# made by init\\nDB='postgres'\\nMOTD='two\\nlines' # note\\n\" "
             "> /shared/config.env")
    script = 'printf "%s|%s|%s" "$DB" "$MOTD" "${OPT-unset}" > /shared/out'
    (daemon.manifests / "ok.yaml").write_text(env_pod(
        "ok", write, [file_ref("DB", "DB"), file_ref("MOTD", "MOTD"),
                      file_ref("OPT", "ABSENT", optional=True)], script))
    daemon.start()
    wait_for(lambda: daemon.phase("ok-e2e-node") == "Succeeded", 90.0, "ok Succeeded")
    assert (shared_dir(daemon, "ok-e2e-node") / "out").read_text() == (
        "postgres|two\nlines|unset")


def test_a_key_the_file_lacks_fails_the_container_in_upstreams_words(
        daemon: Daemon, cri: CRIClient) -> None:
    (daemon.manifests / "nokey.yaml").write_text(env_pod(
        "nokey", "echo \"OTHER='1'\" > /shared/config.env", [file_ref("DB", "DB")],
        "echo should not run"))
    daemon.start()
    message = refused(daemon, "nokey-e2e-node", "main")
    path = shared_dir(daemon, "nokey-e2e-node") / "config.env"
    assert message == f'environment variable key "DB" not found in file "{path}"'
    assert created_containers(cri, daemon, "nokey-e2e-node") == ["write"]


@pytest.mark.parametrize("target", ["absolute", "relative", "passwd"])
def test_a_symlink_to_the_nodes_files_is_never_read(daemon: Daemon, cri: CRIClient,
                                                    target: str) -> None:
    # A file on the node that would parse: were the symlink followed, DB would be its value.
    node_file = daemon.workdir / "node.env"
    node_file.write_text("DB='the node'\n")
    link = {"absolute": str(node_file), "relative": "../" * 16 + str(node_file).lstrip("/"),
            "passwd": "/etc/passwd"}[target]
    key = "root" if target == "passwd" else "DB"
    (daemon.manifests / "attack.yaml").write_text(env_pod(
        "attack", f"ln -s {link} /shared/config.env", [file_ref("DB", key)],
        'echo "$DB" > /shared/leaked'))
    daemon.start()
    assert refused(daemon, "attack-e2e-node", "main") == "couldn't parse env file"
    # The container never ran; the kubelet looked for the file inside the volume instead.
    assert created_containers(cri, daemon, "attack-e2e-node") == ["write"]
    inside = shared_dir(daemon, "attack-e2e-node") / link.lstrip("/").replace("../", "")
    assert f'failed to open environment variable file "{inside}"' in daemon.log()
    assert not (shared_dir(daemon, "attack-e2e-node") / "leaked").exists()
