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

# shellcheck source=lib/debian-package.sh
source "$(dirname "$0")/lib/debian-package.sh"
# No recommends: prometheus-node-exporter is not needed. Without an init system the package's
# service does not start; the tests run the binary themselves.
install_debian_package ensure-prometheus prometheus "$bin" SKEWLESS_PROMETHEUS
want=$(node -p "require('$root/tooling/versions.json').prometheus || ''" 2>/dev/null || true)
got=$("$bin" --version 2>&1 | sed -n 's/^prometheus, version \([0-9.]*\).*/\1/p')
[[ -z "$want" || "$got" == "$want"* ]] || echo "ensure-prometheus: Debian gave Prometheus $got, tooling/versions.json notes $want; using it" >&2
echo "$bin"
