#!/usr/bin/env bash
# Builds the Temporal UI server (github.com/temporalio/ui-server/v2, the version docker-compose.yml's
# temporalio/ui image names; its web assets are embedded in the module) from the Go module proxy once.
# It serves the UI of the stack without Docker (stack/, `npm run stack`) against the stack's frontend:
# the UI the Temporal CLI embeds only talks to the CLI's own dev server.
#   ${SKEWLESS_CACHE:-~/.cache/skewless}/temporal-ui-<version>/temporal-ui-server
# Prints the binary's path on stdout; progress goes to stderr.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
version=$(node -p "require('$root/tooling/versions.json').temporalUi")
cache=${SKEWLESS_CACHE:-$HOME/.cache/skewless}
dir="$cache/temporal-ui-$version"
bin="$dir/temporal-ui-server"
tag=ensure-temporal-ui
module=github.com/temporalio/ui-server/v2

if [[ -x "$bin" && -f "$dir/.complete" ]]; then
  echo "$bin"
  exit 0
fi
command -v go >/dev/null || { echo "$tag: go is not installed; it is needed once to build the Temporal UI server" >&2; exit 1; }
mkdir -p "$cache"
exec 9>"$dir.lock"
if ! flock -n 9; then
  echo "$tag: another build of $dir is running; waiting for it" >&2
  flock 9
fi
if [[ -x "$bin" && -f "$dir/.complete" ]]; then
  echo "$bin"
  exit 0
fi

mkdir -p "$dir"
work=$(mktemp -d "$dir/.build.XXXXXX")
trap 'kill "${ticker:-0}" 2>/dev/null || true; rm -rf "$work"' EXIT
start=$(date +%s)
echo "$tag: building the Temporal UI server $version from the Go module proxy into $dir (first time only)" >&2

# The module's go.mod replaces grpc-gateway (v1) with Temporal's fork; a replace only applies in the main
# module, so `go install module@version` refuses it: a wrapper module requires the UI and repeats it.
( cd "$work" && go mod download -json "$module@$version" >mod.json ) || { cat "$work/mod.json" >&2; echo "$tag: cannot download $module@$version" >&2; exit 1; }
gomod=$(node -p "require('$work/mod.json').GoMod")
mkdir "$work/wrapper"
{
  echo "module skewless.local/temporal-ui"
  echo
  grep -m1 '^go ' "$gomod"
  echo
  grep '^replace ' "$gomod"
} >"$work/wrapper/go.mod"

( cd "$work/wrapper" && go get "$module/cmd/server@$version" >"$work/build.log" 2>&1 &&
  GOFLAGS="${GOFLAGS:-} -trimpath" go build -v -o "$work/temporal-ui-server" "$module/cmd/server" >>"$work/build.log" 2>&1 ) 9>&- &
builder=$!
( while sleep 30; do
    echo "$tag: still building ($(( $(date +%s) - start ))s, $(wc -l <"$work/build.log") lines of go output)" >&2
  done ) 9>&- &
ticker=$!
if ! wait "$builder"; then
  tail -n 30 "$work/build.log" >&2
  echo "$tag: building $module/cmd/server@$version failed (log above)" >&2
  exit 1
fi
kill "$ticker" 2>/dev/null || true
mv "$work/temporal-ui-server" "$bin"
"$bin" --version >&2
echo "$version built in $(( $(date +%s) - start ))s" >"$dir/.complete"
echo "$tag: built in $(( $(date +%s) - start ))s" >&2
echo "$bin"
