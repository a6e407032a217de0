#!/usr/bin/env bash
# Makes sure Debian's PostgreSQL server of the pinned major (tooling/versions.json: postgresMajor) is
# installed: the stack without Docker (stack/, `npm run stack`) runs its programs from
# /usr/lib/postgresql/<major>/bin as a cluster of its own, never the package's service.
# Present: exits at once, silently. Missing: installs `postgresql-<major>` with apt-get (root
# needed; the package lists are updated first when apt knows no such package yet).
# Prints the bin dir on stdout; one line on stderr and a non-zero exit if it can't.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
major=$(node -p "require('$root/tooling/versions.json').postgresMajor")
bin=/usr/lib/postgresql/$major/bin
if [[ -x "$bin/postgres" && -x "$bin/initdb" && -x "$bin/pg_isready" && -x "$bin/psql" ]]; then
  echo "$bin"
  exit 0
fi

fail() { echo "ensure-postgres: $*" >&2; exit 1; }
pkg=postgresql-$major
command -v apt-get >/dev/null || fail "$bin/postgres is missing and there is no apt-get to install Debian's $pkg package; install PostgreSQL $major by hand"
[[ $(id -u) -eq 0 ]] || fail "$bin/postgres is missing; installing Debian's $pkg package needs root: run 'apt-get install $pkg' as root"

log=$(mktemp)
trap 'rm -f "$log"' EXIT
export DEBIAN_FRONTEND=noninteractive
echo "ensure-postgres: installing Debian's $pkg package (first time only)" >&2
start=$(date +%s)
if ! apt-cache policy "$pkg" 2>/dev/null | grep -q 'Candidate: [0-9]'; then
  apt-get update -qq >"$log" 2>&1 || { tail -n 5 "$log" >&2; fail "apt-get update failed (log above)"; }
fi
# The package's own cluster (15/main) is not used; without an init system its service does not start.
if ! apt-get install -y -qq --no-install-recommends "$pkg" >"$log" 2>&1; then
  tail -n 10 "$log" >&2
  fail "apt-get install $pkg failed (log above)"
fi
[[ -x "$bin/postgres" ]] || fail "the $pkg package is installed but $bin/postgres is not there"
echo "ensure-postgres: installed in $(( $(date +%s) - start ))s" >&2
echo "$bin"
