#!/usr/bin/env bash
# The README's two Quick start commands. Each sets up what it needs (a venv in
# .venv with swe_gym and its dev extras) and then runs:
#   ./quickstart.sh rollout [swe-gym rollout options]   the main job: bundled tasks, local provider
#   ./quickstart.sh test [pytest options]               the whole test suite
set -euo pipefail
cd "$(dirname "$0")"
VENV=${SWE_GYM_VENV:-.venv}
PYTHON=${PYTHON:-python3}

setup() {
  "$PYTHON" -c 'import sys; sys.exit(sys.version_info < (3, 11))' \
    || { echo "swe_gym needs Python >= 3.11 (found $("$PYTHON" --version 2>&1)); set PYTHON=..." >&2; exit 1; }
  [ -x "$VENV/bin/python" ] || "$PYTHON" -m venv "$VENV"
  if [ ! -f "$VENV/.swe_gym-installed" ] || [ pyproject.toml -nt "$VENV/.swe_gym-installed" ]; then
    echo "installing swe_gym[dev] into $VENV ..." >&2
    "$VENV/bin/python" -m pip install --quiet --upgrade pip
    "$VENV/bin/python" -m pip install --quiet -e ".[dev]"
    touch "$VENV/.swe_gym-installed"
  fi
}

case "${1:-}" in
  rollout) shift; setup; exec "$VENV/bin/swe-gym" rollout --policy oracle "$@" ;;
  test) shift; setup; exec "$VENV/bin/python" -m pytest "$@" ;;
  *) echo "usage: $0 rollout|test [options]" >&2; exit 2 ;;
esac
