# Shared by the .ci scripts (sourced; expects a `die` function).

# The Debian mirror this machine's apt already uses (no host name in the repo).
debian_mirror() {
  local uri
  uri=$(awk '/^URIs:/ && $2 !~ /security/ {print $2; exit}' /etc/apt/sources.list.d/*.sources 2>/dev/null || true)
  [ -n "$uri" ] || uri=$(sed -E -n 's/^deb[[:space:]]+(\[[^]]*\][[:space:]]+)?([^[:space:]]+).*/\2/p' \
    /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null | grep -v security | head -n 1 || true)
  [ -n "$uri" ] || die "no Debian mirror found in /etc/apt/sources.list{,.d/*.sources}"
  echo "$uri"
}

# wait_until_up NAME SECONDS PID_FILE LOG CHECK [ARGS...]: run CHECK until it succeeds, the
# process in PID_FILE exits, or SECONDS pass; on failure print the log's tail and die.
wait_until_up() {
  local name=$1 limit=$2 pid_file=$3 log_file=$4 started=$SECONDS why
  shift 4
  while [ $((SECONDS - started)) -lt "$limit" ]; do
    if "$@"; then
      log "$name is up after $((SECONDS - started))s"
      return 0
    fi
    kill -0 "$(cat "$pid_file")" 2>/dev/null || break
    sleep 0.3
  done
  tail -n 30 "$log_file" >&2
  if kill -0 "$(cat "$pid_file")" 2>/dev/null; then why="no answer within $limit s"; else why="the server exited"; fi
  die "$name did not come up: $why (log: $log_file)"
}
