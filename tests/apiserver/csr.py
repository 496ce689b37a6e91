"""CertificateSigningRequest (certificates.k8s.io/v1): validation and strategies as upstream's.

What kube-apiserver's pkg/registry/certificates strategies and pkg/apis/certificates/validation
do, in upstream's words: on create the server sets spec.username/uid/groups/extra from the
authenticated user and clears status; the request must be a PEM ``CERTIFICATE REQUEST`` whose
signature verifies, signerName is required and qualified (``example.com/name``), usages come
from the known set without duplicates, expirationSeconds is at least 600. Writes to the main
resource change only metadata; ``/approval`` changes only the Approved and Denied conditions;
``/status`` everything in status but those two. Approved and Denied exclude each other, no
Approved/Denied/Failed condition is ever removed, and status.certificate, once set, stays.

Also here: the kubelet signers' own checks (pkg/apis/certificates ValidateKubeletClientCSR,
ValidateKubeletServingCSR), used by the signer and the approver (csrcontrollers.py).
"""

from __future__ import annotations

import base64
import copy
import re
from typing import Any

from cryptography import x509
from cryptography.hazmat.primitives.asymmetric import ec, rsa

from tests.apiserver import errors

KIND = "CertificateSigningRequest"
GROUP = "certificates.k8s.io"
RESOURCE = "certificatesigningrequests.certificates.k8s.io"

KUBELET_SERVING = "kubernetes.io/kubelet-serving"
KUBE_APISERVER_CLIENT_KUBELET = "kubernetes.io/kube-apiserver-client-kubelet"
KUBE_APISERVER_CLIENT = "kubernetes.io/kube-apiserver-client"
LEGACY_UNKNOWN = "kubernetes.io/legacy-unknown"

VALID_USAGES = ("any", "cert sign", "client auth", "code signing", "content commitment",
                "crl sign", "data encipherment", "decipher only", "digital signature",
                "email protection", "encipher only", "ipsec end system", "ipsec tunnel",
                "ipsec user", "key agreement", "key encipherment", "microsoft sgc",
                "netscape sgc", "ocsp signing", "s/mime", "server auth", "signing",
                "timestamping")

APPROVED, DENIED, FAILED = "Approved", "Denied", "Failed"
_TRUE_ONLY = (APPROVED, DENIED, FAILED)

_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")

Cause = tuple[str, str, str]  # field, reason, message


class CSRError(ValueError):
    """The request is not a parsable, correctly signed PKCS#10 CSR (upstream's words)."""


def go_bytes(data: bytes) -> str:
    """A []byte as Go's %#v prints it: what field.Invalid shows for spec.request."""
    return "[]byte{" + ", ".join(f"0x{b:x}" for b in data) + "}"


def request_bytes(obj: dict[str, Any]) -> bytes:
    """spec.request decoded (JSON carries []byte as base64)."""
    raw = (obj.get("spec") or {}).get("request") or ""
    try:
        return base64.b64decode(raw, validate=True)
    except (ValueError, TypeError) as err:
        raise errors.bad_request(f"spec.request: illegal base64 data: {err}") from None


def parse_csr(pem: bytes) -> x509.CertificateSigningRequest:
    """certificates.ParseCSR and CheckSignature: the first PEM block, a verified CSR."""
    begin = b"-----BEGIN CERTIFICATE REQUEST-----"
    start = pem.find(b"-----BEGIN ")
    if start < 0 or not pem[start:].startswith(begin):
        raise CSRError("PEM block type must be CERTIFICATE REQUEST")
    end = pem.find(b"-----END CERTIFICATE REQUEST-----", start)
    if end < 0:
        raise CSRError("PEM block type must be CERTIFICATE REQUEST")
    block = pem[start:end + len(b"-----END CERTIFICATE REQUEST-----")]
    try:
        req = x509.load_pem_x509_csr(block)
    except ValueError:
        raise CSRError("x509: malformed certificate request") from None
    if not req.is_signature_valid:
        key = req.public_key()
        if isinstance(key, ec.EllipticCurvePublicKey):
            raise CSRError("x509: ECDSA verification failure")
        if isinstance(key, rsa.RSAPublicKey):
            raise CSRError("crypto/rsa: verification error")
        raise CSRError("x509: signature verification failure")
    return req


def _quoted(values: tuple[str, ...] | list[str]) -> str:
    return ", ".join(f'"{v}"' for v in values)


def _signer_name_causes(name: str) -> list[Cause]:
    path = "spec.signerName"
    if not name:
        return [(path, "FieldValueRequired", "Required value")]
    segments = name.split("/")
    if len(segments) != 2:
        return [(path, "FieldValueInvalid",
                 f'Invalid value: "{name}": must be a fully qualified domain and path of the '
                 "form 'example.com/signer-name'")]
    causes: list[Cause] = []
    domain, rest = segments
    if len(domain) > 253:
        causes.append((path, "FieldValueTooLong", "Too long: may not be more than 253 bytes"))
    labels = domain.split(".")
    for label in labels:
        if not _LABEL.match(label) or len(label) > 63:
            causes.append((path, "FieldValueInvalid",
                           f'Invalid value: "{domain}": validating label "{label}": a lowercase '
                           "RFC 1123 label must consist of lower case alphanumeric characters "
                           "or '-', and must start and end with an alphanumeric character "
                           "(e.g. 'my-name',  or '123-abc', regex used for validation is "
                           "'[a-z0-9]([-a-z0-9]*[a-z0-9])?')"))
            break
    if len(labels) < 2:
        causes.append((path, "FieldValueInvalid",
                       f'Invalid value: "{domain}": should be a domain with at least two '
                       "segments separated by dots"))
    for label in rest.split("."):
        if not _LABEL.match(label) or len(label) > 253:
            causes.append((path, "FieldValueInvalid",
                           f'Invalid value: "{rest}": validating label "{label}": a lowercase '
                           "RFC 1123 subdomain must consist of lower case alphanumeric "
                           "characters, '-' or '.', and must start and end with an "
                           "alphanumeric character (e.g. 'example.com', regex used for "
                           "validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]"
                           "([-a-z0-9]*[a-z0-9])?)*')"))
            break
    if len(name) > 253 + 253 + 63 + 1 + 1:
        causes.append((path, "FieldValueTooLong", "Too long: may not be more than 571 bytes"))
    return causes


def _certificate_error(pem: bytes) -> str | None:
    """validateCertificate: one or more CERTIFICATE PEM blocks, nothing else in them."""
    if not pem:
        return None
    blocks = re.findall(rb"-----BEGIN ([A-Z0-9 ]+)-----\r?\n(.*?)-----END \1-----", pem,
                        re.S)
    for kind, body in blocks:
        if kind != b"CERTIFICATE":
            return f'only CERTIFICATE PEM blocks are allowed, found "{kind.decode()}"'
        if b":" in body.split(b"\n", 1)[0]:
            return "no PEM block headers are permitted"
        try:
            x509.load_der_x509_certificate(base64.b64decode(b"".join(body.split())))
        except ValueError as err:
            return f"x509: malformed certificate: {err}"
    if not blocks:
        return "must contain at least one CERTIFICATE PEM block"
    return None


def _conditions(obj: dict[str, Any]) -> list[dict[str, Any]]:
    return [c for c in (obj.get("status") or {}).get("conditions") or [] if isinstance(c, dict)]


def has_condition(obj: dict[str, Any], kind: str) -> bool:
    return any(c.get("type") == kind and c.get("status", "True") == "True"
               for c in _conditions(obj))


def certificate(obj: dict[str, Any]) -> bytes:
    raw = (obj.get("status") or {}).get("certificate") or ""
    return base64.b64decode(raw) if raw else b""


def validate(obj: dict[str, Any], old: dict[str, Any] | None = None,
             subresource: str = "") -> None:
    """validateCertificateSigningRequest (and ...Update for ``old``); 422 in upstream's words."""
    spec = obj.get("spec") or {}
    causes: list[Cause] = []
    old_spec = (old or {}).get("spec") or {}
    old_usages = old_spec.get("usages") or []
    try:
        parse_csr(request_bytes(obj))
    except CSRError as err:
        causes.append(("spec.request", "FieldValueInvalid",
                       f"Invalid value: {go_bytes(request_bytes(obj))}: {err}"))
    usages = spec.get("usages") or []
    if not usages:
        causes.append(("spec.usages", "FieldValueRequired", "Required value"))
    if not (old is not None and any(u not in VALID_USAGES for u in old_usages)):
        for i, usage in enumerate(usages):
            if usage not in VALID_USAGES:
                causes.append((f"spec.usages[{i}]", "FieldValueNotSupported",
                               f'Unsupported value: "{usage}": supported values: '
                               f"{_quoted(VALID_USAGES)}"))
    if not (old is not None and len(set(old_usages)) != len(old_usages)):
        seen: set[str] = set()
        for i, usage in enumerate(usages):
            if usage in seen:
                causes.append((f"spec.usages[{i}]", "FieldValueDuplicate",
                               f'Duplicate value: "{usage}"'))
            seen.add(usage)
    signer = str(spec.get("signerName") or "")
    if signer == LEGACY_UNKNOWN and old_spec.get("signerName") != LEGACY_UNKNOWN:
        causes.append(("spec.signerName", "FieldValueInvalid",
                       f'Invalid value: "{signer}": the legacy signerName is not allowed via '
                       "this API version"))
    elif signer != LEGACY_UNKNOWN:
        causes += _signer_name_causes(signer)
    seconds = spec.get("expirationSeconds")
    if seconds is not None and int(seconds) < 600:
        causes.append(("spec.expirationSeconds", "FieldValueInvalid",
                       f"Invalid value: {int(seconds)}: may not specify a duration less than "
                       "600 seconds (10 minutes)"))
    causes += _condition_causes(obj, old)
    cert = certificate(obj)
    if old is None or cert != certificate(old):
        problem = _certificate_error(cert)
        if problem is not None:
            causes.append(("status.certificate", "FieldValueInvalid",
                           f'Invalid value: "<certificate data>": {problem}'))
    if old is not None:
        causes += _update_causes(obj, old, subresource)
    if causes:
        raise errors.invalid(KIND, obj.get("metadata", {}).get("name", ""), causes, GROUP)


def _condition_causes(obj: dict[str, Any], old: dict[str, Any] | None) -> list[Cause]:
    causes: list[Cause] = []
    old_types = [c.get("type") for c in _conditions(old or {})]
    tolerate_both = APPROVED in old_types and DENIED in old_types
    tolerate_dupes = len(set(old_types)) != len(old_types)
    tolerate_empty = "" in old_types or None in old_types
    seen: set[str] = set()
    approved = denied = False
    for i, c in enumerate(_conditions(obj)):
        path = f"status.conditions[{i}]"
        kind = str(c.get("type") or "")
        if not kind and not tolerate_empty:
            causes.append((f"{path}.type", "FieldValueRequired", "Required value"))
        allowed = ("True",) if kind in _TRUE_ONLY else ("False", "True", "Unknown")
        status = c.get("status") or ""
        if not status:
            causes.append((f"{path}.status", "FieldValueRequired", "Required value"))
        elif status not in allowed:
            causes.append((f"{path}.status", "FieldValueNotSupported",
                           f'Unsupported value: "{status}": supported values: '
                           f"{_quoted(allowed)}"))
        if not tolerate_both:
            if kind == APPROVED:
                approved = True
                if denied:
                    causes.append((f"{path}.type", "FieldValueInvalid",
                                   f'Invalid value: "{kind}": Approved and Denied conditions '
                                   "are mutually exclusive"))
            elif kind == DENIED:
                denied = True
                if approved:
                    causes.append((f"{path}.type", "FieldValueInvalid",
                                   f'Invalid value: "{kind}": Approved and Denied conditions '
                                   "are mutually exclusive"))
        if not tolerate_dupes:
            if kind in seen:
                causes.append((f"{path}.type", "FieldValueDuplicate",
                               f'Duplicate value: "{kind}"'))
            seen.add(kind)
    return causes


def _of_type(obj: dict[str, Any], kind: str) -> list[dict[str, Any]]:
    return [c for c in _conditions(obj) if c.get("type") == kind]


def _update_causes(new: dict[str, Any], old: dict[str, Any], subresource: str) -> list[Cause]:
    causes: list[Cause] = []
    for kind in (APPROVED, DENIED, FAILED):
        if len(_of_type(new, kind)) < len(_of_type(old, kind)):
            causes.append(("status.conditions", "FieldValueForbidden",
                           f'Forbidden: updates may not remove a condition of type "{kind}"'))
    if subresource != "approval":
        for kind in (APPROVED, DENIED):
            before, after = _of_type(old, kind), _of_type(new, kind)
            if len(after) > len(before):
                causes.append(("status.conditions", "FieldValueForbidden",
                               f'Forbidden: updates may not add a condition of type "{kind}"'))
            elif len(after) == len(before) and after != before:
                causes.append(("status.conditions", "FieldValueForbidden",
                               f'Forbidden: updates may not modify a condition of type '
                               f'"{kind}"'))
    if certificate(new) != certificate(old):
        if subresource != "status":
            causes.append(("status.certificate", "FieldValueForbidden",
                           "Forbidden: updates may not set certificate content"))
        elif certificate(old):
            causes.append(("status.certificate", "FieldValueForbidden",
                           "Forbidden: updates may not modify existing certificate content"))
    return causes


def admit(obj: dict[str, Any]) -> None:
    """The CertificateSubjectRestriction admission plug-in: no system:masters certificates
    from the kube-apiserver-client signer (403)."""
    spec = obj.get("spec") or {}
    if spec.get("signerName") != KUBE_APISERVER_CLIENT:
        return
    try:
        req = parse_csr(request_bytes(obj))
    except CSRError:
        return  # validation says what is wrong with it
    if "system:masters" in _subject(req)[1]:
        name = obj.get("metadata", {}).get("name", "")
        raise errors.APIError(
            403, "Forbidden",
            f'certificatesigningrequests.{GROUP} "{name}" is forbidden: use of '
            f"{KUBE_APISERVER_CLIENT} signer with system:masters group is not allowed",
            {"name": name, "group": GROUP, "kind": "certificatesigningrequests"})


def prepare_create(obj: dict[str, Any], user: dict[str, Any] | None) -> None:
    """csrStrategy.PrepareForCreate: the requester from the request's user, no status."""
    spec = obj.setdefault("spec", {})
    for key in ("username", "uid", "groups", "extra"):
        spec.pop(key, None)
    if user:
        spec["username"] = user.get("username", "")
        if user.get("uid"):
            spec["uid"] = user["uid"]
        if user.get("groups"):
            spec["groups"] = list(user["groups"])
        if user.get("extra"):
            spec["extra"] = copy.deepcopy(user["extra"])
    obj["status"] = {}


def prepare_update(current: dict[str, Any], new: dict[str, Any], subresource: str,
                   now: str) -> None:
    """The main, /approval and /status strategies' PrepareForUpdate, then the conditions'
    timestamps (populateConditionTimestamps)."""
    new["spec"] = copy.deepcopy(current.get("spec") or {})
    old_status = current.get("status") or {}
    status = new.get("status") or {}
    if subresource == "":
        new["status"] = copy.deepcopy(old_status)
        return
    if subresource == "approval":
        # Only the conditions change here; the certificate is the status subresource's.
        merged: dict[str, Any] = {k: copy.deepcopy(v) for k, v in old_status.items()
                                  if k != "conditions"}
        if status.get("conditions"):
            merged["conditions"] = copy.deepcopy(status["conditions"])
    else:
        # status: everything but the approval conditions, which stay as they were.
        merged = copy.deepcopy(status)
        kept = [c for c in merged.get("conditions") or [] if c.get("type") not in
                (APPROVED, DENIED)]
        kept += [copy.deepcopy(c) for c in old_status.get("conditions") or []
                 if c.get("type") in (APPROVED, DENIED)]
        merged.pop("conditions", None)
        if kept:
            merged["conditions"] = kept
    old_by_type = {c.get("type"): c for c in old_status.get("conditions") or []}
    for c in merged.get("conditions") or []:
        c.setdefault("lastUpdateTime", now)
        if not c.get("lastTransitionTime"):
            before = old_by_type.get(c.get("type"))
            if before is not None and before.get("status") == c.get("status") and \
                    before.get("lastTransitionTime"):
                c["lastTransitionTime"] = before["lastTransitionTime"]
            else:
                c["lastTransitionTime"] = now
    new["status"] = merged


# --- the kubelet signers' checks (pkg/apis/certificates helpers) ------------------------


def _subject(req: x509.CertificateSigningRequest) -> tuple[str, list[str]]:
    cn = [a.value for a in req.subject.get_attributes_for_oid(x509.NameOID.COMMON_NAME)]
    orgs = [str(a.value) for a in
            req.subject.get_attributes_for_oid(x509.NameOID.ORGANIZATION_NAME)]
    return (str(cn[0]) if cn else ""), orgs


def _sans(req: x509.CertificateSigningRequest) -> x509.SubjectAlternativeName:
    try:
        return req.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except x509.ExtensionNotFound:
        return x509.SubjectAlternativeName([])


def _usages_error(usages: set[str], required: tuple[str, ...]) -> str | None:
    without_rsa = set(required) - {"key encipherment"}
    if usages != set(required) and usages != without_rsa:
        return f"usages did not match [{' '.join(sorted(required))}]"
    return None


def kubelet_serving_error(req: x509.CertificateSigningRequest, usages: list[str]) -> str | None:
    """ValidateKubeletServingCSR's error, or None when it is a kubelet serving request."""
    cn, orgs = _subject(req)
    sans = _sans(req)
    if orgs != ["system:nodes"]:
        return "subject organization is not system:nodes"
    if not sans.get_values_for_type(x509.DNSName) and \
            not sans.get_values_for_type(x509.IPAddress):
        return "DNS or IP subjectAltName is required"
    if sans.get_values_for_type(x509.RFC822Name):
        return "Email subjectAltNames are not allowed"
    if sans.get_values_for_type(x509.UniformResourceIdentifier):
        return "URI subjectAltNames are not allowed"
    problem = _usages_error(set(usages), ("digital signature", "key encipherment",
                                          "server auth"))
    if problem:
        return problem
    if not cn.startswith("system:node:"):
        return "subject common name does not begin with system:node:"
    return None


def kubelet_client_error(req: x509.CertificateSigningRequest, usages: list[str]) -> str | None:
    """ValidateKubeletClientCSR's error, or None when it is a kubelet client request."""
    cn, orgs = _subject(req)
    sans = _sans(req)
    if orgs != ["system:nodes"]:
        return "subject organization is not system:nodes"
    if sans.get_values_for_type(x509.DNSName):
        return "DNS subjectAltNames are not allowed"
    if sans.get_values_for_type(x509.RFC822Name):
        return "Email subjectAltNames are not allowed"
    if sans.get_values_for_type(x509.IPAddress):
        return "IP subjectAltNames are not allowed"
    if sans.get_values_for_type(x509.UniformResourceIdentifier):
        return "URI subjectAltNames are not allowed"
    if not cn.startswith("system:node:"):
        return "subject common name does not begin with system:node:"
    return _usages_error(set(usages), ("client auth", "digital signature",
                                       "key encipherment"))


def apiserver_client_error(usages: list[str]) -> str | None:
    """validAPIServerClientUsages (the kube-apiserver-client signer)."""
    for usage in usages:
        if usage not in ("digital signature", "key encipherment", "client auth"):
            return f"invalid usage for client certificate: {usage}"
    if "client auth" not in usages:
        return "missing required usage for client certificate: client auth"
    return None


def table_cells(obj: dict[str, Any]) -> tuple[str, str, str, str]:
    """printCertificateSigningRequest's SignerName, Requestor, RequestedDuration, Condition
    (Age comes from tables.py)."""
    from tests.apiserver.tables import human_duration

    spec = obj.get("spec") or {}
    seconds = spec.get("expirationSeconds")
    requested = human_duration(int(seconds)) if seconds is not None else "<none>"
    if has_condition(obj, DENIED):
        state = "Denied"
    elif has_condition(obj, APPROVED):
        state = "Approved"
    else:
        state = "Pending"
    if has_condition(obj, FAILED):
        state += ",Failed"
    if (obj.get("status") or {}).get("certificate"):
        state += ",Issued"
    return spec.get("signerName", ""), spec.get("username", ""), requested, state
