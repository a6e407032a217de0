import { LATENCIES_MS, TERMINATION_GRACE_SECONDS } from './cases.js';

/**
 * The critical-path lower bound of an upgrade: what the simulated hosts make anyone wait, with no
 * orchestration cost at all. Per hop: the etcd snapshot, each control plane's kubeadm package and
 * `kubeadm upgrade apply|node` one after another, each control plane's kubelet one after another,
 * then the workers in batches, each batch as long as its slowest node.
 *
 * Two forms. `nominalLowerBoundSeconds` adds up the configured latencies. `measuredLowerBoundSeconds`
 * takes each node's waits from the simulation's own command log of the run (how long each install,
 * `kubeadm upgrade`, kubelet restart and snapshot took on the host, the simulation's work included:
 * its kubelet restart waits until the API shows the node NotReady, ~1 s), plus what no command
 * shows: the pods' termination grace and the kubelet's start after the restart.
 */

const s = (ms: number) => ms / 1000;

/** Batch sizes of the workers: a canary of one, then `batchSize` at a time. */
export function batchesOf(workers: number, batchSize: number): number[] {
  if (workers <= 0) return [];
  const out = [1];
  for (let left = workers - 1; left > 0; left -= batchSize) out.push(Math.min(batchSize, left));
  return out;
}

export function nominalLowerBoundSeconds(o: { controlPlanes: number; workers: number; hops: number; batchSize: number }): number {
  // A package install fetches its archives and installs them, whether or not the fetch came first (--download-only).
  const install = s(LATENCIES_MS.aptInstall) + s(LATENCIES_MS.packageDownload);
  const kubelet = install + s(LATENCIES_MS.kubeletRestart);
  let hop = s(LATENCIES_MS.etcdSnapshot);
  for (let i = 0; i < o.controlPlanes; i++) hop += install + s(i === 0 ? LATENCIES_MS.kubeadmApply : LATENCIES_MS.kubeadmNode) + kubelet;
  const worker = TERMINATION_GRACE_SECONDS + install + s(LATENCIES_MS.kubeadmNode) + kubelet;
  hop += batchesOf(o.workers, o.batchSize).length * worker;
  return round(hop * o.hops);
}

/** The host commands that wait (the rest return in milliseconds); `apt-get install` includes its --download-only form. */
const WAITING = /apt-get install|kubeadm upgrade (apply|node)|systemctl restart kubelet|snapshot save/;

export interface HostCommand {
  command: string;
  durationMs: number;
}

/** Seconds a node's host spent in waiting commands over the whole run. */
export function hostWaitSeconds(log: readonly HostCommand[]): number {
  return s(log.filter((e) => WAITING.test(e.command)).reduce((n, e) => n + e.durationMs, 0));
}

/**
 * From each node's waiting-command time (all hops): control planes add up (they go one by one),
 * workers count by batch (the slowest of each), in the order the runs take them (natural name order,
 * the canary first). Each worker also waits its pods' grace once a hop, and every node the kubelet's
 * start after each restart.
 */
export function measuredLowerBoundSeconds(o: {
  hops: number;
  batchSize: number;
  controlPlanes: string[];
  workers: string[];
  hostWaits: (node: string) => number;
}): number {
  const kubeletStart = o.hops * s(LATENCIES_MS.kubeletRestart);
  let total = 0;
  for (const cp of o.controlPlanes) total += o.hostWaits(cp) + kubeletStart;
  const ordered = [...o.workers].sort((a, b) => a.localeCompare(b, 'en', { numeric: true }));
  let at = 0;
  for (const size of batchesOf(ordered.length, o.batchSize)) {
    const batch = ordered.slice(at, at + size);
    at += size;
    total += Math.max(...batch.map((n) => o.hostWaits(n))) + kubeletStart + o.hops * TERMINATION_GRACE_SECONDS;
  }
  return round(total);
}

const round = (n: number) => Math.round(n * 1000) / 1000;
