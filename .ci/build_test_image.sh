#!/usr/bin/env bash
# Build the local test image (default swe-gym-test:bookworm) from a debootstrap
# rootfs; no registry is reachable, so nothing is pulled. Idempotent.
# Usage: build_test_image.sh [NAME:TAG]   (needs a running engine: provision_docker.sh)
set -euo pipefail

IMAGE=${1:-swe-gym-test:bookworm}
SUITE=bookworm
PACKAGES=python3,python3-pytest,git,patch,procps,ca-certificates
LOG=/tmp/swe_gym_build_image.log
log() { echo "[build_test_image] $*" >&2; }
die() { log "ERROR: $*"; [ -s "$LOG" ] && tail -n 30 "$LOG" >&2; exit 1; }

# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"   # debian_mirror

if docker image inspect "$IMAGE" >/dev/null 2>&1; then
  log "image $IMAGE already exists; nothing to do"
  exit 0
fi
docker info >/dev/null 2>&1 || die "no Docker engine answers; run .ci/provision_docker.sh first"
: >"$LOG"

if ! command -v debootstrap >/dev/null 2>&1; then
  log "installing debootstrap"
  export DEBIAN_FRONTEND=noninteractive
  { apt-get install -y debootstrap || { apt-get update && apt-get install -y debootstrap; }; } >>"$LOG" 2>&1 \
    || die "apt-get install debootstrap failed"
fi

WORK=$(mktemp -d "${TMPDIR:-/var/tmp}/swe_gym_rootfs.XXXXXX")
ROOTFS=$WORK/rootfs
cleanup() {
  # debootstrap may leave /proc, /sys... mounted inside the rootfs on failure.
  awk -v r="$ROOTFS/" 'index($2, r) == 1 {print $2}' /proc/mounts | sort -r | xargs -r umount -l 2>/dev/null || true
  rm -rf --one-file-system "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

MIRROR=$(debian_mirror)
log "debootstrap $SUITE from $MIRROR (log: $LOG)"
debootstrap --variant=minbase --include="$PACKAGES" "$SUITE" "$ROOTFS" "$MIRROR" >>"$LOG" 2>&1 \
  || { [ -f "$ROOTFS/debootstrap/debootstrap.log" ] && tail -n 20 "$ROOTFS/debootstrap/debootstrap.log" >>"$LOG"; die "debootstrap failed"; }

log "configuring git identity in rootfs"
chroot "$ROOTFS" git config --system user.email swe-gym@localhost
chroot "$ROOTFS" git config --system user.name swe-gym
chroot "$ROOTFS" git config --system safe.directory '*'
rm -rf "$ROOTFS"/var/cache/apt/archives/*.deb "$ROOTFS"/var/lib/apt/lists/*

log "importing $IMAGE"
tar --numeric-owner -C "$ROOTFS" -c . 2>>"$LOG" | docker import \
  --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
  --change 'CMD ["/bin/bash"]' - "$IMAGE" >>"$LOG" 2>&1 || die "docker import failed"

log "verifying $IMAGE"
if ! { docker run --rm --network none "$IMAGE" python3 -c 'import pytest, sys; print(sys.version)' &&
        docker run --rm --network none "$IMAGE" git --version; } >>"$LOG" 2>&1; then
  docker image rm "$IMAGE" >/dev/null 2>&1 || true  # so that a rerun rebuilds it
  die "verification of $IMAGE failed"
fi
tail -n 2 "$LOG" | sed 's/^/[build_test_image]   /' >&2
log "built $IMAGE ($(docker image inspect -f '{{.Size}}' "$IMAGE" | awk '{printf "%.0f MB", $1/1e6}'))"
