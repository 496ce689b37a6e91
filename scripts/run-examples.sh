#!/usr/bin/env bash
# Set everything up (scripts/setup.sh: apt packages, .venv, images on a loopback registry)
# and run the example pods in examples/ on kubelet-actors' own embedded containerd.
#
# The pods keep running afterwards; scripts/clean.sh removes them and stops the registry.
# Extra arguments go to kubelet-actors (e.g. -o json).
set -euo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
"$REPO/scripts/setup.sh"
exec "$REPO/bin/kubelet-actors" --runonce --pod-manifest-path "$REPO/examples" "$@"
