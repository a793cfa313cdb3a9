#!/usr/bin/env bash
# Build the SWE-bench-style sympy task (sympy__sympy-90001: image swe-gym-bench-sympy:digits and its task row) that
# tests/grading/test_real_sympy.py grades, with benchmarks/sympy_image.py (about a minute; FROM the Django image).
# Idempotent: nothing to do when the row exists and the image it names is on the engine.
# Needs: .ci/build_django_image.sh first (its image, and the suite's venv it makes), PyPI.
# Env:   SWE_GYM_SYMPY_ROW  where the row goes (default /var/tmp/swe_gym_bench/sympy__sympy-90001.json)
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
ROW=${SWE_GYM_SYMPY_ROW:-/var/tmp/swe_gym_bench/sympy__sympy-90001.json}
PY=${SWE_GYM_VENV:-.venv}/bin/python
LOG=/tmp/swe_gym_build_sympy_image.log
log() { echo "[build_sympy_image] $*" >&2; }
die() { log "ERROR: $*"; [ -s "$LOG" ] && tail -n 30 "$LOG" >&2; exit 1; }
cd "$REPO"

row_image() { python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["image"])' "$ROW" 2>/dev/null || true; }
ready() { local image; image=$(row_image); [ -n "$image" ] && docker image inspect "$image" >/dev/null 2>&1; }

if ready; then
  log "task row $ROW and its image $(row_image) exist; nothing to do"
  exit 0
fi
"$PY" -c 'import swe_gym, swebench' >/dev/null 2>&1 || die "$PY cannot import swe_gym and swebench (run .ci/build_django_image.sh)"
log "building with benchmarks/sympy_image.py (log: $LOG)"
"$PY" benchmarks/sympy_image.py --row "$ROW" >"$LOG" 2>&1 || die "benchmarks/sympy_image.py failed"
ready || die "sympy_image.py succeeded but $ROW or its image is missing"
log "built $(row_image); task row $ROW"
