#!/usr/bin/env bash
# Ensure a running Docker engine (idempotent). CI machines have the docker CLI
# but no engine; install docker.io if dockerd is missing and start it detached.
set -euo pipefail

DOCKERD_LOG=/tmp/swe_gym_dockerd.log
APT_LOG=/tmp/swe_gym_apt.log
log() { echo "[provision_docker] $*" >&2; }
die() { log "ERROR: $*"; exit 1; }
docker_up() { timeout 10 docker info >/dev/null 2>&1; }
dockerd_running() { grep -qsx dockerd /proc/[0-9]*/comm; }

# apt-get install, running apt-get update only when the install needs it.
apt_install() {
  export DEBIAN_FRONTEND=noninteractive
  apt-get install -y "$@" >"$APT_LOG" 2>&1 && return 0
  log "apt-get update"
  { apt-get update && apt-get install -y "$@"; } >>"$APT_LOG" 2>&1 && return 0
  tail -n 30 "$APT_LOG" >&2
  die "apt-get install $* failed (full log: $APT_LOG)"
}

if docker_up; then
  log "Docker engine already running; nothing to do"
  exit 0
fi

if ! command -v dockerd >/dev/null 2>&1; then
  log "installing docker.io"
  apt_install docker.io
fi

if dockerd_running; then
  log "dockerd process already present; waiting for it"
else
  log "starting dockerd (log: $DOCKERD_LOG)"
  setsid nohup dockerd >>"$DOCKERD_LOG" 2>&1 </dev/null &
fi

deadline=$((SECONDS + 60))
while [ "$SECONDS" -lt "$deadline" ]; do
  docker_up && { log "Docker engine is up after ${SECONDS}s"; exit 0; }
  dockerd_running || break
  sleep 1
done
tail -n 30 "$DOCKERD_LOG" >&2 2>/dev/null || true
if dockerd_running; then why="no answer within 60 s"; else why="dockerd exited"; fi
die "Docker engine did not come up: $why (log: $DOCKERD_LOG)"
