#!/usr/bin/env bash
# Builds every release sim/build/kube-releases lists (build-kube-release.sh), every etcd release etcd-releases lists
# (build-etcd-releases.sh) and cri-fake (cached: nothing to do once built): what a per-node simulation runs. Prints one bin dir per line on stdout, progress on stderr.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
grep -v '^\s*\(#\|$\)' "$here/kube-releases" | while read -r version; do
  bash "$here/build-kube-release.sh" "$version"
done
# One etcd member per control plane, at the version its manifest names.
bash "$here/build-etcd-releases.sh"
# The fake CRI socket the real kubeadm's preflight and image pulls talk to on a simulated control plane.
bash "$here/build-cri-fake.sh"
