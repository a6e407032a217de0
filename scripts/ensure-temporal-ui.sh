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

# shellcheck source=lib/go-build.sh
source "$root/scripts/lib/go-build.sh"
built() { [[ -x "$bin" && -f "$dir/.complete" ]]; }
go_build_begin "$tag" "$dir" built "$bin" "the Temporal UI server"
echo "$tag: building the Temporal UI server $version from the Go module proxy into $dir (first time only)" >&2

# Older releases' go.mod replace grpc-gateway (v1) with Temporal's fork (v2.55.0's has no replace); a
# replace only applies in the main module, so `go install module@version` refuses it: a wrapper module
# requires the UI and repeats any replace it has.
( cd "$work" && go mod download -json "$module@$version" >mod.json ) || { cat "$work/mod.json" >&2; echo "$tag: cannot download $module@$version" >&2; exit 1; }
gomod=$(node -p "require('$work/mod.json').GoMod")
mkdir "$work/wrapper"
{
  echo "module skewless.local/temporal-ui"
  echo
  grep -m1 '^go ' "$gomod"
  echo
  grep '^replace ' "$gomod" || true
} >"$work/wrapper/go.mod"

( cd "$work/wrapper" && go get "$module/cmd/server@$version" >"$work/build.log" 2>&1 &&
  GOFLAGS="${GOFLAGS:-} -trimpath" go build -v -o "$work/temporal-ui-server" "$module/cmd/server" >>"$work/build.log" 2>&1 ) 9>&- &
go_build_wait "$tag" $! "building $module/cmd/server@$version"
mv "$work/temporal-ui-server" "$bin"
"$bin" --version >&2
go_build_done "$tag" "$dir" "$version"
echo "$bin"
