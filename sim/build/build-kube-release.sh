#!/usr/bin/env bash
# Builds one Kubernetes release's control-plane programs and kubeadm from the Go module proxy, once:
#   bash sim/build/build-kube-release.sh v1.33.13
# into ${SKEWLESS_CACHE:-~/.cache/skewless}/kube-<version>/bin/ (kube-apiserver,
# kube-controller-manager, kube-scheduler, kubeadm), for a simulated control plane that runs each
# version its manifests name and the real kubeadm of each minor (issue 18 parts 2-3; what kubeadm
# needs from the simulation: REAL-KUBEADM.md). A stamp (.complete) is written last; when it exists
# nothing is built. Prints the bin dir on stdout, progress on stderr.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
tag=build-kube-release
# shellcheck source=lib.sh
source "$here/lib.sh"

(( $# == 1 )) || die "usage: build-kube-release.sh vX.Y.Z"
version=$1
[[ $version =~ ^v1\.[0-9]+\.[0-9]+$ ]] || die "the version must look like v1.33.13, got '$version'"
cmds=(kube-apiserver kube-controller-manager kube-scheduler kubeadm)
dir="${SKEWLESS_CACHE:-$HOME/.cache/skewless}/kube-$version"
bin="$dir/bin"
stamp="$dir/.complete"
is_complete() {
  [[ -f $stamp ]] || return 1
  local b
  for b in "${cmds[@]}"; do [[ -x $bin/$b ]] || return 1; done
}
if is_complete; then
  echo "$bin"
  exit 0
fi

command -v go >/dev/null || die "go is not installed; it is needed once to build Kubernetes $version"
command -v node >/dev/null || die "node is needed to read the module proxy's answers"
export GOTOOLCHAIN=local GOWORK=off CGO_ENABLED=0 GOFLAGS=-buildvcs=false
mkdir -p "$dir"
take_build_lock "$dir"
if is_complete; then
  echo "$bin"
  exit 0
fi
make_work "$dir"

t0=$(date +%s)
log "building Kubernetes $version (${cmds[*]}) into $bin with $(go version | cut -d' ' -f3)"
build_kubernetes "$version" "$bin" "${cmds[@]}"
sizes=$(cd "$bin" && du -m "${cmds[@]}" | awk '{printf "%s %sMB, ", $2, $1}')
summary="built in $(( $(date +%s) - t0 ))s; sizes: ${sizes%, }"
log "$summary"
printf 'kubernetes=%s\n%s\n' "$version" "$summary" >"$stamp"
echo "$bin"
