#!/usr/bin/env bash
# Undo what scripts/run-examples.sh left running: every pod of the embedded containerd under
# the kubelet's root dir (default /var/lib/kubelet-actors; pass another as $1), that
# containerd itself, its bridge, and the image registry. Images stay built for next time.
set -euo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
ROOT="${1:-/var/lib/kubelet-actors}"
"$REPO/.venv/bin/python" "$REPO/scripts/clean.py" "$ROOT"
"$REPO/scripts/images.sh" stop || true
