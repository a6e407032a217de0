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

# shellcheck source=lib/debian-package.sh
source "$(dirname "$0")/lib/debian-package.sh"
# The package's own cluster (15/main) is not used; without an init system its service does not start.
install_debian_package ensure-postgres "postgresql-$major" "$bin/postgres"
echo "$bin"
