#!/usr/bin/env bash
# Provision a REAL apptainer on a CI/dev machine that has none (Debian 12 has
# no apptainer package; Debian sid's 1.4.x needs a newer glibc). This is CI/dev
# provisioning only: on a real cluster the site's native apptainer/singularity
# is used and this script is not run.
#
# What it does (idempotent; run as root; needs only Debian's archive):
#  * debootstrap a minimal Debian sid rootfs with apptainer into $ROOTFS, using
#    the mirror this machine's apt already uses (no host name in the repo);
#  * install a wrapper as /usr/local/bin/apptainer and /usr/local/bin/singularity
#    (spython only ever runs `singularity`) that runs the rootfs's apptainer in a
#    private mount namespace pivot_root()ed into $ROOTFS, with the host paths a
#    provider uses (/tmp, /var/tmp, /root, /home, /work, /run/user, the cwd,
#    $SWE_GYM_APPTAINER_BINDS) bound at the same paths. As root it uses a fresh
#    mount namespace per call; as an ordinary user a per-user holder process
#    keeps one user+mount namespace alive (see the wrapper's header);
#  * make /dev/fuse usable by ordinary users (mode 0666, Debian's udev default),
#    which squashfuse/fuse-overlayfs need for unprivileged SIF and overlay use;
#  * create the unprivileged account $SWE_GYM_APPTAINER_TEST_USER (default
#    swegymtest) that the tests use to run apptainer as an ordinary user.
# As root, this machine lacks CAP_SYS_RESOURCE: pass --no-privs to apptainer.
# Usage: provision_apptainer.sh          (env: SWE_GYM_APPTAINER_BASE, default /opt/swe-gym-apptainer)
set -euo pipefail

BASE=${SWE_GYM_APPTAINER_BASE:-/opt/swe-gym-apptainer}
ROOTFS=$BASE/rootfs
SUITE=sid
PACKAGES=apptainer,squashfs-tools,squashfuse,fuse2fs,fuse-overlayfs,fuse3,e2fsprogs,gocryptfs
BINDIR=/usr/local/bin
LOG=/tmp/swe_gym_provision_apptainer.log
log() { echo "[provision_apptainer] $*" >&2; }
die() { log "ERROR: $*"; [ -s "$LOG" ] && tail -n 30 "$LOG" >&2; exit 1; }

# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"   # new_rootfs, keep_rootfs

# The wrapper, with @ROOTFS@ replaced by $ROOTFS.
wrapper_text() {
  sed "s#@ROOTFS@#$ROOTFS#g" <<'WRAPPER'
#!/bin/bash
# swe-gym apptainer wrapper, installed by .ci/provision_apptainer.sh (CI/dev
# machines without a native apptainer only; on a real cluster the native
# apptainer is used and this file is not installed).
#
# Runs /usr/bin/apptainer of a Debian sid rootfs inside a private mount
# namespace that pivot_root()s into that rootfs, with /proc, /sys, /dev, the
# host's /etc/passwd and /etc/group, and the host paths a provider uses bound at
# the same paths. Only exec chains: the PID the caller gets becomes apptainer,
# stdin/stdout/stderr and the exit status are apptainer's.
#  * root (with CAP_SYS_ADMIN): a fresh mount namespace per call.
#  * anyone else: a user namespace is needed to mount, and `apptainer exec
#    instance://` only works from the user namespace the instance was started
#    from, so a per-user holder process (`sleep infinity`) keeps one user+mount
#    namespace alive and every call nsenter()s it. Holder state:
#    ${SWE_GYM_APPTAINER_STATE:-/tmp/.swe-gym-apptainer-$UID}/holder ("PID STARTTIME").
# Extra host paths to bind: SWE_GYM_APPTAINER_BINDS=/a:/b (user mode: read when
# the holder starts; kill the holder to change them).
ROOTFS=${SWE_GYM_APPTAINER_ROOTFS:-@ROOTFS@}

# --- mount namespace setup (runs inside the new namespace) -------------------
setup_mounts() {  # $1: cwd to bind as well
  set -e
  mount --bind "$ROOTFS" "$ROOTFS"
  mount --rbind /proc "$ROOTFS/proc"
  mount --rbind /sys "$ROOTFS/sys"
  mount --rbind /dev "$ROOTFS/dev"
  mount --bind /etc/passwd "$ROOTFS/etc/passwd"
  mount --bind /etc/group "$ROOTFS/etc/group"
  local -a extra=() bound=()
  local p q t covered
  IFS=: read -r -a extra <<<"${SWE_GYM_APPTAINER_BINDS-}"
  for p in /tmp /var/tmp /root /home /work /run/user /run/docker.sock "$1" "${extra[@]}"; do
    [ -n "$p" ] && [ -e "$p" ] || continue
    p=$(realpath -e -- "$p") || continue
    case "$p" in /|/proc|/proc/*|/sys|/sys/*|/dev|/dev/*) continue ;; esac
    covered=
    for q in "${bound[@]}"; do case "$p" in "$q"|"$q"/*) covered=1 ;; esac; done
    [ -z "$covered" ] || continue
    t=$ROOTFS$p
    if [ ! -e "$t" ]; then
      if [ -d "$p" ]; then mkdir -p "$t" 2>/dev/null; else mkdir -p "${t%/*}" 2>/dev/null && : >"$t" 2>/dev/null; fi ||
        { echo "apptainer wrapper: warning: no mount point for $p in $ROOTFS; not bound" >&2; continue; }
    fi
    mount --rbind "$p" "$t"
    bound+=("$p")
  done
  cd "$ROOTFS"
  pivot_root . mnt   # the old root lands on /mnt, then goes away
  umount -l /mnt
  set +e
}

case "${1-}" in
__swe_gym_root__)  # root: new mount namespace for this call
  shift; cwd=$PWD
  setup_mounts "$cwd"   # errexit: a failed mount ends the call (not inside || on purpose)
  cd "$cwd" 2>/dev/null || cd /
  exec /usr/bin/apptainer "$@" ;;
__swe_gym_holder__)  # user: the long-lived namespace holder
  state=$2; cwd=$PWD
  setup_mounts "$cwd"   # errexit: a failed mount ends the call (not inside || on purpose)
  read -r -a st </proc/self/stat
  echo "$$ ${st[21]}" >"$state/holder.new" && mv -f "$state/holder.new" "$state/holder"
  exec /usr/bin/setpriv --inh-caps=-all --ambient-caps=-all -- /usr/bin/sleep infinity ;;
esac

[ -x "$ROOTFS/usr/bin/apptainer" ] || { echo "apptainer wrapper: no rootfs at $ROOTFS (run .ci/provision_apptainer.sh)" >&2; exit 127; }
uid=$(id -u)
if [ "$uid" = 0 ]; then
  while read -r k v; do [ "$k" = CapEff: ] && break; done </proc/self/status
  if (( 0x${v:-0} >> 21 & 1 )); then   # CAP_SYS_ADMIN
    exec unshare --mount --propagation private -- /bin/bash "$0" __swe_gym_root__ "$@"
  fi
fi

# user mode: find (or start) this user's namespace holder, then enter it.
state=${SWE_GYM_APPTAINER_STATE:-/tmp/.swe-gym-apptainer-$uid}
holder_pid() {
  local pid start st
  read -r pid start 2>/dev/null <"$state/holder" || return 1
  read -r -a st 2>/dev/null </proc/"$pid"/stat || return 1
  # same process (start time), not a zombie, namespaces still there
  [ "${st[21]}" = "$start" ] && [ "${st[2]}" != Z ] && [ -e "/proc/$pid/ns/mnt" ] && echo "$pid"
}
if ! pid=$(holder_pid); then
  mkdir -p -m 700 "$state" && [ -O "$state" ] && [ ! -L "$state" ] ||
    { echo "apptainer wrapper: bad state dir $state" >&2; exit 127; }
  exec 9>>"$state/lock"; flock 9
  if ! pid=$(holder_pid); then
    rm -f "$state/holder"
    # double fork: the holder is nobody's child here (the caller's PID becomes apptainer)
    ( setsid unshare --user --map-current-user --keep-caps --mount --propagation private -- \
        /bin/bash "$0" __swe_gym_holder__ "$state" </dev/null >/dev/null 2>"$state/holder.log" 9>&- & )
    for _ in $(seq 250); do pid=$(holder_pid) && break; sleep 0.02; done
    pid=$(holder_pid) || { echo "apptainer wrapper: namespace holder failed:" >&2; cat "$state/holder.log" >&2; exit 127; }
  fi
  exec 9>&-
fi
if [ -d "/proc/$pid/root$PWD" ]; then wd=$PWD; else wd=/; fi
exec nsenter --target "$pid" --user --mount --preserve-credentials -- /usr/bin/env -C "$wd" /usr/bin/apptainer "$@"
WRAPPER
}

install_wrapper() {
  local tmp
  tmp=$(mktemp "$BINDIR/.apptainer.XXXXXX")
  wrapper_text >"$tmp"
  chmod 755 "$tmp"
  mv -f "$tmp" "$BINDIR/apptainer"
  ln -sfn apptainer "$BINDIR/singularity"
}

# An unprivileged account for the tests that run apptainer as an ordinary user.
TEST_USER=${SWE_GYM_APPTAINER_TEST_USER:-swegymtest}
ensure_test_user() {
  id "$TEST_USER" >/dev/null 2>&1 || useradd --create-home --shell /bin/bash "$TEST_USER" \
    || log "warning: cannot create the test user $TEST_USER"
}

fix_dev_fuse() {
  if [ -c /dev/fuse ] && [ "$(stat -c %a /dev/fuse)" != 666 ]; then
    log "chmod 0666 /dev/fuse (unprivileged squashfuse/fuse-overlayfs)"
    chmod 0666 /dev/fuse || log "warning: cannot chmod /dev/fuse; ordinary users get slow SIF extraction"
  fi
}

# Fast path: rootfs there, wrapper current and working.
if [ -x "$ROOTFS/usr/bin/apptainer" ] && [ "$(stat -c %a "$ROOTFS")" = 755 ] && wrapper_text | cmp -s - "$BINDIR/apptainer" &&
   [ -L "$BINDIR/singularity" ] && "$BINDIR/apptainer" --version >/dev/null 2>&1; then
  fix_dev_fuse
  ensure_test_user
  log "apptainer already provisioned ($("$BINDIR/apptainer" --version)); nothing to do"
  exit 0
fi
[ "$(id -u)" = 0 ] || die "run as root"
: >"$LOG"

if [ ! -x "$ROOTFS/usr/bin/apptainer" ]; then
  new_rootfs "$SUITE" "$PACKAGES" "$BASE" "$LOG"
  cp /etc/hosts /etc/resolv.conf "$NEW/etc/"   # apptainer build reads /etc/hosts
  # mount points for the wrapper's binds (an ordinary user cannot create them)
  mkdir -p "$NEW/run/user"
  # Bigger --writable-tmpfs (MiB; default 64). The tmpfs is in RAM and capped by it.
  sed -i -E 's/^#?[[:space:]]*sessiondir max size = .*/sessiondir max size = 1024/' \
    "$NEW/etc/apptainer/apptainer.conf"
  [ -x "$NEW/usr/bin/apptainer" ] || die "no apptainer in the new rootfs"
  keep_rootfs "$ROOTFS"
fi

cp /etc/hosts /etc/resolv.conf "$ROOTFS/etc/" 2>/dev/null || true
chmod 755 "$BASE" "$ROOTFS"
fix_dev_fuse
ensure_test_user
log "installing $BINDIR/apptainer and $BINDIR/singularity"
install_wrapper
"$BINDIR/apptainer" --version >>"$LOG" 2>&1 || die "the installed apptainer wrapper does not run"
log "$("$BINDIR/apptainer" --version) ready (rootfs $ROOTFS, $(du -sm "$ROOTFS" | cut -f1) MB)"
