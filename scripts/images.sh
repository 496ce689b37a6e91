#!/usr/bin/env bash
# The image and registry script for a checkout: runs the one the package ships
# (actors/app/testbed/images.sh, with pause.c beside it). `scripts/images.sh help` says more.
set -euo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
exec bash "$REPO/actors/app/testbed/images.sh" "$@"
