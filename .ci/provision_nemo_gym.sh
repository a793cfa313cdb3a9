#!/usr/bin/env bash
# Provision NVIDIA NeMo Gym (PyPI's nemo-gym) for swe_gym's NeMo Gym integration on a CI/dev machine whose
# Python is too old for it: nemo-gym 0.5+ requires Python >= 3.13.14 and Debian 12 ships 3.11 (trixie's 3.13.5 is
# too old as well), so this builds a small Debian sid rootfs with its python3.13 and runs NeMo Gym there.
# CI/dev provisioning only: anywhere with a Python new enough, `pip install nemo-gym swe_gym` is all it takes.
#
# What it does (idempotent: a second run only checks; run as root; needs Debian's archive and PyPI):
#  * debootstrap a minimal Debian sid rootfs with python3.13(-venv), bubblewrap, git and patch (what swe_gym's
#    `local` provider runs) into $ROOTFS, from the mirror this machine's apt already uses (no host name in the repo);
#  * install $BASE/enter, a wrapper that runs a command inside the rootfs: a private mount namespace pivot_root()ed
#    into it, the host network shared (127.0.0.1 reaches the host's model servers), the host paths tests use
#    (/tmp, /var/tmp, /root, /home, /work, the Docker socket, the cwd, the checkout) and the host CA bundle bound at the same paths,
#    and the venv's bin first on PATH;
#  * create the venv $VENV in the rootfs and pip-install $NEMO_GYM_SPEC from PyPI plus this checkout's swe_gym
#    (editable, so the checkout's code is what runs) into it.
# Usage: provision_nemo_gym.sh
#   env: SWE_GYM_NEMO_GYM_BASE (default /var/tmp/swe-gym-nemo-gym), SWE_GYM_NEMO_GYM_SPEC (default nemo-gym==0.7.0)
set -euo pipefail

BASE=${SWE_GYM_NEMO_GYM_BASE:-/var/tmp/swe-gym-nemo-gym}
ROOTFS=$BASE/rootfs
ENTER=$BASE/enter
VENV=/opt/nemo-gym-venv   # inside the rootfs
NEMO_GYM_SPEC=${SWE_GYM_NEMO_GYM_SPEC:-nemo-gym==0.7.0}
SUITE=sid                 # the one suite whose python3.13 is >= 3.13.14
PACKAGES=python3.13,python3.13-venv,bubblewrap,git,patch,ca-certificates,procps
CHECKOUT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
LOG=/tmp/swe_gym_provision_nemo_gym.log
log() { echo "[provision_nemo_gym] $*" >&2; }
die() { log "ERROR: $*"; [ -s "$LOG" ] && tail -n 30 "$LOG" >&2; exit 1; }

# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"   # new_rootfs, keep_rootfs

# The wrapper, with @ROOTFS@, @VENV@ and @CHECKOUT@ replaced.
wrapper_text() {
  sed -e "s#@ROOTFS@#$ROOTFS#g" -e "s#@VENV@#$VENV#g" -e "s#@CHECKOUT@#$CHECKOUT#g" <<'WRAPPER'
#!/bin/bash
# swe-gym NeMo Gym rootfs wrapper, installed by .ci/provision_nemo_gym.sh (CI/dev machines whose Python is older
# than nemo-gym needs). `enter CMD [ARGS...]` runs CMD inside a Debian sid rootfs with Python 3.13 and nemo-gym:
# a private mount namespace pivot_root()ed into the rootfs (a user namespace too unless root with CAP_SYS_ADMIN),
# the host network shared, host paths bound at the same paths, the rootfs venv's bin first on PATH. Only exec
# chains: stdin/stdout/stderr and the exit status are CMD's.
ROOTFS=@ROOTFS@
if [ "${1-}" = __swe_gym_inner__ ]; then
  shift; cwd=$PWD
  set -e
  mount --bind "$ROOTFS" "$ROOTFS"
  mount --rbind /proc "$ROOTFS/proc"
  mount --rbind /sys "$ROOTFS/sys"
  mount --rbind /dev "$ROOTFS/dev"
  for f in /etc/passwd /etc/group /etc/hosts /etc/resolv.conf /etc/ssl/certs/ca-certificates.crt; do
    [ -f "$f" ] && mount --bind "$f" "$ROOTFS$f"
  done
  bound=()
  for p in /tmp /var/tmp /root /home /work /run/docker.sock @CHECKOUT@ "$cwd"; do
    [ -e "$p" ] || continue
    p=$(realpath -e -- "$p")
    case "$p" in /|/proc|/proc/*|/sys|/sys/*|/dev|/dev/*) continue ;; esac
    covered=
    for q in "${bound[@]}"; do case "$p" in "$q"|"$q"/*) covered=1 ;; esac; done
    [ -z "$covered" ] || continue
    if [ -d "$p" ]; then mkdir -p "$ROOTFS$p"; else mkdir -p "$ROOTFS${p%/*}" && : >"$ROOTFS$p"; fi
    mount --bind "$p" "$ROOTFS$p"   # not recursive: the rootfs itself lies under /var/tmp
    bound+=("$p")
  done
  cd "$ROOTFS"
  pivot_root . mnt
  umount -l /mnt
  set +e
  cd "$cwd" 2>/dev/null || cd /
  unset PYTHONPATH PYTHONHOME VIRTUAL_ENV PIP_FIND_LINKS PIP_CONSTRAINT PIP_EXTRA_INDEX_URL
  export PATH=@VENV@/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
  export PIP_CONFIG_FILE=/dev/null SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt
  export PIP_CERT=/etc/ssl/certs/ca-certificates.crt REQUESTS_CA_BUNDLE=/etc/ssl/certs/ca-certificates.crt
  exec "$@"
fi
[ -f "$ROOTFS@VENV@/pyvenv.cfg" ] || [ "${SWE_GYM_NEMO_GYM_PROVISIONING-}" = 1 ] ||
  { echo "nemo-gym wrapper: no rootfs venv at $ROOTFS@VENV@ (run .ci/provision_nemo_gym.sh)" >&2; exit 127; }
[ $# -gt 0 ] || set -- bash
while read -r k v; do [ "$k" = CapEff: ] && break; done </proc/self/status
if [ "$(id -u)" = 0 ] && (( 0x${v:-0} >> 21 & 1 )); then   # CAP_SYS_ADMIN
  exec unshare --mount --propagation private -- /bin/bash "$0" __swe_gym_inner__ "$@"
fi
exec unshare --user --map-current-user --mount --propagation private -- /bin/bash "$0" __swe_gym_inner__ "$@"
WRAPPER
}

install_wrapper() {
  local tmp
  tmp=$(mktemp "$BASE/.enter.XXXXXX")
  wrapper_text >"$tmp"
  chmod 755 "$tmp"
  mv -f "$tmp" "$ENTER"
}

# What the venv was made from: the nemo-gym spec, the checkout's path and its pyproject (swe_gym's dependencies).
venv_stamp() { printf '%s\n%s\n%s\n' "$NEMO_GYM_SPEC" "$CHECKOUT" "$(sha256sum <"$CHECKOUT/pyproject.toml")"; }
STAMP=$ROOTFS$VENV/.swe_gym_stamp

# Fast path: rootfs, wrapper and venv current, and NeMo Gym imports in it.
if [ -x "$ROOTFS/usr/bin/python3.13" ] && wrapper_text | cmp -s - "$ENTER" && venv_stamp | cmp -s - "$STAMP" &&
   "$ENTER" python -c 'import nemo_gym, swe_gym' >/dev/null 2>&1; then
  log "NeMo Gym already provisioned ($("$ENTER" python -m pip show nemo-gym 2>/dev/null | sed -n 's/^Version: /nemo-gym /p'), $ENTER); nothing to do"
  exit 0
fi
[ "$(id -u)" = 0 ] || die "run as root"
: >"$LOG"
started=$SECONDS

if [ ! -x "$ROOTFS/usr/bin/python3.13" ]; then
  new_rootfs "$SUITE" "$PACKAGES" "$BASE" "$LOG"
  [ -x "$NEW/usr/bin/python3.13" ] || die "no python3.13 in the new rootfs"
  keep_rootfs "$ROOTFS"
  log "rootfs ready after $((SECONDS - started))s"
fi
chmod 755 "$BASE" "$ROOTFS"
install_wrapper

if ! venv_stamp | cmp -s - "$STAMP"; then
  export SWE_GYM_NEMO_GYM_PROVISIONING=1
  log "pip-installing $NEMO_GYM_SPEC and swe_gym (editable, $CHECKOUT) into $VENV (log: $LOG)"
  rm -f "$STAMP"
  [ -f "$ROOTFS$VENV/pyvenv.cfg" ] || "$ENTER" python3.13 -m venv "$VENV" >>"$LOG" 2>&1 || die "python3.13 -m venv failed"
  "$ENTER" "$VENV/bin/python" -m pip install --no-input --progress-bar off "$NEMO_GYM_SPEC" -e "$CHECKOUT" \
    >>"$LOG" 2>&1 || die "pip install $NEMO_GYM_SPEC swe_gym failed"
  venv_stamp >"$STAMP"
fi
"$ENTER" python -c 'import nemo_gym, swe_gym' >>"$LOG" 2>&1 || die "nemo_gym or swe_gym does not import in the rootfs"
log "NeMo Gym ready after $((SECONDS - started))s ($ENTER; rootfs $(du -sm "$ROOTFS" | cut -f1) MB)"
