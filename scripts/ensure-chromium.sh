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

# shellcheck source=lib/debian-package.sh
source "$(dirname "$0")/lib/debian-package.sh"
install_debian_package ensure-chromium chromium "$bin" SKEWLESS_CHROMIUM
echo "$bin"
