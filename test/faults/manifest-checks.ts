import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { hostDir } from '../../sim/hosts/host-state.js';
import type { Simulation } from '../../sim/simulation.js';

/**
 * The per-node world's control-plane manifests, as the real kubeadm leaves them. Each time a
 * `kubeadm upgrade apply|node` completes on a control plane (exit 0, whether or not its client heard
 * it), the four static pod manifests it wrote are fingerprinted; at the end each control plane's
 * manifests must be exactly what the last completed kubeadm there wrote (nothing half-written or
 * changed since, by a retry or a crash), name the target's images, and emulate nothing.
 */

const MANIFESTS = ['kube-apiserver', 'kube-controller-manager', 'kube-scheduler', 'etcd'] as const;
const KUBEADM_UPGRADE = /\bkubeadm upgrade (apply v?\S+|node)\b/;

type Fingerprints = Record<string, string | undefined>;

export interface ManifestTracker {
  stop(): void;
  /** Problems with the manifests now, for the upgrade to `target`. */
  check(target: string): string[];
}

function manifestDir(sim: Simulation, host: string): string {
  return join(hostDir(sim.stateDir, host), 'root', 'etc', 'kubernetes', 'manifests');
}

function read(sim: Simulation, host: string): Record<string, string | undefined> {
  const dir = manifestDir(sim, host);
  return Object.fromEntries(
    MANIFESTS.map((m) => {
      const file = join(dir, `${m}.yaml`);
      return [m, existsSync(file) ? readFileSync(file, 'utf8') : undefined];
    }),
  );
}

const fingerprint = (texts: Record<string, string | undefined>): Fingerprints =>
  Object.fromEntries(
    Object.entries(texts).map(([m, t]) => [m, t === undefined ? undefined : createHash('sha256').update(t).digest('hex')]),
  );

const imageOf = (text: string | undefined) => /^\s*image:\s*(\S+)/m.exec(text ?? '')?.[1];

export function trackManifests(sim: Simulation): ManifestTracker {
  const controlPlanes = new Set(sim.description.nodes.filter((n) => n.role === 'control-plane').map((n) => n.name));
  const written = new Map<string, { command: string; prints: Fingerprints }>();
  const unsubscribe = sim.hosts.onCommand((e) => {
    if (e.phase !== 'end' || e.exitCode !== 0 || !controlPlanes.has(e.host) || !KUBEADM_UPGRADE.test(e.command)) return;
    written.set(e.host, { command: e.command, prints: fingerprint(read(sim, e.host)) });
  });
  return {
    stop: unsubscribe,
    check(target) {
      const problems: string[] = [];
      for (const host of controlPlanes) {
        const texts = read(sim, host);
        const last = written.get(host);
        if (!last) problems.push(`${host}: no kubeadm upgrade completed there`);
        else {
          const now = fingerprint(texts);
          const changed = MANIFESTS.filter((m) => now[m] !== last.prints[m]);
          if (changed.length > 0)
            problems.push(`${host}: ${changed.join(', ')} changed after the last completed '${last.command}' (not what kubeadm wrote)`);
        }
        for (const m of MANIFESTS.filter((c) => c !== 'etcd')) {
          const image = imageOf(texts[m]);
          if (image !== `registry.k8s.io/${m}:v${target}`) problems.push(`${host}: ${m}.yaml runs ${image ?? 'nothing'}, not v${target}`);
          if (/--emulated-version/.test(texts[m] ?? '')) problems.push(`${host}: ${m}.yaml still emulates an older version`);
        }
      }
      // etcd: every member at the image kubeadm of the target writes (the same on every control plane).
      const etcd = new Set([...controlPlanes].map((h) => imageOf(read(sim, h).etcd)));
      if (etcd.size !== 1) problems.push(`the control planes' etcd manifests name different images: ${[...etcd].join(', ')}`);
      return problems;
    },
  };
}
