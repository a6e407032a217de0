#!/usr/bin/env bash
# Builds Helm (helm.sh/helm/v3's cmd/helm, the version tooling/versions.json names) from the Go module
# proxy once. The tests render deploy/helm/skewless-worker with it (`helm lint`, `helm template`);
# an operator installs the chart with the Helm they already have.
#   ${SKEWLESS_CACHE:-~/.cache/skewless}/helm-<version>/helm
# Prints the binary's path on stdout; progress goes to stderr.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
version=$(node -p "require('$root/tooling/versions.json').helm")
cache=${SKEWLESS_CACHE:-$HOME/.cache/skewless}
dir="$cache/helm-$version"
bin="$dir/helm"
tag=ensure-helm
module=helm.sh/helm/v3

# shellcheck source=lib/go-build.sh
source "$root/scripts/lib/go-build.sh"
built() { [[ -x "$bin" && -f "$dir/.complete" ]]; }
go_build_begin "$tag" "$dir" built "$bin" Helm
echo "$tag: building Helm $version from the Go module proxy into $dir (first time only)" >&2

# Helm's go.mod has no replace directive, so `go install module@version` builds it as released. The -X
# flags are upstream's Makefile's: the version string (the commit is unknown from the proxy), and the
# Kubernetes version `helm template` and `helm lint` assume, one minor past the client-go Helm is built
# with (without them it assumes 1.20 and refuses a chart's kubeVersion >= 1.25).
( cd "$work" && go mod download -json "$module@$version" >mod.json ) || { cat "$work/mod.json" >&2; echo "$tag: cannot download $module@$version" >&2; exit 1; }
gomod=$(node -p "require('$work/mod.json').GoMod")
client_go=$(sed -nE 's/^\s*k8s\.io\/client-go v([0-9]+)\.([0-9]+)\..*/\1 \2/p' "$gomod")
[[ -n $client_go ]] || { echo "$tag: no k8s.io/client-go in $gomod" >&2; exit 1; }
read -r cg_major cg_minor <<<"$client_go"
k8s_major=$(( cg_major + 1 ))
ldflags="-s -w -X $module/internal/version.version=$version"
for pkg in pkg/lint/rules pkg/chartutil; do
  ldflags+=" -X $module/$pkg.k8sVersionMajor=$k8s_major -X $module/$pkg.k8sVersionMinor=$cg_minor"
done
( cd "$work" && GOBIN="$work" GOFLAGS="${GOFLAGS:-} -trimpath" CGO_ENABLED=0 \
    go install -v -ldflags "$ldflags" "$module/cmd/helm@$version" >"$work/build.log" 2>&1 ) 9>&- &
go_build_wait "$tag" $! "building $module/cmd/helm@$version"
mv "$work/helm" "$bin"
"$bin" version --short >&2
go_build_done "$tag" "$dir" "$version"
echo "$bin"
