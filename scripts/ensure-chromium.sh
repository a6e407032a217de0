#!/usr/bin/env bash
# Makes sure Debian's chromium is installed (/usr/bin/chromium): the UI test (test/ui/) drives it
# headless through playwright-core, which downloads no browser of its own.
# Present: exits at once, silently. Missing: installs the `chromium` package with apt-get (root
# needed; the package lists are updated first when apt knows no such package yet).
# Prints the browser's path on stdout; one line on stderr and a non-zero exit if it can't.
set -euo pipefail

bin=${SKEWLESS_CHROMIUM:-/usr/bin/chromium}
if [[ -x "$bin" ]]; then
  echo "$bin"
  exit 0
fi

fail() { echo "ensure-chromium: $*" >&2; exit 1; }
command -v apt-get >/dev/null || fail "$bin is missing and there is no apt-get to install Debian's chromium package; install chromium by hand or set SKEWLESS_CHROMIUM"
[[ $(id -u) -eq 0 ]] || fail "$bin is missing; installing Debian's chromium package needs root: run 'apt-get install chromium' as root"

log=$(mktemp)
trap 'rm -f "$log"' EXIT
export DEBIAN_FRONTEND=noninteractive
echo "ensure-chromium: installing Debian's chromium package (first time only)" >&2
start=$(date +%s)
# The package lists may be missing or stale on a fresh machine: update them when apt has no candidate.
if ! apt-cache policy chromium 2>/dev/null | grep -q 'Candidate: [0-9]'; then
  apt-get update -qq >"$log" 2>&1 || { tail -n 5 "$log" >&2; fail "apt-get update failed (log above)"; }
fi
if ! apt-get install -y -qq --no-install-recommends chromium >"$log" 2>&1; then
  tail -n 10 "$log" >&2
  fail "apt-get install chromium failed (log above)"
fi
[[ -x "$bin" ]] || fail "the chromium package is installed but $bin is not there"
echo "ensure-chromium: installed in $(( $(date +%s) - start ))s" >&2
echo "$bin"
