#!/usr/bin/env bash
# Builds the simulated cluster's binaries from the Go module proxy once, and reuses them:
#   kube-apiserver, kube-controller-manager, kube-scheduler, kubectl  (k8s.io/kubernetes)
#   etcd, etcdctl, etcdutl                                             (go.etcd.io/etcd)
#   kwok                                                               (sigs.k8s.io/kwok)
# plus kwok-stages.yaml (the Stage set kwok >= v0.8.0 needs, taken from the kwok module).
# Versions come from versions.json beside this script. Output, outside the checkout:
#   ${SKEWLESS_CACHE:-~/.cache/skewless}/simcluster-k8s-<v>_etcd-<v>_kwok-<v>/bin/
# A stamp file (.complete) is written last; when it exists nothing is built.
# Prints the bin dir on stdout; progress goes to stderr. See NOTES.md for timings.
# GOCACHE / GOMODCACHE are the go command's usual ones (override them in the environment).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
tag=build-binaries
# shellcheck source=lib.sh
source "$here/lib.sh"

command -v node >/dev/null || die "node is needed to read $here/versions.json"
read_version() { node -p "require('$here/versions.json')['$1'] || ''"; }
k8s=$(read_version kubernetes)
etcd=$(read_version etcd)
kwok=$(read_version kwok)
[[ $k8s =~ ^v1\.([0-9]+)\.([0-9]+)$ ]] || die "versions.json: kubernetes must look like v1.34.4, got '$k8s'"
k8s_minor=${BASH_REMATCH[1]}
staging="v0.${BASH_REMATCH[1]}.${BASH_REMATCH[2]}" # k8s.io/* staging modules are tagged v0.<minor>.<patch>
[[ $etcd =~ ^v3\.[0-9]+\.[0-9]+$ ]] || die "versions.json: etcd must look like v3.6.16, got '$etcd'"
[[ $kwok =~ ^v[0-9]+\.[0-9]+\.[0-9]+$ ]] || die "versions.json: kwok must look like v0.8.0, got '$kwok'"

cache=${SKEWLESS_CACHE:-$HOME/.cache/skewless}
dir="$cache/simcluster-k8s-${k8s}_etcd-${etcd}_kwok-${kwok}"
bin="$dir/bin"
stamp="$dir/.complete"
k8s_bins=(kube-apiserver kube-controller-manager kube-scheduler kubectl)
all_bins=("${k8s_bins[@]}" etcd etcdctl etcdutl kwok)

is_complete() {
  [[ -f $stamp && -f $dir/kwok-stages.yaml ]] || return 1
  local b
  for b in "${all_bins[@]}"; do [[ -x $bin/$b ]] || return 1; done
}
if is_complete; then
  echo "$bin"
  exit 0
fi

command -v go >/dev/null || die "go is not installed; it is needed once to build the simulated cluster"
export GOTOOLCHAIN=local GOWORK=off CGO_ENABLED=0 GOFLAGS=-buildvcs=false
mkdir -p "$bin"

# One builder per cache dir: a second run waits, then finds the stamp.
take_build_lock "$dir"
if is_complete; then
  echo "$bin"
  exit 0
fi

make_work "$dir"

start_all=$(date +%s)
log "building into $dir (versions: kubernetes $k8s, staging $staging, etcd $etcd, kwok $kwok; $(go version))"
part_times=()

# ---------------------------------------------------------------- Kubernetes
t0=$(date +%s)
build_kubernetes "$k8s" "$bin" "${k8s_bins[@]}"
got=$("$bin/kube-apiserver" --version) || die "$bin/kube-apiserver --version failed"
[[ $got == "Kubernetes $k8s" ]] || die "kube-apiserver --version says '$got', expected 'Kubernetes $k8s'"
part_times+=("k8s $(( $(date +%s) - t0 ))s")

# ---------------------------------------------------------------- etcd
# Its released go.mods require real versions of each other, so no replaces are needed; it gets its
# own wrapper so that its newer gRPC/otel never get selected into the Kubernetes build.
t0=$(date +%s)
mkdir -p "$work/etcd"
cd "$work/etcd"
printf 'module skewless.local/simcluster/etcdbuild\n\ngo 1.24.0\n' >go.mod
etcd_pkgs=(go.etcd.io/etcd/server/v3 go.etcd.io/etcd/etcdctl/v3 go.etcd.io/etcd/etcdutl/v3)
etcd_at=()
for p in "${etcd_pkgs[@]}"; do etcd_at+=("$p@$etcd"); done
# go get -tool adds the require + tool lines and raises the go line to what etcd needs.
run_step "etcd: go get -tool (module download)" "$work/etcd-get.log" go get -tool "${etcd_at[@]}"
run_step "etcd: go mod tidy" "$work/etcd-tidy.log" go mod tidy
mkdir -p "$work/etcd-out"
# A main package whose path ends in /v3 is named after the element before it: server -> etcd.
run_step "etcd: go build etcd etcdctl etcdutl" "$work/etcd-build.log" \
  go build -v -trimpath -ldflags="-s -w -X go.etcd.io/etcd/api/v3/version.GitSHA=$etcd" -o "$work/etcd-out/" "${etcd_pkgs[@]}"
mv -f "$work/etcd-out/server" "$bin/etcd"
mv -f "$work/etcd-out/etcdctl" "$work/etcd-out/etcdutl" "$bin/"
got=$("$bin/etcd" --version) || die "$bin/etcd --version failed"
got=${got%%$'\n'*}
[[ $got == "etcd Version: ${etcd#v}" ]] || die "etcd --version says '$got', expected 'etcd Version: ${etcd#v}'"
part_times+=("etcd $(( $(date +%s) - t0 ))s")

# ---------------------------------------------------------------- kwok
t0=$(date +%s)
cd "$work"
run_step "kwok: go install sigs.k8s.io/kwok/cmd/kwok@$kwok" "$work/kwok-build.log" \
  env GOBIN="$bin" go install -v -trimpath -ldflags="-s -w" "sigs.k8s.io/kwok/cmd/kwok@$kwok"
got=$("$bin/kwok" --version) || die "$bin/kwok --version failed"
[[ $got == "kwok version $kwok "* ]] || die "kwok --version says '$got', expected 'kwok version $kwok ...'"
# kwok >= v0.8.0 has no built-in stages: assemble the set kwokctl uses (node-initialize,
# heartbeat-with-lease, pod ready/complete/delete) plus the node-not-ready chaos stage, from the
# module's own YAML so they match the binary.
kwok_dir=$(mod_json "sigs.k8s.io/kwok@$kwok" | json_field Dir) || die "cannot download sigs.k8s.io/kwok@$kwok"
stages=(node/fast/node-initialize.yaml node/heartbeat-with-lease/node-heartbeat-with-lease.yaml
        pod/fast/pod-ready.yaml pod/fast/pod-complete.yaml pod/fast/pod-delete.yaml
        node/chaos/node-not-ready.yaml)
{
  echo "# kwok $kwok stages, from sigs.k8s.io/kwok@$kwok kustomize/stage/"
  sep=""
  for s in "${stages[@]}"; do
    [[ -f $kwok_dir/kustomize/stage/$s ]] || die "kwok $kwok has no kustomize/stage/$s"
    printf '%s' "$sep"; cat "$kwok_dir/kustomize/stage/$s"; echo; sep=$'---\n'
  done
} >"$dir/kwok-stages.yaml"
part_times+=("kwok $(( $(date +%s) - t0 ))s")

# ---------------------------------------------------------------- done
sizes=$(cd "$bin" && du -m "${all_bins[@]}" | awk '{printf "%s %sMB, ", $2, $1}')
summary="built in $(( $(date +%s) - start_all ))s (${part_times[*]}) with $(go version | cut -d' ' -f3); sizes: ${sizes%, }"
log "$summary"
printf 'kubernetes=%s staging=%s etcd=%s kwok=%s\n%s\n' "$k8s" "$staging" "$etcd" "$kwok" "$summary" >"$stamp"
echo "$bin"
