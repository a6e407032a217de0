#!/usr/bin/env bash
# The baseline of the benchmark: the source articles' runbook for a kubeadm upgrade, as an operator
# would type it, with the real kubectl and the real OpenSSH client. One hop per VERSION, in order:
#   etcd snapshot on the first control plane;
#   kubeadm upgrade plan + apply on the first control plane, kubeadm upgrade node on the others;
#   then node by node, control planes first: kubectl drain, packages (and `kubeadm upgrade node` on a
#   worker), kubelet restart, wait until the node is Ready at the new version, kubectl uncordon.
# Nothing runs in parallel and nothing is retried: that is the runbook.
#
# Environment (bench/baseline-runner.ts sets it from the simulation's endpoints):
#   KUBECTL KUBECONFIG             the kubectl binary and an admin kubeconfig
#   SSH_USER SSH_KEY KNOWN_HOSTS   the operator's SSH identity and known_hosts (strict checking)
#   HOSTS_FILE                     one line per node: NAME PORT ROLE (control-plane|worker), control planes first
#   VERSIONS                       the hops, e.g. "1.34.2 1.35.1"
#   TIMELINE                       where each phase is logged: NODE PHASE START_MS END_MS
set -euo pipefail
: "${KUBECTL:?}" "${KUBECONFIG:?}" "${SSH_USER:?}" "${SSH_KEY:?}" "${KNOWN_HOSTS:?}" "${HOSTS_FILE:?}" "${VERSIONS:?}" "${TIMELINE:?}"
export KUBECONFIG

declare -A PORT
NODES=()
CONTROL_PLANES=()
while read -r name port role; do
  [ -z "$name" ] && continue
  PORT[$name]=$port
  NODES+=("$name")
  [ "$role" = control-plane ] && CONTROL_PLANES+=("$name")
done <"$HOSTS_FILE"

now_ms() { date +%s%3N; }

# phase NODE PHASE COMMAND...: runs the command and logs how long it took, for the timeline.
phase() {
  local node=$1 name=$2 start
  shift 2
  start=$(now_ms)
  "$@"
  echo "$node $name $start $(now_ms)" >>"$TIMELINE"
}

on() {
  local node=$1
  shift
  ssh -q -o BatchMode=yes -o StrictHostKeyChecking=yes -o UserKnownHostsFile="$KNOWN_HOSTS" \
    -i "$SSH_KEY" -p "${PORT[$node]}" "$SSH_USER@127.0.0.1" "$@" >/dev/null
}

install_packages() { # NODE VERSION PACKAGE...
  local node=$1 version=$2
  shift 2
  local pins=()
  for p in "$@"; do pins+=("$p='$version-*'"); done
  # kubernetes.io's "Changing the package repository": the node's one-minor file pointed at the hop's minor.
  local repo="sudo sed -i 's,/core:/stable:/v[0-9.]*/,/core:/stable:/v${version%.*}/,g' /etc/apt/sources.list.d/kubernetes.list"
  on "$node" "$repo && sudo apt-mark unhold $* && sudo apt-get update -q && sudo apt-get install -y ${pins[*]} && sudo apt-mark hold $*"
}

drain() { "$KUBECTL" drain "$1" --ignore-daemonsets --delete-emptydir-data >/dev/null 2>&1; }

wait_ready() { # NODE VERSION: the kubelet reports the new version, and the node is Ready
  "$KUBECTL" wait --for=jsonpath='{.status.nodeInfo.kubeletVersion}'="v$2" "node/$1" --timeout=600s >/dev/null
  "$KUBECTL" wait --for=condition=Ready "node/$1" --timeout=600s >/dev/null
}

upgrade_node() { # NODE VERSION ROLE
  local node=$1 version=$2 role=$3
  phase "$node" drain drain "$node"
  if [ "$role" = worker ]; then
    phase "$node" packages install_packages "$node" "$version" kubeadm
    phase "$node" kubeadm on "$node" "sudo kubeadm upgrade node"
  fi
  phase "$node" packages install_packages "$node" "$version" kubelet kubectl
  phase "$node" kubelet on "$node" "sudo systemctl daemon-reload && sudo systemctl restart kubelet"
  phase "$node" verify wait_ready "$node" "$version"
  phase "$node" uncordon "$KUBECTL" uncordon "$node" >/dev/null
}

first=${CONTROL_PLANES[0]}
for version in $VERSIONS; do
  phase cluster snapshot on "$first" "sudo mkdir -p /var/lib/etcd-snapshots && sudo ETCDCTL_API=3 etcdctl --endpoints=https://127.0.0.1:2379 \
    --cacert=/etc/kubernetes/pki/etcd/ca.crt --cert=/etc/kubernetes/pki/etcd/healthcheck-client.crt \
    --key=/etc/kubernetes/pki/etcd/healthcheck-client.key snapshot save /var/lib/etcd-snapshots/before-v$version.db"
  for cp in "${CONTROL_PLANES[@]}"; do
    phase "$cp" packages install_packages "$cp" "$version" kubeadm
    if [ "$cp" = "$first" ]; then
      phase "$cp" control-plane on "$cp" "sudo kubeadm upgrade plan v$version && sudo kubeadm upgrade apply v$version --yes"
    else
      phase "$cp" control-plane on "$cp" "sudo kubeadm upgrade node"
    fi
  done
  for node in "${NODES[@]}"; do
    role=worker
    for cp in "${CONTROL_PLANES[@]}"; do [ "$cp" = "$node" ] && role=control-plane; done
    upgrade_node "$node" "$version" "$role"
  done
done
