#!/usr/bin/env bash
# Set up a machine for kubelet-actors, as root on Debian bookworm. Idempotent and quick on a
# machine that is already set up.
#
#   1. apt: containerd, runc, CNI plugins, docker-registry, umoci, skopeo, busybox-static,
#      iptables, iproute2, gcc, libc6-dev, python3-venv, curl, ca-certificates, and
#      kubernetes-client when there is no kubectl (only those
#      missing; `apt-get update` only when something is). Services the packages would start
#      (a system containerd, a system docker-registry on :5000) are kept from starting: the
#      kubelet runs its own containerd and the tests their own registry.
#   2. .venv in the repo (python3 -m venv) with `pip install -e '.[dev]'`, skipped while
#      setup.cfg and pyproject.toml are unchanged since the last install; then the
#      checkout's bytecode (scripts/compile_bytecode.sh), so the first start reads .pyc.
#   3. scripts/images.sh build serve push: the pause and busybox images on localhost:5000.
#
# Options: --no-images (skip step 3), --no-venv (skip step 2).
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$HERE/.." && pwd)"
VENV="$REPO/.venv"
STAMP="$VENV/.kubelet-actors-setup.stamp"

APT_PACKAGES=(
    containerd runc containernetworking-plugins docker-registry umoci skopeo busybox-static
    iptables iproute2 gcc libc6-dev python3-venv curl ca-certificates
)
# Graceful node shutdown's tests run a private system bus (dbus-daemon) for a logind stand-in.
APT_PACKAGES+=(dbus-daemon)
# kubectl is the upstream client that pins the emulated API server's semantics in the
# cluster-mode tests: Debian's kubernetes-client when the machine has no kubectl of its own
# (on PATH, or the Google Cloud SDK's versioned copies the tests also look for).
if ! command -v kubectl >/dev/null \
        && ! compgen -G "/usr/lib/google-cloud-sdk/bin/kubectl*" >/dev/null; then
    APT_PACKAGES+=(kubernetes-client)
fi
# promtool (Debian's prometheus package) checks the kubelet's metrics endpoints in the
# tests as Prometheus itself parses them; policy-rc.d keeps its server from starting.
APT_PACKAGES+=(prometheus)
# chromium: the timeline page's browser tests open it (driven by Playwright, which uses
# this browser instead of downloading its own).
APT_PACKAGES+=(chromium)

do_images=1
do_venv=1
for arg in "$@"; do
    case "$arg" in
        --no-images) do_images=0 ;;
        --no-venv) do_venv=0 ;;
        -h | --help) sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "setup.sh: unknown option $arg" >&2; exit 2 ;;
    esac
done

log() { printf 'setup.sh: %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

[[ "$(id -u)" == 0 ]] || die "run as root (apt-get, mounts and network namespaces need it)"

# --- 1. Debian packages ------------------------------------------------------------------

missing_packages() {
    local pkg
    for pkg in "${APT_PACKAGES[@]}"; do
        dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" \
            || echo "$pkg"
    done
}

POLICY=/usr/sbin/policy-rc.d
POLICY_OURS=0

restore_policy() {
    if ((POLICY_OURS)); then
        rm -f "$POLICY"
        POLICY_OURS=0
    fi
}

install_packages() {
    local missing
    mapfile -t missing < <(missing_packages)
    if ((${#missing[@]} == 0)); then
        log "apt: all ${#APT_PACKAGES[@]} packages present"
        return 0
    fi
    log "apt: installing ${missing[*]}"
    # Keep postinst scripts from starting services (invoke-rc.d honours policy-rc.d): a system
    # containerd would not clash with ours (own root, state and socket), but a system
    # docker-registry would take :5000 with an htpasswd config the tests cannot push to.
    if [[ ! -e "$POLICY" ]]; then
        printf '#!/bin/sh\n# kubelet-actors scripts/setup.sh: no service starts during apt-get.\nexit 101\n' \
            >"$POLICY"
        chmod 0755 "$POLICY"
        POLICY_OURS=1
        trap restore_policy EXIT
    fi
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -q
    apt-get install -y -q --no-install-recommends "${missing[@]}"
    restore_policy
    mapfile -t missing < <(missing_packages)
    ((${#missing[@]} == 0)) || die "apt: still missing after install: ${missing[*]}"
}

install_packages

# Debian ships the CNI plugins in /usr/lib/cni, where the embedded containerd's config points.
[[ -x /usr/lib/cni/bridge && -x /usr/lib/cni/host-local && -x /usr/lib/cni/portmap \
    && -x /usr/lib/cni/loopback ]] || die "CNI plugins missing from /usr/lib/cni"
for tool in containerd containerd-shim-runc-v2 runc umoci skopeo docker-registry gcc; do
    command -v "$tool" >/dev/null || die "$tool is not on PATH after the apt step"
done

# The kernel pieces pods need; harmless when built in or already loaded.
for mod in overlay br_netfilter; do
    modprobe "$mod" 2>/dev/null || true
done

# --- 2. Python venv ----------------------------------------------------------------------

setup_venv() {
    local want python
    want="$(cat "$REPO/setup.cfg" "$REPO/pyproject.toml" | sha256sum | cut -d' ' -f1)"
    if [[ -x "$VENV/bin/python" ]] && "$VENV/bin/python" -c 'import sys; assert sys.version_info >= (3, 11)' \
        2>/dev/null && [[ -f "$STAMP" && "$(cat "$STAMP")" == "$want" ]]; then
        log "venv: $VENV is up to date"
        return 0
    fi
    if [[ ! -x "$VENV/bin/python" ]]; then
        python="$(command -v python3)" || die "python3 not found"
        "$python" -c 'import sys; assert sys.version_info >= (3, 11), sys.version' \
            || die "$python is older than 3.11"
        log "venv: creating $VENV with $python"
        "$python" -m venv "$VENV"
    fi
    log "venv: pip install -e '.[dev]'"
    "$VENV/bin/python" -m pip install -q --upgrade pip
    (cd "$REPO" && "$VENV/bin/python" -m pip install -q -e '.[dev]')
    echo "$want" >"$STAMP"
}

if ((do_venv)); then
    setup_venv
    log "bytecode: compiling actors runtime proto bin"
    "$HERE/compile_bytecode.sh" "$VENV/bin/python"
fi

# --- 3. images ---------------------------------------------------------------------------

if ((do_images)); then "$HERE/images.sh" build serve push; fi

log "done"
