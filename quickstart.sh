#!/usr/bin/env bash
# The README's two Quick start commands. Each sets up what it needs (a venv in
# .venv: swe_gym alone for the rollout; with every extra the suite tests for the tests) and then runs:
#   ./quickstart.sh rollout [swe-gym rollout options]   the main job: bundled tasks, local provider
#   ./quickstart.sh test [pytest options]               the whole test suite
set -euo pipefail
cd "$(dirname "$0")"
VENV=${SWE_GYM_VENV:-.venv}
PYTHON=${PYTHON:-python3}

setup() {  # $1: the install target, "." or ".[dev]"
  "$PYTHON" -c 'import sys; sys.exit(sys.version_info < (3, 11))' \
    || { echo "swe_gym needs Python >= 3.11 (found $("$PYTHON" --version 2>&1)); set PYTHON=..." >&2; exit 1; }
  [ -x "$VENV/bin/python" ] || "$PYTHON" -m venv "$VENV"
  local marker="$VENV/.swe_gym-installed${1#.}"
  if [ ! -f "$marker" ] || [ pyproject.toml -nt "$marker" ]; then
    echo "installing swe_gym$([ "$1" = . ] || echo "${1#.}") into $VENV ..." >&2
    "$VENV/bin/python" -m pip install --quiet --upgrade pip
    "$VENV/bin/python" -m pip install --quiet -e "$1"
    touch "$marker"
  fi
}

case "${1:-}" in
  rollout) shift; setup .; exec "$VENV/bin/swe-gym" rollout --policy oracle "$@" ;;
  test) shift; setup ".[dev]"; exec "$VENV/bin/python" -m pytest "$@" ;;
  *) echo "usage: $0 rollout|test [options]" >&2; exit 2 ;;
esac
