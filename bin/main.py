"""Console-script entry point: ``kubelet-actors`` runs actors.app.main."""

from __future__ import annotations

import sys

from actors.app import main as app_main


def main() -> None:
    sys.exit(app_main())


if __name__ == "__main__":
    main()
