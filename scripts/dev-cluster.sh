#!/usr/bin/env bash
# A one-node development cluster to try cluster mode with kubectl, as root:
#
#   scripts/dev-cluster.sh KUBECONFIG_PATH [--root-dir DIR] [--node-name NAME]
#                          [--apiserver-port PORT] [-- KUBELET_FLAGS...]
#
#   1. scripts/setup.sh: apt packages, .venv, the pause and busybox images on a registry on
#      127.0.0.1:5000 (started if none answers; then stopped again at the end).
#   2. The emulated API server the tests use (python -m tests.apiserver), over TLS on
#      127.0.0.1:PORT (default 6443); it binds pods without spec.nodeName to the node, as a
#      one-node scheduler would.
#   3. The kubelet-actors daemon joined to it: --kubeconfig as system:node:NAME (default: the
#      host name), its embedded containerd under DIR (default /var/lib/kubelet-actors), the
#      default ports (10250 over HTTPS, healthz 10248), --address 0.0.0.0 (upstream's default:
#      the API server reaches 10250 at the node's InternalIP, which is not loopback), and
#      --client-ca-file so the API server's kubelet-client certificate is let in there for
#      `kubectl logs` (anonymous requests stay refused), and --pod-cidr 10.88.0.0/16: the
#      emulated API server assigns nodes no pod range (no node-ipam controller), so the
#      kubelet gives its embedded containerd one at start, as a node of such a cluster must.
#   4. Once the Node is Ready, an admin kubeconfig in KUBECONFIG_PATH; then it waits.
#
# SIGINT (Ctrl-C) or SIGTERM stops the daemon and the API server, removes every pod of the
# embedded containerd and stops it (as scripts/clean.sh does), stops the registry if it was
# started here, and removes KUBECONFIG_PATH (the cluster it names is gone).
# shellcheck disable=SC2317  # cleanup, stop_pid and on_signal run from traps
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PY="$REPO/.venv/bin/python"
REGISTRY_URL="http://127.0.0.1:5000/v2/"

usage() { sed -n '2,/^# shellcheck/p' "$0" | sed '$d; s/^# \{0,1\}//'; }
log() { printf 'dev-cluster.sh: %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

(($# >= 1)) || { usage >&2; exit 2; }
case "$1" in -h | --help) usage; exit 0 ;; esac
KUBECONFIG_PATH="$1"
shift
ROOT_DIR=/var/lib/kubelet-actors
NODE_NAME="$(hostname | tr '[:upper:]' '[:lower:]')"
APISERVER_PORT=6443
KUBELET_FLAGS=()
while (($# > 0)); do
    case "$1" in
        --root-dir) ROOT_DIR="$2"; shift 2 ;;
        --node-name) NODE_NAME="$2"; shift 2 ;;
        --apiserver-port) APISERVER_PORT="$2"; shift 2 ;;
        --) shift; KUBELET_FLAGS=("$@"); break ;;
        *) die "unknown option $1 (kubelet flags go after --)" ;;
    esac
done
[[ "$(id -u)" == 0 ]] || die "run as root (containers need it)"
KUBECONFIG_PATH="$(realpath -m "$KUBECONFIG_PATH")"
ROOT_DIR="$(realpath -m "$ROOT_DIR")"

registry_answers() {
    [[ "$(curl -s -o /dev/null -w '%{http_code}' --max-time 2 "$REGISTRY_URL" 2>/dev/null)" \
        == 200 ]]
}

REGISTRY_OURS=1
if registry_answers; then REGISTRY_OURS=0; fi
WORKDIR=""
APISERVER_PID=""
KUBELET_PID=""
CLEANED=0

stop_pid() {  # stop_pid PID NAME: SIGTERM, wait up to 60 s, then SIGKILL
    local pid="$1" name="$2" i
    [[ -n "$pid" ]] || return 0
    kill -0 "$pid" 2>/dev/null || { wait "$pid" 2>/dev/null || true; return 0; }
    log "stopping the $name (pid $pid)"
    kill -TERM "$pid" 2>/dev/null || true
    for ((i = 0; i < 600; i++)); do
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.1
    done
    if kill -0 "$pid" 2>/dev/null; then
        log "the $name did not stop in 60 s: SIGKILL"
        kill -KILL "$pid" 2>/dev/null || true
    fi
    wait "$pid" 2>/dev/null || true
}

cleanup() {
    ((CLEANED)) && return 0
    CLEANED=1
    trap '' INT TERM
    stop_pid "$KUBELET_PID" "kubelet"
    stop_pid "$APISERVER_PID" "emulated API server"
    rm -f "$KUBECONFIG_PATH"
    if [[ -x "$PY" ]]; then
        "$PY" "$REPO/scripts/clean.py" "$ROOT_DIR" || log "cleaning $ROOT_DIR failed"
    fi
    if ((REGISTRY_OURS)); then
        "$REPO/scripts/images.sh" stop || true
    fi
    if [[ -n "$WORKDIR" ]]; then rm -rf "$WORKDIR"; fi
    log "stopped"
}

on_signal() {
    log "signalled: stopping everything started here"
    cleanup
    exit 0
}

trap on_signal INT TERM
trap cleanup EXIT

"$REPO/scripts/setup.sh"

WORKDIR="$(mktemp -d /tmp/kubelet-actors-dev-cluster.XXXXXX)"
mkdir -p "$(dirname "$KUBECONFIG_PATH")"
rm -f "$KUBECONFIG_PATH"

cd "$REPO"
# Both in sessions of their own (setsid): a Ctrl-C in the terminal reaches only this script,
# which stops them in order, kubelet first.
setsid "$PY" -m tests.apiserver --dir "$WORKDIR" --node "$NODE_NAME" \
    --admin-kubeconfig "$KUBECONFIG_PATH" --port "$APISERVER_PORT" &
APISERVER_PID=$!
for ((i = 0; i < 300; i++)); do
    [[ -f "$WORKDIR/ca.crt" ]] && break
    kill -0 "$APISERVER_PID" 2>/dev/null || die "the emulated API server exited"
    sleep 0.1
done
[[ -f "$WORKDIR/ca.crt" ]] || die "the emulated API server did not start in 30 s"

setsid "$REPO/bin/kubelet-actors" --kubeconfig "$WORKDIR/kubelet.kubeconfig" \
    --node-name "$NODE_NAME" --root-dir "$ROOT_DIR" --client-ca-file "$WORKDIR/ca.crt" \
    --address 0.0.0.0 --pod-cidr 10.88.0.0/16 \
    "${KUBELET_FLAGS[@]}" &
KUBELET_PID=$!

log "waiting for node $NODE_NAME to be Ready"
for ((i = 0; i < 1200; i++)); do
    [[ -f "$KUBECONFIG_PATH" ]] && break
    kill -0 "$KUBELET_PID" 2>/dev/null || die "the kubelet exited"
    kill -0 "$APISERVER_PID" 2>/dev/null || die "the emulated API server exited"
    sleep 0.1
done
[[ -f "$KUBECONFIG_PATH" ]] || die "node $NODE_NAME was not Ready in 120 s"

cat >&2 <<EOF
dev-cluster.sh: node $NODE_NAME is Ready. Try:
    export KUBECONFIG=$KUBECONFIG_PATH
    kubectl get nodes
    kubectl run hello --image=localhost:5000/kubelet-actors/busybox:1.35 --restart=Never \\
        --command -- echo hello
    kubectl get pod hello; kubectl logs hello; kubectl delete pod hello
dev-cluster.sh: Ctrl-C stops everything started here.
EOF

# Wait until signalled (the trap runs cleanup), or until one of the two exits on its own.
while kill -0 "$KUBELET_PID" 2>/dev/null && kill -0 "$APISERVER_PID" 2>/dev/null; do
    sleep 1 &
    wait $! || true
done
die "the kubelet or the emulated API server exited on its own"
