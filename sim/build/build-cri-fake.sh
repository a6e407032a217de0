#!/usr/bin/env bash
# Builds cri-fake (cri-fake/main.go: a fake CRI server on k8s.io/cri-client/pkg/fake, for the real
# kubeadm's preflight and image pulls; REAL-KUBEADM.md §5) from the Go module proxy, once:
#   bash sim/build/build-cri-fake.sh [CRI_CLIENT_VERSION]
# The cri-client version defaults to the staging tag of versions.json's kubernetes (v1.34.4 ->
# v0.34.4). Output, outside the checkout: ${SKEWLESS_CACHE:-~/.cache/skewless}/cri-fake-<v>/cri-fake.
# A stamp (.complete, with main.go's sha256) is written last; when it exists and names the current
# main.go, nothing is built (an edited main.go is rebuilt into the same dir). Prints the binary's path on
# stdout, progress on stderr. Usage of the binary: cri-fake --endpoint unix:///path.sock (until
# SIGTERM; removes the socket on exit).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
tag=build-cri-fake
# shellcheck source=lib.sh
source "$here/lib.sh"

(( $# <= 1 )) || die "usage: build-cri-fake.sh [v0.X.Y]"
if (( $# == 1 )); then
  version=$1
else
  command -v node >/dev/null || die "node is needed to read $here/versions.json"
  k8s=$(node -p "require('$here/versions.json').kubernetes || ''")
  [[ $k8s =~ ^v1\.([0-9]+)\.([0-9]+)$ ]] || die "versions.json: kubernetes must look like v1.34.4, got '$k8s'"
  version="v0.${BASH_REMATCH[1]}.${BASH_REMATCH[2]}"
fi
[[ $version =~ ^v0\.[0-9]+\.[0-9]+$ ]] || die "the cri-client version must look like v0.34.4, got '$version'"
src="$here/cri-fake/main.go"
[[ -f $src ]] || die "missing $src"

dir="${SKEWLESS_CACHE:-$HOME/.cache/skewless}/cri-fake-$version"
out="$dir/cri-fake"
stamp="$dir/.complete"
src_sum=$(sha256sum "$src" | cut -d' ' -f1)
is_complete() { [[ -f $stamp && -x $out ]] && grep -qx "source=$src_sum" "$stamp"; }
if is_complete; then
  echo "$out"
  exit 0
fi

command -v go >/dev/null || die "go is not installed; it is needed once to build cri-fake"
command -v node >/dev/null || die "node is needed to read the module proxy's answers"
export GOTOOLCHAIN=local GOWORK=off CGO_ENABLED=0 GOFLAGS=-buildvcs=false
mkdir -p "$dir"
take_build_lock "$dir"
if is_complete; then
  echo "$out"
  exit 0
fi
make_work "$dir"

t0=$(date +%s)
log "building cri-fake with k8s.io/cri-client $version into $out ($(go version | cut -d' ' -f3))"
info=$(mod_json "k8s.io/cri-client@$version") ||
  die "cannot download k8s.io/cri-client@$version from the Go module proxy: $(sed -nE 's/.*"Error": "(.*)",?$/\1/p' <<<"$info")"
gomod=$(json_field GoMod <<<"$info")
go_line=$(grep -m1 -E '^go [0-9.]+$' "$gomod") || die "no go line in $gomod"
godebug_line=$(grep -m1 -E '^godebug ' "$gomod" || true)

wdir="$work/cri-fake"
mkdir -p "$wdir"
cp "$src" "$wdir/main.go"
{
  echo "module skewless.local/simcluster/crifake"
  echo
  echo "$go_line"
  if [[ -n $godebug_line ]]; then echo; echo "$godebug_line"; fi
  echo
  echo "require k8s.io/cri-client $version"
} >"$wdir/go.mod"
cd "$wdir"
run_step "go mod tidy (module download)" "$wdir/tidy.log" go mod tidy
# tidy may only raise what cri-client's own go.mod requires; insist the pin held.
got=$(go list -m -f '{{.Version}}' k8s.io/cri-client) || die "go list -m k8s.io/cri-client failed"
[[ $got == "$version" ]] || die "go mod tidy selected k8s.io/cri-client $got, expected $version"
run_step "go build cri-fake" "$wdir/build.log" go build -v -trimpath -ldflags="-s -w" -o "$wdir/cri-fake" .

# Smoke test: it must create its socket, and remove it on SIGTERM.
sock="$work/t.sock"
"$wdir/cri-fake" --endpoint "unix://$sock" 2>"$work/smoke.log" 9>&- &
pid=$!
for _ in $(seq 100); do [[ -S $sock ]] && break; sleep 0.05; done
[[ -S $sock ]] || { kill "$pid" 2>/dev/null || true; cat "$work/smoke.log" >&2; die "cri-fake did not create $sock"; }
kill -TERM "$pid"
rc=0; wait "$pid" || rc=$?
(( rc == 0 )) || { cat "$work/smoke.log" >&2; die "cri-fake exited $rc on SIGTERM"; }
[[ ! -e $sock ]] || die "cri-fake left $sock behind after SIGTERM"

mv "$wdir/cri-fake" "$out"
summary="built in $(( $(date +%s) - t0 ))s; size $(du -m "$out" | cut -f1)MB"
log "$summary"
printf 'cri-client=%s\nsource=%s\n%s\n' "$version" "$src_sum" "$summary" >"$stamp"
echo "$out"
