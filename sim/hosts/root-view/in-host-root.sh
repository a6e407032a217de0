#!/usr/bin/env bash
# Runs a real program as root in a simulated host's view of the filesystem (issue 18 part 2):
#   in-host-root.sh HOST_ROOT SCRATCH_DIR -- COMMAND [ARG...]
# kubeadm hard-codes /etc/kubernetes, /var/lib/kubelet, /var/lib/etcd and the CRI socket under /run
# and has no prefix flag (its --rootfs chroots, and then needs uname, cp and /proc inside). So the
# program runs in a private mount namespace (unshare -m) where /etc, /var/lib and /run are
# throw-away overlays of this machine's own, and the host's etc/kubernetes, var/lib/kubelet,
# var/lib/etcd and run/containerd are bind-mounted over them: it reads and writes the host's files
# at the real paths and sees the machine's programs (cp, uname) everywhere else. Nothing it does
# reaches this machine's /etc, /var or /run: writes outside the host's dirs land in SCRATCH_DIR's
# overlays, removed on exit with the namespace. Needs root (CAP_SYS_ADMIN). The network is shared:
# loopback addresses reach the simulation's apiservers and etcd. SKEWLESS_AS_USER=1: the program
# runs as nobody (a command run without sudo), so it meets its own not-root errors.
set -euo pipefail

if [[ ${1:-} == --inside ]]; then
  root=$2 scratch=$3
  shift 4 # --inside ROOT SCRATCH --
  for d in etc var/lib run; do
    # The overlay hides what is mounted below /$d (in a container: /etc/hosts, /etc/resolv.conf):
    # keep the original tree reachable and bind those back on top.
    mapfile -t below < <(findmnt -rn -o TARGET | grep "^/$d/" || true)
    mkdir -p "$scratch/$d/upper" "$scratch/$d/work" "$scratch/lower/$d"
    mount --rbind "/$d" "$scratch/lower/$d"
    mount -t overlay overlay -o "lowerdir=/$d,upperdir=$scratch/$d/upper,workdir=$scratch/$d/work" "/$d"
    for m in "${below[@]}"; do mount --bind "$scratch/lower/$d/${m#/"$d"/}" "$m"; done
  done
  for d in etc/kubernetes var/lib/kubelet var/lib/etcd run/containerd; do
    mkdir -p "/$d" # in the overlay
    if [[ -d $root/$d ]]; then
      mount --bind "$root/$d" "/$d"
    else
      # The host has no such dir: an empty one, and what is written there is dropped.
      mount -t tmpfs -o size=16m,mode=0755 "host-has-no-${d//\//-}" "/$d"
    fi
  done
  cd /
  # A command without sudo: the program runs as nobody, and meets the host's permissions itself.
  if [[ ${SKEWLESS_AS_USER:-} == 1 ]]; then exec setpriv --reuid=65534 --regid=65534 --clear-groups -- "$@"; fi
  exec "$@"
fi

(( $# >= 4 )) && [[ $3 == -- ]] || { echo "usage: in-host-root.sh HOST_ROOT SCRATCH_DIR -- COMMAND [ARG...]" >&2; exit 2; }
root=$1 scratch_parent=$2
shift 3
[[ -d $root ]] || { echo "in-host-root: no host root $root" >&2; exit 2; }
mkdir -p "$scratch_parent"
scratch=$(mktemp -d "$scratch_parent/ns.XXXXXX")
rc=0
unshare -m --propagation private -- "$0" --inside "$root" "$scratch" -- "$@" || rc=$?
# The namespace is gone with its mounts; what it wrote outside the host's dirs goes with it.
rm -rf --one-file-system "$scratch"
exit "$rc"
