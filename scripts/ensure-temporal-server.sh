#!/usr/bin/env bash
# Builds the Temporal server and its SQL schema tool from the Go module proxy once, and reuses them.
# They run the stack without Docker (stack/, `npm run stack`): the server docker-compose.yml names,
# on PostgreSQL. Cached outside the checkout, keyed by version, with the module's PostgreSQL schema:
#   ${SKEWLESS_CACHE:-~/.cache/skewless}/temporal-server-<version>/
#     temporal-server  temporal-sql-tool  schema/postgresql/v12/{temporal,visibility}
# Prints the cache dir on stdout; progress goes to stderr.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
version=$(node -p "require('$root/tooling/versions.json').temporalServer")
cache=${SKEWLESS_CACHE:-$HOME/.cache/skewless}
dir="$cache/temporal-server-$version"
tag=ensure-temporal-server

ready() { [[ -x "$dir/temporal-server" && -x "$dir/temporal-sql-tool" && -f "$dir/.complete" ]]; }
# shellcheck source=lib/go-build.sh
source "$root/scripts/lib/go-build.sh"
go_build_begin "$tag" "$dir" ready "$dir" "the Temporal server"

echo "$tag: building the Temporal server $version and temporal-sql-tool from the Go module proxy into $dir (first time only, several minutes)" >&2
# Both commands in one go install: packages they share compile once. -v names each package as it
# compiles, counted below as progress. 9>&-: the build must not hold the lock after we exit.
( GOBIN="$work" GOFLAGS="${GOFLAGS:-} -trimpath" go install -v \
    "go.temporal.io/server/cmd/server@$version" "go.temporal.io/server/cmd/tools/sql@$version" \
    >"$work/build.log" 2>&1 ) 9>&- &
go_build_wait "$tag" $! "go install go.temporal.io/server/cmd/{server,tools/sql}@$version" "packages compiled"

# The schema the SQL tool applies ships in the module's source (the download go install just made).
moddir=$(cd "$work" && go mod download -json "go.temporal.io/server@$version" | node -e \
  'let s="";process.stdin.on("data",c=>s+=c).on("end",()=>{const j=JSON.parse(s);if(j.Error){console.error(j.Error);process.exit(1)}console.log(j.Dir)})')
rm -rf "$dir/schema"
mkdir -p "$dir/schema/postgresql"
cp -r "$moddir/schema/postgresql/v12" "$dir/schema/postgresql/"
chmod -R u+w "$dir/schema"
mv "$work/server" "$dir/temporal-server"
mv "$work/sql" "$dir/temporal-sql-tool"
"$dir/temporal-sql-tool" --version >&2
go_build_done "$tag" "$dir" "$version"
echo "$dir"
