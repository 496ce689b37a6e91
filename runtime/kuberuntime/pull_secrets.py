"""Registry credentials from a pod's ``imagePullSecrets`` (cluster mode).

As upstream: the kubelet reads each secret (getPullSecretsForPod: one it cannot read is
logged, "Unable to retrieve pull secret, the image pull may not succeed", and skipped),
builds a keyring from the ``kubernetes.io/dockerconfigjson`` (``.dockerconfigjson``,
its ``auths``) and ``kubernetes.io/dockercfg`` (``.dockercfg``) secrets
(pkg/credentialprovider/secrets, config.go) and looks the image's repository up in it
(keyring.go BasicDockerKeyring.Lookup): a key matches when its host matches part by part
(globs allowed, ports equal) and its path is a prefix of the image's; most specific keys
first; an image without a registry host is Docker Hub's (``index.docker.io``). The pull
tries each matching credential in turn (kuberuntime_image.go pullImage).
"""

from __future__ import annotations

import base64
import fnmatch
import json
from collections.abc import Iterable, Mapping
from typing import Any
from urllib.parse import urlsplit

from loguru import logger

from runtime.cri.types import AuthConfig
from runtime.kuberuntime.object_source import ObjectSource
from runtime.pod.model import Pod

__all__ = ["DEFAULT_REGISTRY", "Keyring", "pull_credentials"]

DEFAULT_REGISTRY = "index.docker.io"


def _parse(key: str) -> tuple[str, str, str]:
    """(host, port, path) of a schemeless or https:// key."""
    if not key.startswith(("http://", "https://")):
        key = "https://" + key
    parts = urlsplit(key)
    host = parts.hostname or ""
    port = str(parts.port or "")
    return host, port, parts.path


def urls_match(glob: str, target: str) -> bool:
    """upstream URLsMatch."""
    g_host, g_port, g_path = _parse(glob)
    t_host, t_port, t_path = _parse(target)
    g_parts, t_parts = g_host.split("."), t_host.split(".")
    if len(g_parts) != len(t_parts) or g_port != t_port:
        return False
    if not all(fnmatch.fnmatchcase(t, g) for g, t in zip(g_parts, t_parts, strict=True)):
        return False
    return t_path.startswith(g_path)


def _auth(entry: Mapping[str, Any], server: str) -> AuthConfig:
    username = str(entry.get("username") or "")
    password = str(entry.get("password") or "")
    if entry.get("auth") and not username:
        decoded = base64.b64decode(str(entry["auth"])).decode(errors="replace")
        username, _, password = decoded.partition(":")
    return AuthConfig(username=username, password=password, server_address=server,
                      identity_token=str(entry.get("identitytoken") or ""))


class Keyring:
    """BasicDockerKeyring: credentials by registry key."""

    def __init__(self) -> None:
        self._creds: dict[str, list[AuthConfig]] = {}

    def add(self, config: Mapping[str, Any]) -> None:
        """A docker config's ``{registry: {auth|username/password}}`` entries."""
        for location, entry in config.items():
            if not isinstance(entry, Mapping):
                continue
            host, port, path = _parse(location)
            if host == DEFAULT_REGISTRY and path == "/v1/":
                path = ""
            key = host + (f":{port}" if port else "") + path.rstrip("/")
            self._creds.setdefault(key, []).append(_auth(entry, location))

    def lookup(self, image: str) -> list[AuthConfig]:
        """The credentials matching ``image``'s repository, most specific first."""
        repo = _repository(image)
        found: list[AuthConfig] = []
        for key in sorted(self._creds, reverse=True):  # most specific first
            if urls_match(key, repo):
                found += self._creds[key]
        if not found and _is_default(image):
            found = list(self._creds.get(DEFAULT_REGISTRY, []))
        return found


def _is_default(image: str) -> bool:
    first = image.split("/", 1)[0]
    return "/" not in image or not ("." in first or ":" in first or first == "localhost")


def _repository(image: str) -> str:
    """The image without tag or digest, with Docker Hub's host when it names none."""
    name = image.split("@", 1)[0]
    last = name.rsplit("/", 1)
    if ":" in last[-1]:
        name = name[: name.rfind(":")]
    if _is_default(image):
        name = f"{DEFAULT_REGISTRY}/{name if '/' in name else 'library/' + name}"
    return name


def keyring_from_secrets(secrets: Iterable[Mapping[str, Any]]) -> Keyring:
    """MakeDockerKeyring from the pod's pull secrets."""
    keyring = Keyring()
    for secret in secrets:
        data = secret.get("data") or {}
        try:
            if ".dockerconfigjson" in data:
                parsed = json.loads(base64.b64decode(data[".dockerconfigjson"]))
                keyring.add(parsed.get("auths") or {})
            elif ".dockercfg" in data:
                keyring.add(json.loads(base64.b64decode(data[".dockercfg"])))
        except (ValueError, AttributeError):
            continue
    return keyring


def pull_credentials(objects: ObjectSource, pod: Pod, image: str) -> list[AuthConfig]:
    """The credentials to try for ``image``, in order; empty: pull anonymously."""
    secrets: list[Mapping[str, Any]] = []
    for ref in pod.spec.image_pull_secrets:
        answer = objects.get("secret", pod.metadata.namespace, ref.name)
        if "object" not in answer:
            logger.bind(pod=pod.metadata.name, uid=pod.uid, container="").info(
                "Unable to retrieve pull secret {}/{} for the pod, the image pull may not "
                "succeed", pod.metadata.namespace, ref.name)
            continue
        secrets.append(answer["object"])
    if not secrets:
        return []
    return keyring_from_secrets(secrets).lookup(image)
