#!/usr/bin/env bash
# Images without internet: build the pause and busybox OCI images locally with umoci, serve
# them from Debian's docker-registry on loopback, and push them there with skopeo.
#
# Usage: scripts/images.sh [build] [serve] [push] [stop] [status] ...
#   (this file ships in the package as actors/app/testbed/images.sh, pause.c beside it;
#   scripts/images.sh runs it from a checkout, actors.app.testbed from an install)
#   build   build OCI layouts under $KA_IMAGES_DIR (default /var/lib/kubelet-actors/images):
#             pause:3.9     static C pause (pause.c beside this script), entrypoint /pause
#             busybox:1.35  Debian's busybox-static with applet symlinks, cmd ["sh"]
#             busybox:1.35-nonroot  the same layers, config user 1234 (upstream's nonroot
#                           test image runs as 1234), for runAsNonRoot with an image user
#   serve   start docker-registry on $KA_REGISTRY_ADDR (default 127.0.0.1:5000), detached,
#           storage, config, pid and log under $KA_REGISTRY_DIR (default
#           /var/lib/kubelet-actors/registry); no-op when the registry already answers
#   push    copy the images to localhost:5000/kubelet-actors/<name>:<tag> (skips images the
#           registry already holds with the same digest)
#   stop    stop the registry that `serve` started (via its pid file)
#   status  show what is built, whether the registry answers, and what it holds
#
# Every subcommand is idempotent and quick when there is nothing to do. Run as root.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
PAUSE_C="$HERE/pause.c"

IMAGES_DIR="${KA_IMAGES_DIR:-/var/lib/kubelet-actors/images}"
REGISTRY_DIR="${KA_REGISTRY_DIR:-/var/lib/kubelet-actors/registry}"
REGISTRY_ADDR="${KA_REGISTRY_ADDR:-127.0.0.1:5000}"
REGISTRY_HOST="localhost:${REGISTRY_ADDR##*:}"
REPO_PREFIX="kubelet-actors"

REGISTRY_CONFIG="$REGISTRY_DIR/config.yml"
REGISTRY_PID="$REGISTRY_DIR/registry.pid"
REGISTRY_LOG="$REGISTRY_DIR/registry.log"
REGISTRY_DATA="$REGISTRY_DIR/data"

# name:tag pairs this script builds and pushes.
IMAGES=("pause:3.9" "busybox:1.35" "busybox:1.35-nonroot")

# Bump when the way images are built changes, so `build` redoes them.
BUILD_RECIPE_VERSION=1

BUSYBOX_APPLETS_REQUIRED=(sh sleep echo cat wget nc httpd ls true false)

log() { printf 'images.sh: %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

layout_of() { echo "$IMAGES_DIR/${1%%:*}"; }   # pause:3.9 -> $IMAGES_DIR/pause
tag_of() { echo "${1##*:}"; }                  # pause:3.9 -> 3.9
remote_ref() { echo "docker://$REGISTRY_HOST/$REPO_PREFIX/$1"; }

# --- build -------------------------------------------------------------------------------

input_hash() {
    # Everything an image depends on: the recipe version, this script, and its inputs. By
    # content only (stdin), not path: a checkout and an installed copy share the built images.
    local name="$1"
    {
        echo "recipe=$BUILD_RECIPE_VERSION"
        sha256sum <"$HERE/images.sh"
        case "$name" in
            pause:*) sha256sum <"$PAUSE_C"; gcc --version | sed -n 1p ;;  # sed reads it all: no SIGPIPE under pipefail
            busybox:*) sha256sum </bin/busybox ;;
        esac
    } | sha256sum | cut -d' ' -f1
}

is_built() {
    local name="$1" layout stamp
    layout="$(layout_of "$name")"
    stamp="$layout.stamp"
    [[ -f "$layout/index.json" && -f "$stamp" ]] || return 1
    [[ "$(cat "$stamp")" == "$(input_hash "$name")" ]] || return 1
    # The tags first, then the match: with pipefail, `umoci ls | grep -q` fails whenever grep
    # stops at its match while umoci still writes (SIGPIPE): busybox:1.35, first of two
    # tags, then read as not built, now and then.
    local tags
    tags="$(umoci ls --layout "$layout" 2>/dev/null)" || return 1
    grep -qx "$(tag_of "$name")" <<<"$tags"
}

# new_image NAME: start a fresh empty image in its own OCI layout.
new_image() {
    local name="$1" layout
    layout="$(layout_of "$name")"
    rm -rf "$layout" "$layout.stamp"
    mkdir -p "$IMAGES_DIR"
    umoci init --layout "$layout"
    umoci new --image "$layout:$(tag_of "$name")"
}

build_pause() {
    local name="pause:3.9" layout tag stage
    layout="$(layout_of "$name")"; tag="$(tag_of "$name")"
    stage="$(mktemp -d)"
    # shellcheck disable=SC2064
    trap "rm -rf '$stage'" RETURN
    mkdir -p "$stage/root"
    gcc -static -Os -s -Wall -Wextra -o "$stage/root/pause" "$PAUSE_C"
    new_image "$name"
    umoci insert --image "$layout:$tag" --history.created_by "gcc -static -Os pause.c" \
        "$stage/root" /
    # The image config goes last: a repack/insert rewrites the config it started from.
    umoci config --image "$layout:$tag" \
        --config.entrypoint /pause --clear=config.cmd \
        --config.env "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin" \
        --config.user 65535:65535 --config.workingdir / \
        --author kubelet-actors --history.created_by "umoci config"
    input_hash "$name" >"$layout.stamp"
}

build_busybox() {
    local name="busybox:1.35" layout tag stage root applet
    layout="$(layout_of "$name")"; tag="$(tag_of "$name")"
    [[ -x /bin/busybox ]] || die "/bin/busybox is missing: apt-get install busybox-static"
    /bin/busybox --list >/dev/null 2>&1 || die "/bin/busybox is not a multi-call busybox"
    stage="$(mktemp -d)"
    # shellcheck disable=SC2064
    trap "rm -rf '$stage'" RETURN
    root="$stage/root"
    mkdir -p "$root"/{bin,sbin,usr/bin,usr/sbin,etc,root,home,var/www,var/log} \
        "$root"/{tmp,proc,sys,dev,run}
    chmod 1777 "$root/tmp"
    install -m 0755 /bin/busybox "$root/bin/busybox"
    while read -r applet; do
        [[ -n "$applet" && "$applet" != busybox ]] || continue
        ln -sf busybox "$root/bin/$applet"
    done < <(/bin/busybox --list)
    for applet in "${BUSYBOX_APPLETS_REQUIRED[@]}"; do
        [[ -L "$root/bin/$applet" ]] || die "busybox lacks the $applet applet"
    done
    cat >"$root/etc/passwd" <<'EOF'
root:x:0:0:root:/root:/bin/sh
daemon:x:1:1:daemon:/usr/sbin:/bin/false
www-data:x:33:33:www-data:/var/www:/bin/false
nobody:x:65534:65534:nobody:/home:/bin/false
EOF
    cat >"$root/etc/group" <<'EOF'
root:x:0:
daemon:x:1:
www-data:x:33:
nogroup:x:65534:
EOF
    echo "hello from kubelet-actors busybox" >"$root/var/www/index.html"
    new_image "$name"
    umoci insert --image "$layout:$tag" --history.created_by "busybox-static $(/bin/busybox | sed -n 1p | cut -d' ' -f2)" \
        "$root" /
    umoci config --image "$layout:$tag" \
        --clear=config.entrypoint --config.cmd sh \
        --config.env "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin" \
        --config.workingdir / \
        --author kubelet-actors --history.created_by "umoci config"
    input_hash "$name" >"$layout.stamp"
}

build_busybox_nonroot() {
    # Another tag in busybox's layout (so built after busybox:1.35, and again whenever that
    # one is rebuilt, which empties the layout): its layers, a config that runs as 1234.
    local name="busybox:1.35-nonroot" layout
    layout="$(layout_of "$name")"
    is_built "busybox:1.35" || die "build: $name needs busybox:1.35 built first"
    umoci config --image "$layout:1.35" --tag "$(tag_of "$name")" \
        --config.user 1234:1234 --author kubelet-actors --history.created_by "umoci config"
}

cmd_build() {
    local name
    for name in "${IMAGES[@]}"; do
        if is_built "$name"; then
            log "build: $name is up to date in $(layout_of "$name")"
            continue
        fi
        log "build: building $name"
        case "$name" in
            pause:*) build_pause ;;
            busybox:*-nonroot) build_busybox_nonroot ;;
            busybox:*) build_busybox ;;
            *) die "no recipe for $name" ;;
        esac
        log "build: $name -> $(layout_of "$name")"
    done
}

# --- registry ----------------------------------------------------------------------------

registry_answers() {
    local code
    code="$(curl -s -o /dev/null -w '%{http_code}' --max-time 2 "http://$REGISTRY_ADDR/v2/" \
        2>/dev/null)" || return 1
    [[ "$code" == 200 ]]
}

registry_pid() {
    local pid
    [[ -f "$REGISTRY_PID" ]] || return 1
    pid="$(cat "$REGISTRY_PID")"
    [[ "$pid" =~ ^[0-9]+$ ]] || return 1
    # Only a docker-registry process counts: the pid may have been reused.
    [[ "$(cat "/proc/$pid/comm" 2>/dev/null)" == docker-registry* ]] || return 1
    echo "$pid"
}

write_registry_config() {
    mkdir -p "$REGISTRY_DATA"
    cat >"$REGISTRY_CONFIG.tmp" <<EOF
# Written by kubelet-actors' images.sh: the kubelet-actors test registry, loopback only.
version: 0.1
log:
  level: info
  accesslog:
    disabled: true
storage:
  filesystem:
    rootdirectory: $REGISTRY_DATA
  delete:
    enabled: true
  cache:
    blobdescriptor: inmemory
http:
  addr: $REGISTRY_ADDR
  headers:
    X-Content-Type-Options: [nosniff]
health:
  storagedriver:
    enabled: false
EOF
    mv "$REGISTRY_CONFIG.tmp" "$REGISTRY_CONFIG"
}

cmd_serve() {
    local pid deadline
    if registry_answers; then
        log "serve: a registry already answers on $REGISTRY_ADDR"
        return 0
    fi
    command -v docker-registry >/dev/null || die "docker-registry is missing: apt-get install docker-registry"
    if pid="$(registry_pid)"; then
        log "serve: registry pid $pid does not answer yet; waiting for it"
    else
        write_registry_config
        log "serve: starting docker-registry on $REGISTRY_ADDR (log $REGISTRY_LOG)"
        # 9>&-: the registry must not inherit the flock below, or it holds it for its whole life
        # and every later images.sh (status, push, stop) waits on it for ever.
        setsid docker-registry serve "$REGISTRY_CONFIG" >>"$REGISTRY_LOG" 2>&1 </dev/null 9>&- &
        pid=$!
        echo "$pid" >"$REGISTRY_PID"
        disown "$pid" 2>/dev/null || true
    fi
    deadline=$((SECONDS + 20))
    until registry_answers; do
        if ! kill -0 "$pid" 2>/dev/null; then
            rm -f "$REGISTRY_PID"
            tail -n 20 "$REGISTRY_LOG" >&2 || true
            die "serve: docker-registry exited; see $REGISTRY_LOG"
        fi
        if ((SECONDS >= deadline)); then
            tail -n 20 "$REGISTRY_LOG" >&2 || true
            die "serve: docker-registry (pid $pid) did not answer on $REGISTRY_ADDR within 20s"
        fi
        sleep 0.1
    done
    log "serve: registry pid $pid answers on http://$REGISTRY_ADDR/v2/"
}

cmd_stop() {
    local pid i
    if ! pid="$(registry_pid)"; then
        rm -f "$REGISTRY_PID"
        log "stop: no registry started by this script is running"
        return 0
    fi
    kill -TERM "$pid" 2>/dev/null || true
    for ((i = 0; i < 100; i++)); do
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.1
    done
    if kill -0 "$pid" 2>/dev/null; then
        log "stop: registry pid $pid ignored SIGTERM for 10s; killing it"
        kill -KILL "$pid" 2>/dev/null || true
    fi
    rm -f "$REGISTRY_PID"
    log "stop: registry pid $pid stopped"
}

# --- push --------------------------------------------------------------------------------

local_digest() {
    skopeo inspect --format '{{.Digest}}' "oci:$(layout_of "$1"):$(tag_of "$1")"
}

remote_digest() {
    skopeo inspect --tls-verify=false --format '{{.Digest}}' "$(remote_ref "$1")" 2>/dev/null
}

cmd_push() {
    local name want have
    registry_answers || die "push: no registry answers on $REGISTRY_ADDR (run: $0 serve)"
    for name in "${IMAGES[@]}"; do
        is_built "$name" || die "push: $name is not built (run: $0 build)"
        want="$(local_digest "$name")"
        have="$(remote_digest "$name" || true)"
        if [[ "$want" == "$have" ]]; then
            log "push: $REGISTRY_HOST/$REPO_PREFIX/$name is up to date ($want)"
            continue
        fi
        log "push: $name -> $REGISTRY_HOST/$REPO_PREFIX/$name"
        skopeo copy --quiet --dest-tls-verify=false \
            "oci:$(layout_of "$name"):$(tag_of "$name")" "$(remote_ref "$name")"
    done
}

# --- status ------------------------------------------------------------------------------

cmd_status() {
    local name pid
    for name in "${IMAGES[@]}"; do
        if is_built "$name"; then
            echo "built    $name  $(local_digest "$name")  $(layout_of "$name")"
        else
            echo "missing  $name  (run: $0 build)"
        fi
    done
    if pid="$(registry_pid)"; then
        echo "registry pid $pid (started by this script), log $REGISTRY_LOG"
    fi
    if registry_answers; then
        echo "registry answers on http://$REGISTRY_ADDR/v2/"
        for name in "${IMAGES[@]}"; do
            if remote="$(remote_digest "$name")"; then
                echo "pushed   $REGISTRY_HOST/$REPO_PREFIX/$name  $remote"
            else
                echo "absent   $REGISTRY_HOST/$REPO_PREFIX/$name"
            fi
        done
    else
        echo "registry does not answer on http://$REGISTRY_ADDR/v2/"
    fi
}

# --- main --------------------------------------------------------------------------------

[[ $# -gt 0 ]] || set -- status
# One images.sh at a time on a machine, whoever runs it (setup.sh, a test run, a drill, a
# user): a build empties a layout before it fills it again, so a second build, push or
# status at the same time would find it half made and fail.
mkdir -p "$IMAGES_DIR"
exec 9>"$IMAGES_DIR/.images.sh.lock"
flock 9
for cmd in "$@"; do
    case "$cmd" in
        build) cmd_build ;;
        serve) cmd_serve ;;
        push) cmd_push ;;
        stop) cmd_stop ;;
        status) cmd_status ;;
        -h | --help | help) sed -n '2,21p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) die "unknown subcommand '$cmd' (build, serve, push, stop, status)" ;;
    esac
done
