"""The project's own error hierarchy.

Every error the runtime layer raises is a KubeletError. Errors that wrap another library's
error (grpc, yaml, OSError) chain it with ``raise ... from err`` so the cause stays visible.
"""

from __future__ import annotations


class KubeletError(Exception):
    """Base of every error kubelet-actors raises on purpose."""


# --- CRI runtime -------------------------------------------------------------------------


class CRIError(KubeletError):
    """A CRI call failed. ``method`` is the CRI method name, ``code`` the gRPC status name."""

    def __init__(self, method: str, message: str, code: str = "UNKNOWN") -> None:
        super().__init__(f"CRI {method} failed ({code}): {message}")
        self.method = method
        self.code = code
        self.detail = message


class CRINotFound(CRIError):
    """The runtime does not know the sandbox, container or image named in the call."""


class CRIUnavailable(CRIError):
    """The runtime cannot be reached (socket missing, daemon down or restarting)."""


class CRIDeadlineExceeded(CRIError):
    """The call did not finish within its timeout."""


class CRIUnimplemented(CRIError):
    """The runtime does not implement this CRI method."""


# --- cgroups -----------------------------------------------------------------------------


class CgroupError(KubeletError):
    """A pod's cgroup could not be made or written (the cgroup filesystem said why)."""


# --- pod specs ---------------------------------------------------------------------------


class ManifestError(KubeletError):
    """A manifest could not be turned into a valid pod.

    ``source`` names the file or URL, ``path`` the field (``spec.containers[1].image``) or
    "" when the whole document is at fault, ``cause`` what is wrong with it.

    A pod can have several faults at once; ``errors`` then lists every one as
    ``"path: cause"`` (``path`` and ``cause`` are the first of them) and the message
    joins them with "; ". ``document`` is the 1-based document number when the file
    holds several YAML documents, so the fault can be found.
    """

    def __init__(
        self,
        source: str,
        path: str,
        cause: str,
        *,
        errors: tuple[str, ...] = (),
        document: int | None = None,
    ) -> None:
        self.source = source
        self.path = path
        self.cause = cause
        self.errors = errors or (f"{path}: {cause}" if path else cause,)
        self.document = document
        where = source if document is None else f"{source}: document {document}"
        super().__init__(f"{where}: {'; '.join(self.errors)}")


# --- running pods ------------------------------------------------------------------------


class SyncError(KubeletError):
    """A step of syncing a pod failed; ``reason`` is the upstream waiting reason.

    Reasons are upstream's: ErrImagePull, ImagePullBackOff, ErrImageNeverPull,
    InvalidImageName, CreateContainerConfigError, CreateContainerError, RunContainerError,
    PostStartHookError, CrashLoopBackOff, CreatePodSandboxError, KillPodSandboxError, ...
    ``backoff`` is the delay in seconds when the step is a back-off wait, else None.
    """

    def __init__(self, reason: str, message: str, *, backoff: float | None = None) -> None:
        super().__init__(f"{reason}: {message}")
        self.reason = reason
        self.message = message
        # The delay of a back-off wait (CrashLoopBackOff, ImagePullBackOff) as a number, so
        # what reads the step's result (the trace tools) need not parse the message.
        self.backoff = backoff


class LogRotationError(KubeletError):
    """A container's log could not be rotated (a file operation or ReopenContainerLog
    failed); the message names the log and the step."""


class HookTransportError(KubeletError):
    """A lifecycle hook's httpGet or tcpSocket could not reach the container (a refused
    or timed-out connection, a broken answer, a URL that cannot be sent); the message is
    the cause's own, the hook's failure message."""


class ProbeStateError(KubeletError):
    """The saved probe results (runtime.prober.state) cannot be used: the message names
    the file and the cause."""


class ShutdownStateError(KubeletError):
    """The graceful node shutdown state file (runtime.nodeshutdown_state) cannot be read
    or written: the message names the file and the cause."""


class ContainerdError(KubeletError):
    """The embedded containerd could not be configured, started or stopped."""


class LogindError(KubeletError):
    """A call to systemd-logind (or systemd) over the system D-Bus failed, or the bus
    could not be reached: the message says which call and why, in upstream's words."""


class ConfigError(KubeletError):
    """A flag, a KubeletConfiguration file or a setting cannot work: nothing is started.

    The message names what is at fault (the flag, the file and field) and why. ``file``
    is the configuration file and ``field`` its field (``maxPods``, ``kind``), each ""
    when the error is not about one. An error about the file a flag names is wrapped in
    the flag's error with ``raise ... from``, keeping ``file`` and ``field``. ``rule`` is
    the rule broken, in upstream's words, without where the value came from (the message
    when not given): actors.app.config.origins puts the flag or file and field in front of it.
    ``related`` are the other fields a rule between fields names (imageGCLowThresholdPercent
    must be less than imageGCHighThresholdPercent): the error is reported at whichever of
    them the file set.
    """

    def __init__(self, message: str, *, file: str = "", field: str = "",
                 rule: str = "", related: tuple[str, ...] = ()) -> None:
        super().__init__(message)
        self.file = file
        self.field = field
        self.rule = rule or message
        self.related = related


class ConfigErrors(ConfigError):
    """More than one setting breaks its rule: every one of them, each located (flag, or
    file and field) in ``errors``, as upstream's ValidateKubeletConfiguration reports all it
    finds at once, so a user fixes the file in one pass. The message lists them, one a
    line."""

    def __init__(self, errors: tuple[ConfigError, ...]) -> None:
        lines = "".join(f"\n  {err}" for err in errors)
        super().__init__(f"{len(errors)} settings break their rules:{lines}")
        self.errors = errors


class CertificateError(KubeletError):
    """A certificate could not be had or kept: a CertificateSigningRequest denied, failed or
    never issued, a key or a certificate store file that cannot be read or written. The
    message names the request or the file and says why, in upstream's words."""


# --- the API server ----------------------------------------------------------------------


class KubeconfigError(ConfigError):
    """A kubeconfig cannot be used: ``file`` names it, ``field`` the field at fault
    (``users[0].user.client-key``), and the message says both and why."""


class APIError(KubeletError):
    """A request to the API server failed.

    ``code`` is the HTTP status (0 when no answer came), ``reason`` upstream's
    ``metav1.StatusReason`` (``NotFound``, ``Conflict``, ``Expired``...; "" when unknown),
    ``details`` the Status details as sent, ``retry_after`` the seconds the server asked to
    wait (``Retry-After`` or ``details.retryAfterSeconds``), else None.
    """

    def __init__(self, message: str, *, code: int = 0, reason: str = "",
                 details: dict[str, object] | None = None,
                 retry_after: float | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.code = code
        self.reason = reason
        self.details = details or {}
        self.retry_after = retry_after


class APIUnreachable(APIError):
    """No answer: the connection was refused, cut, timed out, or TLS failed."""


class APIBadRequest(APIError):
    """400 BadRequest."""


class APIUnauthorized(APIError):
    """401: the credentials were refused."""


class APIForbidden(APIError):
    """403: the user may not do this."""


class APINotFound(APIError):
    """404 NotFound."""


class APIMethodNotAllowed(APIError):
    """405 MethodNotAllowed."""


class APIAlreadyExists(APIError):
    """409 AlreadyExists: a create found the name taken."""


class APIConflict(APIError):
    """409 Conflict: a stale resourceVersion, or a failed uid/resourceVersion precondition."""


class APIGone(APIError):
    """410 Gone or Expired: the resourceVersion asked for was compacted away (relist)."""


class APIInvalid(APIError):
    """422 Invalid: the object failed validation; ``details["causes"]`` say where."""


class APITooManyRequests(APIError):
    """429 TooManyRequests: ``retry_after`` says when to come back."""


class APIServerError(APIError):
    """5xx: InternalError, ServiceUnavailable, Timeout..."""
