"""Console-script entry point: ``kubelet-actors`` runs actors.app.main;
``kubelet-actors trace ...`` runs actors.app.tools.trace_cli.main (the trace tools);
``kubelet-actors explain POD`` runs actors.app.tools.explain_cli.main (a pod's story from a trace);
``kubelet-actors drill ...`` runs actors.app.drills.cli.main (the restart drills);
``kubelet-actors logs|exec|attach|port-forward ...`` talk to a running daemon
(actors.app.tools.remote)."""

from __future__ import annotations

import gc
import sys

gc.disable()  # for the start only: see actors.app.startup

from actors.app.main import main as app_main  # noqa: E402
from actors.app.startup import end_of_start  # noqa: E402


def main(argv: list[str] | None = None) -> None:
    args = sys.argv[1:] if argv is None else argv
    if args[:1] == ["trace"]:
        from actors.app.tools.trace_cli import main as trace_main

        end_of_start()
        sys.exit(trace_main(args[1:]))
    if args[:1] == ["explain"]:
        from actors.app.tools.explain_cli import main as explain_main

        sys.exit(explain_main(args[1:]))
    if args[:1] == ["drill"]:
        from actors.app.drills.cli import main as drill_main

        end_of_start()
        sys.exit(drill_main(args[1:]))
    if args[:1] == ["logs"]:
        from actors.app.tools.remote.logs_cli import main as logs_main

        end_of_start()
        sys.exit(logs_main(args[1:]))
    if args[:1] in (["exec"], ["attach"]):
        from actors.app.tools.remote.stream_cli import main as stream_main

        end_of_start()
        sys.exit(stream_main(args))
    if args[:1] == ["port-forward"]:
        from actors.app.tools.remote.portforward import main as forward_main

        end_of_start()
        sys.exit(forward_main(args))
    sys.exit(app_main(args))


if __name__ == "__main__":
    main()
