#!/usr/bin/env bash
# Run the real opensandbox-server (PyPI) on 127.0.0.1 against the local Docker
# engine, with the repo's execd TEST STAND-IN image as `execd_image` (the real
# execd image lives only on a container registry). Idempotent: exits at once
# when the server already answers with the key in the env file.
#
# Needs: a running engine (.ci/provision_docker.sh) and, for tests, the
# swe-gym-test:bookworm image (.ci/build_test_image.sh). Run from anywhere.
# Restarts the server (with a new key) when the stand-in image was rebuilt.
# Writes:  $ENV_FILE  SWE_GYM_OPENSANDBOX_{DOMAIN,API_KEY,PROTOCOL,EXECD_IMAGE}
#          $CONFIG    the server's TOML config (holds the key: mode 600)
# Logs:    $LOG
set -euo pipefail

VENV=${SWE_GYM_OPENSANDBOX_VENV:-/opt/swe-gym-opensandbox/venv}
SERVER_SPEC=${SWE_GYM_OPENSANDBOX_SERVER_SPEC:-opensandbox-server==1.1.1}
PORT=${SWE_GYM_OPENSANDBOX_PORT:-18790}
STATE_DIR=/var/lib/swe-gym-opensandbox   # server HOME: sqlite store, metadata files
CONF_DIR=/etc/swe-gym
CONFIG=$CONF_DIR/opensandbox.toml
ENV_FILE=$CONF_DIR/opensandbox.env
PID_FILE=$STATE_DIR/server.pid
LOG=/var/log/swe-gym-opensandbox.log
EXECD_IMAGE=swe-gym-opensandbox-execd-standin:test
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
log() { echo "[provision_opensandbox] $*" >&2; }
die() { log "ERROR: $*"; exit 1; }
# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"   # wait_until_up

# 0 when the server on $PORT accepts the key recorded in $ENV_FILE.
server_answers() {
  [ -r "$ENV_FILE" ] && [ -x "$VENV/bin/python" ] || return 1
  local key
  key=$(sed -n 's/^SWE_GYM_OPENSANDBOX_API_KEY=//p' "$ENV_FILE")
  [ -n "$key" ] || return 1
  "$VENV/bin/python" - "$PORT" "$key" <<'EOF' 2>/dev/null
import sys, urllib.request
req = urllib.request.Request("http://127.0.0.1:%s/v1/sandboxes?pageSize=1" % sys.argv[1],
                             headers={"OPEN-SANDBOX-API-KEY": sys.argv[2]})
urllib.request.urlopen(req, timeout=3).read()
EOF
}

timeout 10 docker info >/dev/null 2>&1 || die "no Docker engine answers; run .ci/provision_docker.sh first"
# The execd stand-in image (a no-op when up to date). The server caches execd
# in memory, so a rebuilt image needs a server restart (below).
"$REPO/tests/standins/opensandbox_execd/build.sh" "$EXECD_IMAGE"
IMAGE_ID=$(docker image inspect -f '{{.Id}}' "$EXECD_IMAGE")

if server_answers && [ "$(cat "$STATE_DIR/execd_image_id" 2>/dev/null)" = "$IMAGE_ID" ]; then
  log "opensandbox-server already answers on 127.0.0.1:$PORT; nothing to do"
  exit 0
fi

# 1. The server, in its own venv (its pins conflict with the repo's .venv).
if ! "$VENV/bin/python" -c 'import opensandbox_server' >/dev/null 2>&1; then
  PY=$(command -v /usr/bin/python3 || command -v python3) || die "python3 not found"
  if ! "$PY" -c 'import ensurepip, venv' >/dev/null 2>&1; then
    log "installing python3-venv"
    export DEBIAN_FRONTEND=noninteractive
    { apt-get install -y python3-venv || { apt-get update && apt-get install -y python3-venv; }; } \
      >/tmp/swe_gym_apt.log 2>&1 || die "apt-get install python3-venv failed (log: /tmp/swe_gym_apt.log)"
  fi
  log "installing $SERVER_SPEC into $VENV"
  rm -rf "$VENV"
  "$PY" -m venv "$VENV" || die "python3 -m venv $VENV failed"
  "$VENV/bin/pip" install --quiet --disable-pip-version-check "$SERVER_SPEC" >/tmp/swe_gym_opensandbox_pip.log 2>&1 \
    || { tail -n 20 /tmp/swe_gym_opensandbox_pip.log >&2; die "pip install $SERVER_SPEC failed"; }
fi

# 2. Stop a server we started earlier (it may hold a stale key or execd cache).
if [ -r "$PID_FILE" ]; then
  old=$(cat "$PID_FILE")
  if [ -n "$old" ] && [ "$(cat "/proc/$old/comm" 2>/dev/null)" = opensandbox-ser ]; then
    log "stopping the previous server (pid $old)"
    kill "$old" 2>/dev/null || true
    for _ in $(seq 50); do kill -0 "$old" 2>/dev/null || break; sleep 0.1; done
  fi
  rm -f "$PID_FILE"
fi
if "$VENV/bin/python" -c 'import socket,sys; socket.create_connection(("127.0.0.1", int(sys.argv[1])), 1)' "$PORT" 2>/dev/null; then
  die "port $PORT is taken by another program; set SWE_GYM_OPENSANDBOX_PORT"
fi

# 3. Config with a fresh random key, and the env file for tests.
KEY=$("$VENV/bin/python" -c 'import secrets; print(secrets.token_urlsafe(32))')
mkdir -p "$CONF_DIR" "$STATE_DIR"
umask 077
cat >"$CONFIG" <<EOF
# Written by .ci/provision_opensandbox.sh; execd_image is a TEST STAND-IN.
[server]
host = "127.0.0.1"
port = $PORT
api_key = "$KEY"
max_sandbox_timeout_seconds = 86400

[log]
level = "INFO"

[runtime]
type = "docker"
execd_image = "$EXECD_IMAGE"

[store]
type = "sqlite"
path = "$STATE_DIR/opensandbox.db"

[docker]
network_mode = "bridge"
publish_host = "127.0.0.1"
port_range_min = 40000
port_range_max = 60000

[ingress]
mode = "direct"
EOF
cat >"$ENV_FILE" <<EOF
SWE_GYM_OPENSANDBOX_DOMAIN=127.0.0.1:$PORT
SWE_GYM_OPENSANDBOX_API_KEY=$KEY
SWE_GYM_OPENSANDBOX_PROTOCOL=http
SWE_GYM_OPENSANDBOX_EXECD_IMAGE=$EXECD_IMAGE
SWE_GYM_OPENSANDBOX_NETWORK_POLICY=server-default
EOF
# NETWORK_POLICY: a deny-all egress policy needs the server's egress sidecar image, which
# cannot be obtained here; a real deployment keeps the provider's default ("deny").
chmod 644 "$ENV_FILE"   # tests run as other users too; the key only guards 127.0.0.1
umask 022

# 4. Start it detached and wait until it answers.
log "starting opensandbox-server on 127.0.0.1:$PORT (log: $LOG)"
: >>"$LOG"
HOME=$STATE_DIR setsid nohup "$VENV/bin/opensandbox-server" --config "$CONFIG" \
  >>"$LOG" 2>&1 </dev/null &
echo $! >"$PID_FILE"
echo "$IMAGE_ID" >"$STATE_DIR/execd_image_id"
wait_until_up opensandbox-server 60 "$PID_FILE" "$LOG" server_answers
log "env: $ENV_FILE"
