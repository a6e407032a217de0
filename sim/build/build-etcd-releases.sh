#!/usr/bin/env bash
# Builds every etcd release sim/build/etcd-releases lists (build-etcd-release.sh; cached: nothing to do once
# built). Prints one bin dir per line on stdout, progress on stderr.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
grep -v '^\s*\(#\|$\)' "$here/etcd-releases" | while read -r version; do
  bash "$here/build-etcd-release.sh" "$version"
done
