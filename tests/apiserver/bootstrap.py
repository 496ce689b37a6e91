"""Bootstrap tokens and the RBAC kubeadm installs for TLS bootstrap, for the emulated server.

:func:`authenticate` is kube-apiserver's bootstrap token authenticator
(plugin/pkg/auth/authenticator/token/bootstrap): a bearer token ``<id>.<secret>`` (6 and 16
of ``[a-z0-9]``) names the Secret ``bootstrap-token-<id>`` in kube-system; it must be of type
``bootstrap.kubernetes.io/token``, not being deleted, with matching token-id and token-secret,
``usage-bootstrap-authentication: "true"``, an ``expiration`` (RFC 3339) not passed, and
``auth-extra-groups`` of the form ``system:bootstrappers:...``. The user is
``system:bootstrap:<id>`` in ``system:bootstrappers``, the extra groups and
``system:authenticated``. Anything else is not a bootstrap token (the request is 401).

:func:`kubeadm_rbac` is the cluster's RBAC for these users, as ``kubeadm init`` binds it: the
group ``system:bootstrappers:kubeadm:default-node-token`` may create/get/list/watch
CertificateSigningRequests (system:node-bootstrapper) and create
``certificatesigningrequests/nodeclient``; ``system:nodes`` may create
``certificatesigningrequests/selfnodeclient``. :func:`token_secret` is the Secret
``kubeadm token create`` writes.
"""

from __future__ import annotations

import base64
import hmac
import re
import secrets
import string
from datetime import datetime
from typing import Any

from tests.apiserver.auth import Rules, User
from tests.apiserver.store import Store

SECRET_TYPE = "bootstrap.kubernetes.io/token"
NAMESPACE = "kube-system"
SECRET_PREFIX = "bootstrap-token-"
USER_PREFIX = "system:bootstrap:"
GROUP = "system:bootstrappers"
KUBEADM_NODE_TOKEN_GROUP = "system:bootstrappers:kubeadm:default-node-token"

_TOKEN = re.compile(r"^([a-z0-9]{6})\.([a-z0-9]{16})$")
_GROUP_NAME = re.compile(r"^system:bootstrappers:[a-z0-9:-]{0,255}[a-z0-9]$")
_ALPHABET = string.ascii_lowercase + string.digits


def _data(secret: dict[str, Any], key: str) -> str:
    raw = (secret.get("data") or {}).get(key)
    if raw is None:
        return ""
    try:
        return base64.b64decode(raw).decode()
    except (ValueError, UnicodeDecodeError):
        return ""


def _expired(secret: dict[str, Any], now: float) -> bool:
    """bootstrapsecretutil.HasExpired: an unparsable expiration counts as expired."""
    text = _data(secret, "expiration")
    if not text:
        return False
    try:
        at = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return True
    if at.tzinfo is None:
        return True
    return now > at.timestamp()


def groups_of(secret: dict[str, Any]) -> list[str] | None:
    """bootstrapsecretutil.GetGroups: sorted, or None when an extra group is malformed."""
    groups = {GROUP}
    extra = _data(secret, "auth-extra-groups")
    if extra:
        for group in extra.split(","):
            if not _GROUP_NAME.match(group):
                return None
            groups.add(group)
    return sorted(groups)


def authenticate(store: Store, token: str, now: float) -> User | None:
    """The bootstrap token authenticator; None when ``token`` is no valid bootstrap token."""
    match = _TOKEN.match(token)
    if match is None:
        return None
    token_id, token_secret = match.groups()
    with store.cond:
        secret = store.get("secrets", (NAMESPACE, SECRET_PREFIX + token_id))
    if secret is None or secret.get("metadata", {}).get("deletionTimestamp"):
        return None
    if secret.get("type") != SECRET_TYPE or not secret.get("data"):
        return None
    if not hmac.compare_digest(_data(secret, "token-secret").encode(), token_secret.encode()):
        return None
    if _data(secret, "token-id") != token_id or _expired(secret, now):
        return None
    if _data(secret, "usage-bootstrap-authentication") != "true":
        return None
    groups = groups_of(secret)
    if groups is None:
        return None
    return User(USER_PREFIX + token_id, groups=(*groups, "system:authenticated"))


def is_bootstrap_user(user: User) -> bool:
    return user.name.startswith(USER_PREFIX)


def new_token() -> tuple[str, str]:
    """A fresh (token-id, token-secret), as ``kubeadm token generate``."""
    return ("".join(secrets.choice(_ALPHABET) for _ in range(6)),
            "".join(secrets.choice(_ALPHABET) for _ in range(16)))


def token_secret(token_id: str, token_secret_: str, *, expiration: str | None,
                 extra_groups: tuple[str, ...] = (KUBEADM_NODE_TOKEN_GROUP,),
                 usage_authentication: bool = True) -> dict[str, Any]:
    """The Secret a bootstrap token lives in (``expiration``: RFC 3339, or None: never)."""
    data = {"token-id": token_id, "token-secret": token_secret_,
            "usage-bootstrap-authentication": "true" if usage_authentication else "false",
            "usage-bootstrap-signing": "true"}
    if expiration is not None:
        data["expiration"] = expiration
    if extra_groups:
        data["auth-extra-groups"] = ",".join(extra_groups)
    return {"apiVersion": "v1", "kind": "Secret",
            "metadata": {"name": SECRET_PREFIX + token_id, "namespace": NAMESPACE},
            "type": SECRET_TYPE, "stringData": data}


def kubeadm_rbac() -> Rules:
    """The bindings ``kubeadm init`` makes for TLS bootstrap and client-certificate rotation
    (tests may ``allow`` more)."""
    rules = Rules()
    rules.allow(KUBEADM_NODE_TOKEN_GROUP, ("create", "get", "list", "watch"),
                "certificatesigningrequests", ("",))
    rules.allow(KUBEADM_NODE_TOKEN_GROUP, ("create",), "certificatesigningrequests",
                ("nodeclient",))
    rules.allow("system:nodes", ("create",), "certificatesigningrequests", ("selfnodeclient",))
    return rules
