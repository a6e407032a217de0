# Sourced by the ensure-*.sh scripts of tools Debian packages (chromium, prometheus, postgresql): installs the
# package with apt-get when its binary is missing. Root needed; the package lists are updated first
# when apt knows no such package yet; no recommends. On failure: one line on stderr, exit 1.
# Usage: install_debian_package TOOL PACKAGE BIN [OVERRIDE_VARIABLE]
install_debian_package() {
  local tool=$1 package=$2 bin=$3 override=${4:-}
  fail() { echo "$tool: $*" >&2; exit 1; }
  command -v apt-get >/dev/null || fail "$bin is missing and there is no apt-get to install Debian's $package package; install it by hand${override:+ or set $override}"
  [[ $(id -u) -eq 0 ]] || fail "$bin is missing; installing Debian's $package package needs root: run 'apt-get install $package' as root"
  local start
  # Global, not local: the EXIT trap runs after this function has returned.
  debian_package_log=$(mktemp)
  trap 'rm -f "$debian_package_log"' EXIT
  export DEBIAN_FRONTEND=noninteractive
  echo "$tool: installing Debian's $package package (first time only)" >&2
  start=$(date +%s)
  # The package lists may be missing or stale on a fresh machine: update them when apt has no candidate.
  if ! apt-cache policy "$package" 2>/dev/null | grep -q 'Candidate: [0-9]'; then
    apt-get update -qq >"$debian_package_log" 2>&1 || { tail -n 5 "$debian_package_log" >&2; fail "apt-get update failed (log above)"; }
  fi
  if ! apt-get install -y -qq --no-install-recommends "$package" >"$debian_package_log" 2>&1; then
    tail -n 10 "$debian_package_log" >&2
    fail "apt-get install $package failed (log above)"
  fi
  [[ -x "$bin" ]] || fail "the $package package is installed but $bin is not there"
  echo "$tool: installed in $(( $(date +%s) - start ))s" >&2
}
