#!/usr/bin/env bash
# Builds one etcd release's server from the Go module proxy, once:
#   bash sim/build/build-etcd-release.sh v3.5.24
# into ${SKEWLESS_CACHE:-~/.cache/skewless}/etcd-<version>/bin/etcd, for a simulated control plane whose etcd
# member runs the version its static-pod manifest names (issue 35). Only the server: the proxy does not serve
# etcdctl/etcdutl at every 3.5 patch (v3.5.24 answers 403), and the simulation's etcdctl (build-binaries.sh,
# 3.6) speaks to 3.5 members. A stamp (.complete) is written last; when it exists nothing is built.
# Prints the bin dir on stdout, progress on stderr.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
tag=build-etcd-release
# shellcheck source=lib.sh
source "$here/lib.sh"

(( $# == 1 )) || die "usage: build-etcd-release.sh v3.X.Y"
version=$1
[[ $version =~ ^v3\.[0-9]+\.[0-9]+$ ]] || die "the version must look like v3.5.24, got '$version'"
dir="${SKEWLESS_CACHE:-$HOME/.cache/skewless}/etcd-$version"
bin="$dir/bin"
stamp="$dir/.complete"
is_complete() { [[ -f $stamp && -x $bin/etcd ]]; }
if is_complete; then
  echo "$bin"
  exit 0
fi

command -v go >/dev/null || die "go is not installed; it is needed once to build etcd $version"
export GOTOOLCHAIN=local GOWORK=off CGO_ENABLED=0 GOFLAGS=-buildvcs=false
mkdir -p "$dir"
take_build_lock "$dir"
if is_complete; then
  echo "$bin"
  exit 0
fi
make_work "$dir"

t0=$(date +%s)
log "building etcd $version into $bin with $(go version | cut -d' ' -f3)"
# etcd 3.5 and 3.6 both publish the server as module go.etcd.io/etcd/server/v3 with main.go at its root (3.4 and
# older had it in the root module go.etcd.io/etcd). The released go.mods require real versions of each other, and
# their replaces (3.5: `=> ../api` ...) are ignored for a dependency, so the wrapper needs none.
cd "$work"
printf 'module skewless.local/simcluster/etcdbuild\n\ngo 1.24.0\n' >go.mod
run_step "etcd $version: go get -tool (module download)" "$work/get.log" go get -tool "go.etcd.io/etcd/server/v3@$version"
run_step "etcd $version: go mod tidy" "$work/tidy.log" go mod tidy
mkdir -p "$work/out" "$bin"
# A main package whose path ends in /v3 is named after the element before it: server -> etcd.
run_step "etcd $version: go build (cold: about 1 min on 2 cores)" "$work/build.log" \
  go build -v -trimpath -ldflags="-s -w -X go.etcd.io/etcd/api/v3/version.GitSHA=$version" -o "$work/out/" go.etcd.io/etcd/server/v3
mv -f "$work/out/server" "$bin/etcd"
got=$("$bin/etcd" --version) || die "$bin/etcd --version failed"
got=${got%%$'\n'*}
[[ $got == "etcd Version: ${version#v}" ]] || die "etcd --version says '$got', expected 'etcd Version: ${version#v}'"
summary="built in $(( $(date +%s) - t0 ))s; size: $(du -m "$bin/etcd" | cut -f1)MB"
log "$summary"
printf 'etcd=%s\n%s\n' "$version" "$summary" >"$stamp"
echo "$bin"
