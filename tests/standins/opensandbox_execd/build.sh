#!/usr/bin/env bash
# Build the execd TEST STAND-IN image for opensandbox-server's `execd_image`
# without a registry or a base image: `tar | docker import` of /execd,
# /bootstrap.sh and a copy of the host's `tail` with its shared libraries (the
# server starts the execd image with `tail -f /dev/null` to copy the two files
# out of it). Idempotent: skips when an image with the same content exists.
# Usage: build.sh [NAME:TAG] [--force]
# After a rebuild, restart opensandbox-server: it caches /execd in memory.
set -euo pipefail

IMAGE=swe-gym-opensandbox-execd-standin:test
FORCE=0
for arg in "$@"; do
  case "$arg" in
    --force) FORCE=1 ;;
    *) IMAGE=$arg ;;
  esac
done
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
log() { echo "[build_execd_standin] $*" >&2; }
die() { log "ERROR: $*"; exit 1; }

docker info >/dev/null 2>&1 || die "no Docker engine answers"
TAIL=$(command -v tail) || die "tail not found on the host"
HASH=$(cat "$HERE/execd" "$HERE/bootstrap.sh" "$HERE/build.sh" "$TAIL" | sha256sum | cut -c1-16)

if [ "$FORCE" = 0 ] &&
   [ "$(docker image inspect -f '{{index .Config.Labels "swe_gym.standin_hash"}}' "$IMAGE" 2>/dev/null)" = "$HASH" ]; then
  log "image $IMAGE is up to date ($HASH); nothing to do"
  exit 0
fi

STAGE=$(mktemp -d "${TMPDIR:-/tmp}/execd_standin.XXXXXX")
trap 'rm -rf "$STAGE"' EXIT
install -m 0755 "$HERE/execd" "$STAGE/execd"
install -m 0755 "$HERE/bootstrap.sh" "$STAGE/bootstrap.sh"
mkdir -p "$STAGE/usr/bin" "$STAGE/tmp"
cp -L "$TAIL" "$STAGE/usr/bin/tail"
# Shared libraries and the dynamic loader, at the paths the binary asks for.
for lib in $(ldd "$TAIL" | grep -o '/[^ ]*'); do
  mkdir -p "$STAGE$(dirname "$lib")"
  cp -L "$lib" "$STAGE$lib"
done

OLD_ID=$(docker image inspect -f '{{.Id}}' "$IMAGE" 2>/dev/null || true)
log "importing $IMAGE"
tar --numeric-owner --owner=0 --group=0 -C "$STAGE" -c . | docker import \
  --change 'ENV PATH=/usr/bin:/bin' \
  --change 'CMD ["tail", "-f", "/dev/null"]' \
  --change "LABEL swe_gym.standin_hash=$HASH" \
  --change 'LABEL swe_gym.note="TEST STAND-IN for OpenSandbox execd, not the real execd"' \
  - "$IMAGE" >/dev/null || die "docker import failed"

docker run --rm --network none "$IMAGE" tail --version >/dev/null 2>&1 ||
  die "the image's tail does not run"
if [ -n "$OLD_ID" ] && [ "$OLD_ID" != "$(docker image inspect -f '{{.Id}}' "$IMAGE")" ]; then
  docker image rm "$OLD_ID" >/dev/null 2>&1 || true  # the previous build, now untagged
fi
log "built $IMAGE ($HASH)"
