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

# new_rootfs SUITE PACKAGES BASE LOG: debootstrap a minbase Debian SUITE with PACKAGES into a new folder under
# BASE, with the folders the wrappers bind onto; sets NEW. It is removed if the script exits before keep_rootfs.
new_rootfs() {
  local suite=$1 packages=$2 base=$3 log_file=$4 mirror
  if ! command -v debootstrap >/dev/null 2>&1; then
    log "installing debootstrap"
    export DEBIAN_FRONTEND=noninteractive
    { apt-get install -y debootstrap || { apt-get update && apt-get install -y debootstrap; }; } >>"$log_file" 2>&1 \
      || die "apt-get install debootstrap failed"
  fi
  mkdir -p "$base"
  NEW=$(mktemp -d "$base/rootfs.new.XXXXXX")
  chmod 755 "$NEW"
  trap drop_new_rootfs EXIT
  trap 'exit 130' INT TERM
  mirror=$(debian_mirror)
  log "debootstrap $suite ($packages) from $mirror into $NEW (log: $log_file)"
  debootstrap --variant=minbase --include="$packages" "$suite" "$NEW" "$mirror" >>"$log_file" 2>&1 \
    || { [ -f "$NEW/debootstrap/debootstrap.log" ] && tail -n 20 "$NEW/debootstrap/debootstrap.log" >>"$log_file"; die "debootstrap failed"; }
  mkdir -p "$NEW/work" "$NEW/home" "$NEW/root" "$NEW/tmp" "$NEW/var/tmp"
  chmod 1777 "$NEW/tmp" "$NEW/var/tmp"
}

drop_new_rootfs() {
  awk -v r="$NEW/" 'index($2, r) == 1 {print $2}' /proc/mounts | sort -r | xargs -r umount -l 2>/dev/null || true
  rm -rf --one-file-system "$NEW"
}

# keep_rootfs ROOTFS: new_rootfs's folder, its apt caches dropped, replaces ROOTFS.
keep_rootfs() {
  rm -rf "$NEW"/var/cache/apt/archives/*.deb "$NEW"/var/lib/apt/lists/*
  rm -rf --one-file-system "$1"
  mv "$NEW" "$1"
  trap - EXIT
}
