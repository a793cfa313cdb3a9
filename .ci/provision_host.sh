#!/usr/bin/env bash
# Install the host tools the tests need (idempotent): bwrap, git, patch, and chromium (the headless browser that
# tests/test_report.py draws `swe-gym report`'s pages with).
set -euo pipefail

APT_LOG=/tmp/swe_gym_apt.log
log() { echo "[provision_host] $*" >&2; }

declare -A PKG_OF=([bwrap]=bubblewrap [git]=git [patch]=patch [chromium]=chromium)
missing=()
for cmd in "${!PKG_OF[@]}"; do
  command -v "$cmd" >/dev/null 2>&1 || missing+=("${PKG_OF[$cmd]}")
done

if [ ${#missing[@]} -eq 0 ]; then
  log "bwrap, git, patch, chromium already installed; nothing to do"
  exit 0
fi

log "installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
if ! { apt-get update && apt-get install -y --no-install-recommends "${missing[@]}"; } >"$APT_LOG" 2>&1; then
  tail -n 30 "$APT_LOG" >&2
  log "ERROR: apt-get install ${missing[*]} failed (full log: $APT_LOG)"
  exit 1
fi
log "installed ${missing[*]}"
