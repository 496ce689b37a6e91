"""``--kubeconfig``: read a kubeconfig file into the one server and user the kubelet talks as.

What the kubeconfig format allows (client-go's clientcmd, v1 Config): clusters (``server``,
``certificate-authority``, ``certificate-authority-data``, ``insecure-skip-tls-verify``,
``tls-server-name``), users (``client-certificate``/``-data``, ``client-key``/``-data``,
``token``, ``tokenFile``, ``exec`` credential plugins, ``username``/``password``), contexts
and ``current-context``. Relative paths are relative to the kubeconfig's directory, as
upstream resolves them.

Checks are upstream's (clientcmd's validation, as ``kubectl`` reports it): a ``-data`` field
and its file both set, a client certificate without a key, more than one of token and basic
auth, an exec plugin without ``apiVersion``, ``command`` or (v1) ``interactiveMode``, a CA with
``insecure-skip-tls-verify``. Where kubectl would prompt (a context naming a user that does
not exist) a kubelet cannot: that is an error too. Every error is a
:class:`~runtime.errors.KubeconfigError` naming the file and the field.
"""

from __future__ import annotations

import base64
import binascii
import os
import urllib.parse
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from runtime.errors import KubeconfigError

__all__ = ["EXEC_API_VERSIONS", "ExecConfig", "RestConfig", "load_kubeconfig"]

EXEC_API_VERSIONS = ("client.authentication.k8s.io/v1", "client.authentication.k8s.io/v1beta1")
"""The ExecCredential versions client-go still speaks (v1alpha1 was removed in 1.24)."""

_INTERACTIVE_MODES = ("Never", "IfAvailable", "Always")


@dataclass(frozen=True)
class ExecConfig:
    """A user's ``exec`` credential plugin (client-go's ExecConfig)."""

    command: str
    api_version: str
    args: tuple[str, ...] = ()
    env: tuple[tuple[str, str], ...] = ()
    install_hint: str = ""
    provide_cluster_info: bool = False
    interactive_mode: str = "IfAvailable"
    workdir: str = ""
    """The kubeconfig's directory: a relative ``command`` with a slash is resolved there."""


@dataclass(frozen=True)
class RestConfig:
    """One API server and one user: what a client needs (client-go's rest.Config).

    Certificate and key material is held as PEM bytes (files are read at load time, so a
    missing file fails at start, as upstream's validation does); a ``token_file`` is re-read
    by the transport while it runs, as client-go does.
    """

    server: str
    source: str = ""
    context: str = ""
    ca_data: bytes | None = None
    ca_file: str = ""
    """The file ``certificate-authority`` named (resolved), "" when the CA came as data."""
    insecure_skip_tls_verify: bool = False
    tls_server_name: str = ""
    cert_data: bytes | None = field(default=None, repr=False)
    key_data: bytes | None = field(default=None, repr=False)
    token: str = field(default="", repr=False)
    token_file: str = ""
    username: str = ""
    password: str = field(default="", repr=False)
    exec: ExecConfig | None = None

    @property
    def host(self) -> str:
        return urllib.parse.urlsplit(self.server).hostname or ""

    @property
    def scheme(self) -> str:
        return urllib.parse.urlsplit(self.server).scheme


def _fail(path: str, where: str, why: str) -> KubeconfigError:
    return KubeconfigError(f"kubeconfig {path}: {where}: {why}" if where else
                           f"kubeconfig {path}: {why}", file=path, field=where)


class _Reader:
    """Walks one parsed kubeconfig, naming fields as ``users[0].user.token`` in errors."""

    def __init__(self, path: str, doc: dict[str, Any]) -> None:
        self.path = path
        self.dir = os.path.dirname(os.path.abspath(path))
        self.doc = doc

    def fail(self, where: str, why: str) -> KubeconfigError:
        return _fail(self.path, where, why)

    def named(self, section: str, inner: str, name: str, wanted_by: str
              ) -> tuple[str, dict[str, Any]]:
        """The ``inner`` mapping of the entry of ``section`` called ``name``, and its path."""
        entries = self.doc.get(section) or []
        if not isinstance(entries, list):
            raise self.fail(section, "must be a list")
        for i, entry in enumerate(entries):
            if not isinstance(entry, dict):
                raise self.fail(f"{section}[{i}]", "must be a mapping with name and "
                                f"{inner}")
            if entry.get("name") == name:
                body = entry.get(inner) or {}
                if not isinstance(body, dict):
                    raise self.fail(f"{section}[{i}].{inner}", "must be a mapping")
                return f"{section}[{i}].{inner}", body
        raise self.fail(wanted_by, f'{section[:-1]} "{name}" is not in {section}')

    def text(self, body: dict[str, Any], where: str, key: str) -> str:
        value = body.get(key)
        if value is None:
            return ""
        if not isinstance(value, str):
            raise self.fail(f"{where}.{key}", f"must be a string, not {type(value).__name__}")
        return value

    def flag(self, body: dict[str, Any], where: str, key: str) -> bool:
        value = body.get(key, False)
        if not isinstance(value, bool):
            raise self.fail(f"{where}.{key}", "must be true or false")
        return value

    def resolve(self, file: str) -> str:
        return file if os.path.isabs(file) else os.path.join(self.dir, file)

    def material(self, body: dict[str, Any], where: str, data_key: str, file_key: str,
                 owner: str) -> bytes | None:
        """``<x>-data`` (base64) or the file ``<x>`` names, read now; both set is an error."""
        data = self.text(body, where, data_key)
        file = self.text(body, where, file_key)
        if data and file:
            # clientcmd's wording: kubectl refuses such a kubeconfig.
            raise self.fail(f"{where}.{data_key}",
                            f"{data_key} and {file_key} are both specified for {owner}")
        if data:
            try:
                return base64.b64decode(data, validate=True)
            except (binascii.Error, ValueError) as err:
                raise self.fail(f"{where}.{data_key}", f"not valid base64: {err}") from err
        if file:
            full = self.resolve(file)
            try:
                return Path(full).read_bytes()
            except OSError as err:
                raise self.fail(f"{where}.{file_key}",
                                f"unable to read {file_key} {full} for {owner}: "
                                f"{err.strerror or err}") from err
        return None


def load_kubeconfig(path: str | os.PathLike[str], context: str = "") -> RestConfig:
    """The server and credentials of ``context`` (default: ``current-context``) in the
    kubeconfig at ``path``; :class:`KubeconfigError` naming file and field if unusable."""
    path = os.fspath(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as err:
        raise _fail(path, "", f"cannot read: {err.strerror or err}") from err
    except UnicodeDecodeError as err:
        raise _fail(path, "", f"not UTF-8 text: {err}") from err
    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError as err:
        raise _fail(path, "", f"not YAML: {err}") from err
    if doc is None:
        raise _fail(path, "", "empty: no configuration has been provided")
    if not isinstance(doc, dict):
        raise _fail(path, "", "must be a mapping (kind: Config)")
    reader = _Reader(path, doc)
    kind = doc.get("kind", "Config")
    if kind not in ("Config", None, ""):
        raise reader.fail("kind", f'must be "Config", not "{kind}"')

    name = context or reader.text(doc, "", "current-context")
    if not name:
        raise reader.fail("current-context", "not set, and no context was asked for")
    wanted_by = "current-context" if not context else f"context {context!r}"
    ctx_where, ctx = reader.named("contexts", "context", name, wanted_by)
    cluster_name = reader.text(ctx, ctx_where, "cluster")
    if not cluster_name:
        raise reader.fail(f"{ctx_where}.cluster", "required")
    user_name = reader.text(ctx, ctx_where, "user")

    cl_where, cluster = reader.named("clusters", "cluster", cluster_name,
                                     f"{ctx_where}.cluster")
    server = reader.text(cluster, cl_where, "server")
    if not server:
        raise reader.fail(f"{cl_where}.server", f'no server found for cluster "{cluster_name}"')
    parts = urllib.parse.urlsplit(server)
    if parts.scheme not in ("https", "http") or not parts.hostname:
        raise reader.fail(f"{cl_where}.server",
                          f'"{server}" is not an http:// or https:// URL with a host')
    insecure = reader.flag(cluster, cl_where, "insecure-skip-tls-verify")
    ca = reader.material(cluster, cl_where, "certificate-authority-data",
                         "certificate-authority", cluster_name)
    if insecure and ca is not None:
        raise reader.fail(f"{cl_where}.insecure-skip-tls-verify",
                          "specifying a root certificates file with the insecure flag is "
                          "not allowed")
    tls_server_name = reader.text(cluster, cl_where, "tls-server-name")
    ca_file = reader.text(cluster, cl_where, "certificate-authority")
    ca_file = reader.resolve(ca_file) if ca_file else ""

    user: dict[str, Any] = {}
    us_where = ""
    if user_name:
        us_where, user = reader.named("users", "user", user_name, f"{ctx_where}.user")
    cert = reader.material(user, us_where, "client-certificate-data", "client-certificate",
                           user_name)
    key = reader.material(user, us_where, "client-key-data", "client-key", user_name)
    if cert is not None and key is None:
        raise reader.fail(f"{us_where}.client-key",
                          f"client-key-data or client-key must be specified for {user_name} "
                          "to use the clientCert authentication method")
    if key is not None and cert is None:
        raise reader.fail(f"{us_where}.client-certificate",
                          f"client-certificate-data or client-certificate must be specified "
                          f"for {user_name} to use the clientCert authentication method")
    token = reader.text(user, us_where, "token")
    token_file = reader.text(user, us_where, "tokenFile")
    username = reader.text(user, us_where, "username")
    password = reader.text(user, us_where, "password")
    methods = [m for m, used in (("token", bool(token or token_file)),
                                 ("basicAuth", bool(username or password))) if used]
    if len(methods) > 1:
        raise reader.fail(us_where, f"more than one authentication method found for "
                          f"{user_name}; found [{' '.join(methods)}], only one is allowed")
    if token_file:
        token_file = reader.resolve(token_file)
        if not os.access(token_file, os.R_OK):
            raise reader.fail(f"{us_where}.tokenFile",
                              f"unable to read tokenFile {token_file} for {user_name}")
    if user.get("auth-provider"):
        raise reader.fail(f"{us_where}.auth-provider",
                          "auth-provider plugins were removed from client-go in 1.26; use an "
                          "exec credential plugin")
    exec_config = _exec(reader, user.get("exec"), f"{us_where}.exec", user_name)
    return RestConfig(server=server.rstrip("/"), source=path, context=name, ca_data=ca,
                      ca_file=ca_file, insecure_skip_tls_verify=insecure,
                      tls_server_name=tls_server_name,
                      cert_data=cert, key_data=key, token=token, token_file=token_file,
                      username=username, password=password, exec=exec_config)


def _exec(reader: _Reader, raw: Any, where: str, user_name: str) -> ExecConfig | None:
    if raw is None:
        return None
    if not isinstance(raw, dict):
        raise reader.fail(where, "must be a mapping")
    problems = []
    api_version = reader.text(raw, where, "apiVersion")
    command = reader.text(raw, where, "command")
    mode = reader.text(raw, where, "interactiveMode")
    if not api_version:
        problems.append(("apiVersion", f"apiVersion must be specified for {user_name} to use "
                         "exec authentication plugin"))
    elif api_version not in EXEC_API_VERSIONS:
        problems.append(("apiVersion", f'"{api_version}" is not one of '
                         f"{', '.join(EXEC_API_VERSIONS)}"))
    if not command:
        problems.append(("command", f"command must be specified for {user_name} to use exec "
                         "authentication plugin"))
    if not mode and api_version.endswith("/v1"):
        problems.append(("interactiveMode", f"interactiveMode must be specified for "
                         f"{user_name} to use exec authentication plugin"))
    elif mode and mode not in _INTERACTIVE_MODES:
        problems.append(("interactiveMode", f'invalid interactiveMode "{mode}": must be one '
                         f"of {', '.join(_INTERACTIVE_MODES)}"))
    if problems:
        first = problems[0][0]
        raise reader.fail(f"{where}.{first}", "; ".join(why for _, why in problems))
    args = raw.get("args") or []
    if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
        raise reader.fail(f"{where}.args", "must be a list of strings")
    env: list[tuple[str, str]] = []
    for i, item in enumerate(raw.get("env") or []):
        if not isinstance(item, dict) or not isinstance(item.get("name"), str):
            raise reader.fail(f"{where}.env[{i}]", "must be a mapping with name and value")
        env.append((item["name"], str(item.get("value", ""))))
    return ExecConfig(command=command, api_version=api_version, args=tuple(args),
                      env=tuple(env), install_hint=reader.text(raw, where, "installHint"),
                      provide_cluster_info=reader.flag(raw, where, "provideClusterInfo"),
                      interactive_mode=mode or "IfAvailable", workdir=reader.dir)
