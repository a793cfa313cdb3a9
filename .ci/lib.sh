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
