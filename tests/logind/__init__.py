"""A private system D-Bus and a systemd-logind stand-in, for graceful node shutdown tests.

``PrivateBus`` runs ``dbus-daemon`` on a minimal system-bus configuration in a temporary
directory; ``LogindStandIn`` owns ``org.freedesktop.login1`` (and ``org.freedesktop.systemd1``
for the reload) on it and speaks logind's interface as the kubelet uses it.
"""

from tests.logind.standin import Inhibitor, LogindStandIn, PrivateBus

__all__ = ["Inhibitor", "LogindStandIn", "PrivateBus"]
