#!/bin/sh
# TEST STAND-IN for OpenSandbox's bootstrap.sh (not the real one; see README.md).
#
# opensandbox-server copies this file to /opt/opensandbox/bootstrap.sh in every
# sandbox and makes it the container's ENTRYPOINT; the sandbox's entrypoint
# (the SDK's `entrypoint=`, default `tail -f /dev/null`) arrives as "$@".
# Like the real script it starts execd in the background, runs the user
# command, and stops execd when that command exits (its status is the
# container's exit status). The stand-in execd is a Python script, so it runs
# with the sandbox image's python3.

EXECD="${EXECD:-/opt/opensandbox/execd}"
EXECD_ENVS="${EXECD_ENVS:-/opt/opensandbox/.env}"
mkdir -p "$(dirname "$EXECD_ENVS")" 2>/dev/null || true
touch "$EXECD_ENVS" 2>/dev/null || echo "warning: cannot create EXECD_ENVS=$EXECD_ENVS" >&2
export EXECD_ENVS

# Same command forms as the real bootstrap: BOOTSTRAP_CMD, `-c "cmd"`, or argv.
SHELL_BIN="$(command -v bash || command -v sh)"
if [ -n "${BOOTSTRAP_CMD:-}" ]; then
	set -- "$SHELL_BIN" -c "$BOOTSTRAP_CMD"
elif [ "${1:-}" = "-c" ]; then
	shift
	set -- "$SHELL_BIN" -c "$*"
elif [ $# -eq 0 ]; then
	set -- "$SHELL_BIN"
fi

PYTHON="$(command -v python3 || command -v python || true)"
EXECD_PID=""
if [ -n "$PYTHON" ]; then
	echo "starting OpenSandbox execd TEST STAND-IN at $EXECD."
	"$PYTHON" "$EXECD" &
	EXECD_PID=$!
else
	echo "error: the execd stand-in needs python3 in the sandbox image; execd not started" >&2
fi

CMD_PID=""
# shellcheck disable=SC2317  # called from the traps below
stop() {
	[ -n "$CMD_PID" ] && kill -"$1" "$CMD_PID" 2>/dev/null
	[ -n "$EXECD_PID" ] && kill -"$1" "$EXECD_PID" 2>/dev/null
	exit 0
}
trap 'stop TERM' TERM
trap 'stop INT' INT

"$@" &
CMD_PID=$!
wait "$CMD_PID"
CMD_STATUS=$?
[ -n "$EXECD_PID" ] && kill -TERM "$EXECD_PID" 2>/dev/null && wait "$EXECD_PID" 2>/dev/null
exit "$CMD_STATUS"
