"""TLS bootstrap: a client certificate from a bootstrap kubeconfig, before the kubelet
starts (upstream's pkg/kubelet/certificate/bootstrap LoadClientCert).

When ``--kubeconfig``'s file is missing, or its client certificate cannot be read or has
expired (``is_client_config_still_valid``), the bootstrap kubeconfig's user (a bootstrap
token) asks for one:
- the key: the current pair's in ``--cert-dir`` if one is there, else
  ``kubelet-client.key.tmp`` in ``--cert-dir`` (made now, ECDSA P-256, and kept until the
  certificate is stored, so a kubelet restarted while it waits asks again with the same key
  and finds the same request);
- waits up to a minute for ``/healthz`` to answer;
- a CSR for CN ``system:node:<node>``, O ``system:nodes``, signer
  ``kubernetes.io/kube-apiserver-client-kubelet``, usages digital signature and client auth
  (and key encipherment for an RSA key), named ``node-csr-<digest>`` (csr.digested_name);
- waits up to an hour for it to be approved and issued;
- stores it as ``kubelet-client-<time>.pem`` with ``kubelet-client-current.pem`` pointing at
  it (certificate_store.FileStore), removes the temporary key, and writes ``--kubeconfig``:
  the bootstrap kubeconfig's server and CA, and ``client-certificate`` and ``client-key``
  both ``<cert-dir>/kubelet-client-current.pem`` (writeKubeconfigFromBootstrapping).
"""

from __future__ import annotations

import base64
import os
import random
import threading
from collections.abc import Callable
from typing import Any

import yaml
from loguru import logger

from runtime import errors
from runtime.clock import Clock
from runtime.kubeapi.certificate_store import FileStore, load_pair_file, utc
from runtime.kubeapi.client import KubeClient
from runtime.kubeapi.csr import (
    CLIENT_KUBELET_SIGNER,
    client_usages,
    digested_name,
    generate_key,
    load_private_key,
    make_csr,
    node_template,
    request_certificate,
    wait_for_certificate,
)
from runtime.kubeapi.kubeconfig import RestConfig, load_kubeconfig
from runtime.kubeapi.transport import Transport

__all__ = ["BOOTSTRAP_WAIT", "CLIENT_PREFIX", "TMP_PRIVATE_KEY_FILE",
           "is_client_config_still_valid", "load_client_cert",
           "write_kubeconfig_from_bootstrapping"]

TMP_PRIVATE_KEY_FILE = "kubelet-client.key.tmp"
CLIENT_PREFIX = "kubelet-client"
BOOTSTRAP_WAIT = 3600.0
"""requestNodeCertificate waits an hour for the certificate."""
SERVER_WAIT = 60.0
"""waitForServer's deadline: a minute of /healthz every 2 s (jitter 0.2)."""


def is_client_config_still_valid(kubeconfig_path: str, clock: Clock) -> bool:
    """Whether the kubeconfig exists and its client certificate reads and has not
    expired; a file that cannot even be looked at is an error (bootstrap must stop)."""
    try:
        os.stat(kubeconfig_path)
    except FileNotFoundError:
        return False
    except OSError as err:
        raise errors.CertificateError(f"error reading existing bootstrap kubeconfig "
                                      f"{kubeconfig_path}: {err.strerror or err}") from err
    try:
        rest = load_kubeconfig(kubeconfig_path)
    except errors.KubeconfigError as err:
        logger.error("unable to read existing bootstrap client config from {}: {}",
                     kubeconfig_path, err)
        return False
    if not rest.cert_data or not rest.key_data:
        logger.error("unable to read TLS certificates from existing bootstrap client config "
                     "read from {}: no client certificate", kubeconfig_path)
        return False
    from cryptography import x509

    try:
        certs = x509.load_pem_x509_certificates(rest.cert_data)
    except ValueError as err:
        logger.error("unable to load TLS certificates from existing bootstrap client config "
                     "read from {}: {}", kubeconfig_path, err)
        return False
    now = clock.now()
    for cert in certs:
        if now > cert.not_valid_after_utc.timestamp():
            logger.error("part of the existing bootstrap client certificate in {} is expired: "
                         "{}", kubeconfig_path, utc(cert.not_valid_after_utc.timestamp()))
            return False
    return True


def write_kubeconfig_from_bootstrapping(bootstrap: RestConfig, kubeconfig_path: str,
                                        pem_path: str) -> None:
    """The kubeconfig at ``kubeconfig_path``: the bootstrap's cluster, the pair at
    ``pem_path`` as its user (file mode 0600, written whole then renamed)."""
    cluster: dict[str, Any] = {"server": bootstrap.server}
    if bootstrap.insecure_skip_tls_verify:
        cluster["insecure-skip-tls-verify"] = True
    if bootstrap.ca_file:
        cluster["certificate-authority"] = bootstrap.ca_file
    elif bootstrap.ca_data:
        cluster["certificate-authority-data"] = base64.b64encode(bootstrap.ca_data).decode()
    doc = {
        "apiVersion": "v1", "kind": "Config",
        "clusters": [{"name": "default-cluster", "cluster": cluster}],
        "users": [{"name": "default-auth", "user": {"client-certificate": pem_path,
                                                    "client-key": pem_path}}],
        "contexts": [{"name": "default-context", "context": {
            "cluster": "default-cluster", "user": "default-auth", "namespace": "default"}}],
        "current-context": "default-context",
        "preferences": {},
    }
    directory = os.path.dirname(os.path.abspath(kubeconfig_path))
    tmp = kubeconfig_path + ".tmp"
    try:
        os.makedirs(directory, exist_ok=True)
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            yaml.safe_dump(doc, f, sort_keys=False)
        os.replace(tmp, kubeconfig_path)
    except OSError as err:
        raise errors.CertificateError(f"unable to write kubeconfig {kubeconfig_path}: "
                                      f"{err.strerror or err}") from err


def _load_or_generate_key(path: str) -> bytes:
    """keyutil.LoadOrGenerateKeyFile: the key in ``path``, or a new one written there."""
    if os.path.exists(path):
        try:
            with open(path, "rb") as f:
                data = f.read()
            load_private_key(data, path)
            return data
        except (OSError, errors.CertificateError) as err:
            raise errors.CertificateError(f"error loading key from {path}: {err}") from err
    _, pem = generate_key()
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "wb") as f:
            f.write(pem)
    except OSError as err:
        raise errors.CertificateError(f"error writing key to {path}: "
                                      f"{err.strerror or err}") from err
    return pem


def wait_for_server(transport: Transport, clock: Clock, deadline: float = SERVER_WAIT,
                    rng: random.Random | None = None,
                    stop: threading.Event | None = None) -> bool:
    """Poll ``/healthz`` (1 s timeout) every 2 s (+20% jitter) until it answers or
    ``deadline`` passes; whether it answered."""
    rng = rng or random.Random()
    until = clock.monotonic() + deadline
    while clock.monotonic() < until and not (stop is not None and stop.is_set()):
        try:
            transport.request("GET", "/healthz", timeout=1.0)
            return True
        except errors.APIError as err:
            logger.info("Failed to connect to apiserver: {}", err)
        clock.sleep(2.0 * (1.0 + 0.2 * rng.random()))
    return False


def request_node_certificate(client: KubeClient, key_pem: bytes, node_name: str,
                             clock: Clock, stop: threading.Event | None = None,
                             wait: float = BOOTSTRAP_WAIT) -> bytes:
    """requestNodeCertificate: the CSR of the node's client certificate, made under its
    digested name, and the certificate issued for it."""
    key = load_private_key(key_pem, "the bootstrap key")
    template = node_template(node_name)
    try:
        csr_pem = make_csr(key, template)
    except (ValueError, TypeError) as err:
        raise errors.CertificateError(f"unable to generate certificate request: {err}"
                                      ) from err
    usages = client_usages(key)
    name = digested_name(key.public_key(), template, usages)
    req_name, uid = request_certificate(client, csr_pem, name, CLIENT_KUBELET_SIGNER, None,
                                        usages, key, clock.now())
    logger.bind(csr=req_name).info("Waiting for client certificate to be issued")
    return wait_for_certificate(client, req_name, uid, wait, clock, stop)


def load_client_cert(kubeconfig_path: str, bootstrap_path: str, cert_dir: str,
                     node_name: str, clock: Clock, stop: threading.Event | None = None,
                     wait: float = BOOTSTRAP_WAIT, server_wait: float = SERVER_WAIT,
                     client_for: Callable[[RestConfig], KubeClient] | None = None) -> bool:
    """LoadClientCert: a client certificate for ``--kubeconfig`` from the bootstrap
    kubeconfig when it has none valid; True when it bootstrapped, False when the
    kubeconfig was good. Raises CertificateError (and ConfigError for an unusable
    bootstrap kubeconfig) naming the file."""
    if is_client_config_still_valid(kubeconfig_path, clock):
        logger.info("Kubeconfig {} exists and is valid, skipping bootstrap", kubeconfig_path)
        return False
    logger.info("Using bootstrap kubeconfig {} to generate TLS client cert, key and "
                "kubeconfig file", bootstrap_path)
    try:
        bootstrap = load_kubeconfig(bootstrap_path)
    except errors.KubeconfigError as err:
        raise errors.KubeconfigError(f"unable to load bootstrap kubeconfig: {err}",
                                     file=err.file, field=err.field) from err
    store = FileStore(CLIENT_PREFIX, cert_dir, cert_dir, clock=clock)
    key_pem: bytes | None = None
    try:
        key_pem = store.current().key_pem
    except errors.CertificateError:
        key_pem = None
    key_path = os.path.join(cert_dir, TMP_PRIVATE_KEY_FILE)
    if key_pem is None:
        logger.info("No valid private key and/or certificate found, reusing existing private "
                    "key or creating a new one")
        key_pem = _load_or_generate_key(key_path)
    transport = Transport(bootstrap, clock=clock)
    try:
        if not wait_for_server(transport, clock, server_wait, stop=stop):
            logger.info("Error waiting for apiserver to come up: timed out waiting to "
                        "connect to apiserver")
        client = client_for(bootstrap) if client_for is not None else KubeClient(transport)
        cert_pem = request_node_certificate(client, key_pem, node_name, clock, stop, wait)
    finally:
        transport.close()
    store.update(cert_pem, key_pem)
    try:
        os.remove(key_path)
    except FileNotFoundError:
        pass  # already gone: nothing left to clean up
    except OSError as err:
        logger.info("Failed cleaning up private key file {}: {}", key_path, err)
    write_kubeconfig_from_bootstrapping(bootstrap, kubeconfig_path, store.current_path())
    pair = load_pair_file(store.current_path(), store.current_path())
    logger.bind(serial=f"{pair.serial:x}").info(
        "bootstrapped: client certificate {} (valid until {}) and kubeconfig {} written",
        os.path.realpath(store.current_path()), utc(pair.not_after), kubeconfig_path)
    return True
