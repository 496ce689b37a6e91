"""The self-signed serving pair made in a child process beside a daemon's first start
(actors.app.http.self_signed, tls.begin_serving_pair): its pair is the one used, a
failed child falls back to making it here, and no exit path leaves the child behind."""

from __future__ import annotations

import contextlib
import datetime
import functools
import ssl
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NoReturn

import pytest
from cryptography import x509
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.x509.oid import NameOID
from loguru import logger

from actors.app import main as main_module
from actors.app.http import self_signed
from actors.app.http import tls as tls_module
from actors.app.http.self_signed import PairRequest, SelfSignedChild
from actors.app.http.tls import (
    TLSSettings,
    begin_serving_pair,
    needs_self_signed_pair,
    server_context,
    serving_pair,
)
from actors.app.node import node_ip
from runtime.errors import CRIError

NODE = "node-a"


def _not_here(host: str, ips: tuple[str, ...] = ()) -> NoReturn:
    raise AssertionError("the pair was made in the daemon's process, not the child")


@contextlib.contextmanager
def _warnings() -> Iterator[list[str]]:
    seen: list[str] = []
    sink = logger.add(lambda m: seen.append(str(m)), level="WARNING", format="{message}")
    try:
        yield seen
    finally:
        logger.remove(sink)


def _check_pair(cert: str, key: str, settings: TLSSettings) -> None:
    """The pair loads, matches, and has upstream's fields (as the tls tests check)."""
    assert (cert, key) == (str(Path(settings.cert_dir) / "kubelet.crt"),
                           str(Path(settings.cert_dir) / "kubelet.key"))
    assert Path(key).stat().st_mode & 0o777 == 0o600
    assert Path(cert).stat().st_mode & 0o777 == 0o644
    ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER).load_cert_chain(cert, key)  # key matches cert
    server_context(settings, cert, key)
    serving, ca = x509.load_pem_x509_certificates(Path(cert).read_bytes())
    name = serving.subject.get_attributes_for_oid(NameOID.COMMON_NAME)[0].value
    assert str(name).startswith(f"{NODE}@")
    assert str(ca.subject.get_attributes_for_oid(NameOID.COMMON_NAME)[0].value).startswith(
        f"{NODE}-ca@")
    assert serving.issuer == ca.subject
    for c in (serving, ca):
        public = c.public_key()
        assert isinstance(public, rsa.RSAPublicKey) and public.key_size == 2048
        assert c.not_valid_after_utc - c.not_valid_before_utc == datetime.timedelta(days=365)
    sans = serving.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert sans.get_values_for_type(x509.DNSName) == [NODE]
    assert [str(ip) for ip in sans.get_values_for_type(x509.IPAddress)] == list(
        settings.node_ips)


def test_the_childs_pair_is_the_one_written_and_used(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tls_module, "self_signed_pair", _not_here)
    settings = TLSSettings(cert_dir=str(tmp_path / "pki"), node_name=NODE,
                           node_ips=("10.0.0.7",))
    with begin_serving_pair(settings) as child:
        assert child is not None
        cert, key = serving_pair(settings)
    _check_pair(cert, key, settings)
    assert child.returncode == 0  # reaped, and it finished its work
    assert tls_module._BEGUN == {}
    # A restart finds the pair: no child, and the files are read back as they are.
    before = Path(cert).read_bytes()
    with begin_serving_pair(settings) as again:
        assert again is None
        assert serving_pair(settings) == (cert, key)
    assert Path(cert).read_bytes() == before


def test_a_failed_child_is_logged_and_the_pair_made_here(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    made: list[str] = []
    make = self_signed.self_signed_pair

    def here(host: str, ips: tuple[str, ...] = ()) -> tuple[bytes, bytes]:
        made.append(host)
        return make(host, ips)

    monkeypatch.setattr(tls_module, "self_signed_pair", here)
    monkeypatch.setattr(tls_module, "SelfSignedChild", functools.partial(
        SelfSignedChild, module="actors.app.http.no_such_module"))
    settings = TLSSettings(cert_dir=str(tmp_path / "pki"), node_name=NODE)
    with _warnings() as seen, begin_serving_pair(settings) as child:
        assert child is not None
        cert, key = serving_pair(settings)
    assert made == [NODE]
    assert any("serving pair's child" in w and "failed" in w for w in seen), seen
    _check_pair(cert, key, settings)


def test_a_child_asked_for_other_names_is_not_used(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    made: list[tuple[str, ...]] = []
    make = self_signed.self_signed_pair

    def here(host: str, ips: tuple[str, ...] = ()) -> tuple[bytes, bytes]:
        made.append(ips)
        return make(host, ips)

    monkeypatch.setattr(tls_module, "self_signed_pair", here)
    guessed = TLSSettings(cert_dir=str(tmp_path / "pki"), node_name=NODE,
                          node_ips=("10.0.0.7",))
    actual = TLSSettings(cert_dir=str(tmp_path / "pki"), node_name=NODE,
                         node_ips=("10.0.0.8",))
    with begin_serving_pair(guessed) as child:
        assert child is not None
        cert, key = serving_pair(actual)
    assert made == [("10.0.0.8",)]
    _check_pair(cert, key, actual)


def test_no_child_when_the_flags_name_a_pair_or_the_cert_dir_has_one(tmp_path: Path) -> None:
    given = TLSSettings(cert_dir=str(tmp_path), node_name=NODE, cert_file="a.crt",
                        key_file="a.key")
    assert not needs_self_signed_pair(given)
    with begin_serving_pair(given) as child:
        assert child is None
    settings = TLSSettings(cert_dir=str(tmp_path), node_name=NODE)
    assert needs_self_signed_pair(settings)
    serving_pair(settings)
    assert not needs_self_signed_pair(settings)


def test_an_exception_in_the_start_kills_and_reaps_the_child(tmp_path: Path) -> None:
    settings = TLSSettings(cert_dir=str(tmp_path / "pki"), node_name=NODE)
    begun: list[SelfSignedChild] = []
    with pytest.raises(RuntimeError, match="the start failed"), \
            begin_serving_pair(settings) as child:
        assert child is not None
        begun.append(child)
        raise RuntimeError("the start failed")
    assert begun[0].returncode is not None
    assert tls_module._BEGUN == {}
    assert not (tmp_path / "pki").exists()  # the child writes nothing itself


def test_a_daemon_start_that_fails_early_leaves_no_child(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    children: list[SelfSignedChild] = []

    @contextlib.contextmanager
    def unreachable(flags: Any, must_answer: bool = True) -> Iterator[NoReturn]:
        children.extend(tls_module._BEGUN.values())
        raise CRIError("Version", "no runtime here")
        yield

    monkeypatch.setattr(main_module, "open_runtime", unreachable)
    monkeypatch.setattr(main_module, "limit_arenas", lambda: None)
    monkeypatch.setattr(main_module, "configure_logging", lambda *a, **k: None)
    monkeypatch.setattr(main_module, "share_root_dir", lambda root_dir: None)  # no mount
    (tmp_path / "manifests").mkdir()
    code = main_module.main(["--root-dir", str(tmp_path / "root"),
                             "--pod-manifest-path", str(tmp_path / "manifests"),
                             "--hostname-override",
                             NODE,
                             "--container-runtime-endpoint", "unix:///nonexistent.sock"])
    assert code == main_module.EXIT_RUNTIME
    assert len(children) == 1
    assert children[0].request == PairRequest(NODE, (node_ip(),))
    assert children[0].returncode is not None  # killed or done, and reaped
    assert tls_module._BEGUN == {}
