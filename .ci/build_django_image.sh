#!/usr/bin/env bash
# Build the real-size Django task (django__django-11099: image swe-gym-bench-django:11099 and its task row) that
# tests/grading/test_real_django.py grades, with benchmarks/real_image.py (about 3 minutes the first time).
# Idempotent: nothing to do when the row exists and the image it names is on the engine.
#
# real_image.py imports swe_gym and swebench, so it runs in the suite's venv; when that venv lacks them, this
# makes it with ./quickstart.sh test's own install (then `pytest --version`), which the suite's run reuses.
# Needs: a running engine (provision_docker.sh), root (debootstrap, chroot), PyPI and the Debian archive.
# Env:   SWE_GYM_DJANGO_ROW     where the row goes (default /var/tmp/swe_gym_bench/django__django-11099.json)
#        SWE_GYM_DJANGO_PYTHON  a Python with swe_gym and swebench to run real_image.py with (default: the venv's)
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
ROW=${SWE_GYM_DJANGO_ROW:-/var/tmp/swe_gym_bench/django__django-11099.json}
VENV=${SWE_GYM_VENV:-.venv}
LOG=/tmp/swe_gym_build_django_image.log
APT_LOG=/tmp/swe_gym_apt.log
log() { echo "[build_django_image] $*" >&2; }
die() { log "ERROR: $*"; [ -s "$LOG" ] && tail -n 30 "$LOG" >&2; exit 1; }
cd "$REPO"

# row_image: the image the row names (empty when there is no readable row).
row_image() { python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["image"])' "$ROW" 2>/dev/null || true; }
ready() { local image; image=$(row_image); [ -n "$image" ] && docker image inspect "$image" >/dev/null 2>&1; }

if ready; then
  log "task row $ROW and its image $(row_image) exist; nothing to do"
  exit 0
fi
timeout 10 docker info >/dev/null 2>&1 || die "no Docker engine answers; run .ci/provision_docker.sh first"
: >"$LOG"

if ! command -v debootstrap >/dev/null 2>&1; then
  log "installing debootstrap"
  export DEBIAN_FRONTEND=noninteractive
  { apt-get install -y debootstrap || { apt-get update && apt-get install -y debootstrap; }; } >"$APT_LOG" 2>&1 \
    || { tail -n 30 "$APT_LOG" >&2; die "apt-get install debootstrap failed (log: $APT_LOG)"; }
fi

PY=${SWE_GYM_DJANGO_PYTHON:-$VENV/bin/python}
if ! "$PY" -c 'import swe_gym, swebench' >/dev/null 2>&1; then
  [ -z "${SWE_GYM_DJANGO_PYTHON:-}" ] || die "SWE_GYM_DJANGO_PYTHON=$PY cannot import swe_gym and swebench"
  log "making the suite's venv ($VENV) with ./quickstart.sh test's install (log: $LOG)"
  ./quickstart.sh test --version >>"$LOG" 2>&1 || die "./quickstart.sh test's install failed"
  "$PY" -c 'import swe_gym, swebench' >>"$LOG" 2>&1 || die "$PY cannot import swe_gym and swebench after the install"
fi

log "building with benchmarks/real_image.py (about 3 minutes the first time; log: $LOG)"
"$PY" benchmarks/real_image.py --row "$ROW" >>"$LOG" 2>&1 || die "benchmarks/real_image.py failed"
ready || die "real_image.py succeeded but $ROW or its image is missing"
grep -E '^\[real_image\] (official eval script|image )' "$LOG" | sed 's/^\[real_image\]/[build_django_image]  /' >&2 || true
log "built $(row_image); task row $ROW"
