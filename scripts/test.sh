#!/usr/bin/env bash
# Run every check kubelet-actors has, as root on Debian bookworm, installing what it needs:
# scripts/setup.sh (apt packages, .venv, images on a loopback registry), then ruff, mypy
# (strict on actors/ and runtime/), the import-linter layer contracts, the stale-stub check
# and pytest: the unit tests beside the end-to-end tests on a real containerd the fixtures
# start.
#
# Extra arguments go to one pytest run instead, e.g. scripts/test.sh tests/unit -k runonce -x
# --durations=30: each run prints its slowest tests, to keep the suite under 20 minutes.
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$REPO"

# Leave the machine as we found it: the registry setup.sh starts is stopped at the end
# unless it was already serving before.
registry_was_up=0
if command -v curl >/dev/null && curl -sf -o /dev/null --max-time 2 http://127.0.0.1:5000/v2/; then
    registry_was_up=1
fi
stop_registry() { if ((registry_was_up == 0)); then "$REPO/scripts/images.sh" stop || true; fi; }
trap stop_registry EXIT

"$REPO/scripts/setup.sh"

VENV="$REPO/.venv/bin"
step() { printf '\n== %s\n' "$*"; }

step "ruff"
"$VENV/ruff" check actors runtime proto bin tests bench scripts
step "mypy"
"$VENV/mypy" actors runtime bin tests bench scripts
step "import-linter"
"$VENV/lint-imports"
step "generated CRI stubs are current"
"$VENV/python" -m proto.generate --check
pytest() { "$VENV/python" -m pytest -p no:cacheprovider -ra --durations=30 "$@"; }
if (($# > 0)); then
    step "pytest $*"
    pytest "$@"
    exit
fi
# The whole suite: the unit tests (fakes and temporary files only: no containerd, no
# ports, no lock) run beside the rest (end-to-end tests on the real containerd, which
# mostly wait on it), so the run takes about as long as the end-to-end tests alone.
step "pytest: tests/unit beside the end-to-end tests (the unit run's output follows theirs)"
unit_log="$(mktemp /tmp/kubelet-actors-unit.XXXXXX.log)"
pytest tests/unit >"$unit_log" 2>&1 &
unit_pid=$!
trap 'kill "$unit_pid" 2>/dev/null || true; rm -f "$unit_log"; stop_registry' EXIT
rc_rest=0
pytest tests --ignore=tests/unit || rc_rest=$?
rc_unit=0
wait "$unit_pid" || rc_unit=$?
step "pytest tests/unit"
cat "$unit_log"
printf '\n== pytest: end-to-end and the rest rc=%d, unit rc=%d\n' "$rc_rest" "$rc_unit"
((rc_rest == 0 && rc_unit == 0))
