#!/usr/bin/env bash
# Build the real pytest task (pytest-dev__pytest-11143: image swe-gym-bench-pytest:11143 and its task row) that
# tests/grading/test_real_pytest.py grades, with benchmarks/pytest_image.py (about a minute; FROM the Django image).
# Idempotent: nothing to do when the row exists and the image it names is on the engine.
# Needs: .ci/build_django_image.sh first (its image, and the suite's venv it makes), PyPI.
# Env:   SWE_GYM_PYTEST_ROW  where the row goes (default /var/tmp/swe_gym_bench/pytest-dev__pytest-11143.json)
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
ROW=${SWE_GYM_PYTEST_ROW:-/var/tmp/swe_gym_bench/pytest-dev__pytest-11143.json}
PY=${SWE_GYM_VENV:-.venv}/bin/python
LOG=/tmp/swe_gym_build_pytest_image.log
log() { echo "[build_pytest_image] $*" >&2; }
die() { log "ERROR: $*"; [ -s "$LOG" ] && tail -n 30 "$LOG" >&2; exit 1; }
cd "$REPO"

row_image() { python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["image"])' "$ROW" 2>/dev/null || true; }
ready() { local image; image=$(row_image); [ -n "$image" ] && docker image inspect "$image" >/dev/null 2>&1; }

if ready; then
  log "task row $ROW and its image $(row_image) exist; nothing to do"
  exit 0
fi
"$PY" -c 'import swe_gym, swebench' >/dev/null 2>&1 || die "$PY cannot import swe_gym and swebench (run .ci/build_django_image.sh)"
log "building with benchmarks/pytest_image.py (log: $LOG)"
"$PY" benchmarks/pytest_image.py --row "$ROW" >"$LOG" 2>&1 || die "benchmarks/pytest_image.py failed"
ready || die "pytest_image.py succeeded but $ROW or its image is missing"
grep -E '^\[pytest_image\] (gold|task row)' "$LOG" | sed 's/^\[pytest_image\]/[build_pytest_image]  /' >&2 || true
log "built $(row_image); task row $ROW"
