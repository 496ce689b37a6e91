"""systemd-logind over the system D-Bus, for graceful node shutdown.

- ``bus``: one connection to the system bus (``DBUS_SYSTEM_BUS_ADDRESS`` when set, as
  D-Bus libraries read it, else ``unix:path=/run/dbus/system_bus_socket``), method calls
  from any thread, file descriptors passed, signals handed to one reader;
- ``inhibit``: the calls upstream's pkg/kubelet/nodeshutdown/systemd makes: logind's
  ``InhibitDelayMaxUSec``, a ``delay`` inhibitor lock on shutdown (a file descriptor: the
  lock holds while it is open), ``PrepareForShutdown`` signals, logind's drop-in that
  raises ``InhibitDelayMaxSec`` and the reload that makes logind read it.

jeepney (pure Python) speaks the protocol; it is imported only when a node configures a
shutdown grace period.
"""
