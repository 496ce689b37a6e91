#!/usr/bin/env bash
# Set everything up (scripts/setup.sh: apt packages, .venv, images on a loopback registry)
# and run the kubelet-actors daemon with the example pods in examples/ on its own embedded
# containerd. It runs in the foreground: watch http://127.0.0.1:10255/pods, edit or remove
# files in examples/ to see pods change; Ctrl-C stops the daemon and leaves the pods running
# (as upstream's kubelet does). scripts/clean.sh removes them and stops the registry.
#
# Extra arguments go to kubelet-actors; --runonce starts the pods, prints them and exits.
set -euo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
"$REPO/scripts/setup.sh"
exec "$REPO/bin/kubelet-actors" --pod-manifest-path "$REPO/examples" "$@"
