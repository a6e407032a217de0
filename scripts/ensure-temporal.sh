#!/usr/bin/env bash
# Builds the Temporal CLI (dev server + UI) from the Go module proxy once, and reuses it.
# The binary is cached outside the checkout, keyed by version, so fresh clones and CI share it:
#   ${SKEWLESS_CACHE:-~/.cache/skewless}/temporal-<version>/temporal
# Prints the binary's path on stdout; progress goes to stderr.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
version=$(node -p "require('$root/tooling/versions.json').temporalCli")
cache=${SKEWLESS_CACHE:-$HOME/.cache/skewless}
dir="$cache/temporal-$version"
bin="$dir/temporal"

if [[ -x "$bin" && -f "$dir/.complete" ]]; then
  echo "$bin"
  exit 0
fi

command -v go >/dev/null || { echo "ensure-temporal: go is not installed; it is needed once to build the Temporal CLI" >&2; exit 1; }
mkdir -p "$dir"
work=$(mktemp -d "$dir/.build.XXXXXX")
trap 'kill "${ticker:-0}" 2>/dev/null || true; rm -rf "$work"' EXIT

echo "ensure-temporal: building temporal $version from the Go module proxy into $dir (first time only, a few minutes)" >&2
start=$(date +%s)
# -v names each package as it compiles: counted below as progress instead of flooding the log.
( GOBIN="$work" GOFLAGS="${GOFLAGS:-} -trimpath" go install -v "github.com/temporalio/cli/cmd/temporal@$version" >"$work/build.log" 2>&1 ) &
builder=$!
( while sleep 20; do
    echo "ensure-temporal: still building ($(( $(date +%s) - start ))s, $(wc -l <"$work/build.log") packages compiled)" >&2
  done ) &
ticker=$!
if ! wait "$builder"; then
  tail -n 30 "$work/build.log" >&2
  echo "ensure-temporal: go install github.com/temporalio/cli/cmd/temporal@$version failed (log above)" >&2
  exit 1
fi
kill "$ticker" 2>/dev/null || true
mv "$work/temporal" "$bin"
"$bin" --version >&2
echo "$version built in $(( $(date +%s) - start ))s" >"$dir/.complete"
echo "ensure-temporal: built in $(( $(date +%s) - start ))s" >&2
echo "$bin"
