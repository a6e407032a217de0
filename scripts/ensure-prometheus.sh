#!/usr/bin/env bash
# Makes sure Debian's Prometheus server is installed (/usr/bin/prometheus): the alert gate's tests
# (test/activities/alerts.test.ts, issue 21) start it as a plain process of their own, with their own
# configuration and data dir in a temp dir, never the package's service (which needs no init system
# here and is never started). Any user can run the binary; only the install needs root.
# Present: exits at once, silently. Missing: installs the `prometheus` package with apt-get (root
# needed; the package lists are updated first when apt knows no such package yet).
# tooling/versions.json's `prometheus` is the version Debian bookworm gave (2.42); a different one
# installed is used as it is, with one line on stderr, since the tests need only the query API and
# alerting rules every 2.x has.
# Prints the binary's path on stdout; one line on stderr and a non-zero exit if it can't.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
bin=${SKEWLESS_PROMETHEUS:-/usr/bin/prometheus}
if [[ -x "$bin" ]]; then
  echo "$bin"
  exit 0
fi

fail() { echo "ensure-prometheus: $*" >&2; exit 1; }
command -v apt-get >/dev/null || fail "$bin is missing and there is no apt-get to install Debian's prometheus package; install Prometheus 2.x by hand or set SKEWLESS_PROMETHEUS"
[[ $(id -u) -eq 0 ]] || fail "$bin is missing; installing Debian's prometheus package needs root: run 'apt-get install prometheus' as root"

log=$(mktemp)
trap 'rm -f "$log"' EXIT
export DEBIAN_FRONTEND=noninteractive
echo "ensure-prometheus: installing Debian's prometheus package (first time only)" >&2
start=$(date +%s)
# The package lists may be missing or stale on a fresh machine: update them when apt has no candidate.
if ! apt-cache policy prometheus 2>/dev/null | grep -q 'Candidate: [0-9]'; then
  apt-get update -qq >"$log" 2>&1 || { tail -n 5 "$log" >&2; fail "apt-get update failed (log above)"; }
fi
# No recommends: prometheus-node-exporter is not needed. Without an init system the package's
# service does not start; the tests run the binary themselves.
if ! apt-get install -y -qq --no-install-recommends prometheus >"$log" 2>&1; then
  tail -n 10 "$log" >&2
  fail "apt-get install prometheus failed (log above)"
fi
[[ -x "$bin" ]] || fail "the prometheus package is installed but $bin is not there"
want=$(node -p "require('$root/tooling/versions.json').prometheus || ''" 2>/dev/null || true)
got=$("$bin" --version 2>&1 | sed -n 's/^prometheus, version \([0-9.]*\).*/\1/p')
[[ -z "$want" || "$got" == "$want"* ]] || echo "ensure-prometheus: Debian gave Prometheus $got, tooling/versions.json notes $want; using it" >&2
echo "ensure-prometheus: installed in $(( $(date +%s) - start ))s" >&2
echo "$bin"
