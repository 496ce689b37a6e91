#!/usr/bin/env bash
# Compile the product's Python sources (actors runtime proto bin) to bytecode, as `pip
# install` does for an installed package: the .pyc go into each package's __pycache__
# (git-ignored), or under $PYTHONPYCACHEPREFIX when that is set. A checkout's first daemon
# start then reads bytecode instead of compiling its some 250 modules of ours (well over
# 100 ms of CPU); Python recompiles any module edited later. Quick when nothing changed.
#
#   scripts/compile_bytecode.sh [PYTHON]     (default: the checkout's .venv/bin/python)
set -euo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PYTHON="${1:-$REPO/.venv/bin/python}"
cd "$REPO"
exec "$PYTHON" -m compileall -q -j 0 actors runtime proto bin
