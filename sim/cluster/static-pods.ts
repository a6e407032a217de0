// The kubelet's static pods on the simulated control-plane hosts, mapped onto the real processes
// the simulation runs: either ONE etcd, apiserver, controller-manager and scheduler for all hosts
// (`shared`) or each host's own etcd member and programs, at the versions its manifests name (`per-node`).
//
// A kubeadm control plane runs etcd, kube-apiserver, kube-controller-manager and kube-scheduler as
// static pods: the kubelet starts what /etc/kubernetes/manifests holds and stops what leaves it. An
// operator restoring etcd moves the manifests out, restores, and moves them back. The mapping:
// - etcd, `shared`: the real etcd is the member of the FIRST control plane (the primary). Its data dir is that
//   host's /var/lib/etcd (the manifest's hostPath), so a restore there (etcdutl into a fresh dir, then
//   a swap) changes what the real etcd serves. It runs while the primary's etcd.yaml is in place.
//   The other control planes' members are modelled, not run: their restored data dirs are real
//   etcdutl output, never served. A restored dir lists every member of --initial-cluster; alone, the
//   real etcd could never reach quorum with members that do not run, so the simulation starts it
//   with --force-new-cluster (etcd's own way to bring one member up as a cluster of one): the data,
//   revision included, is the restored one.
// - etcd, `per-node`: each host's real member runs while its etcd.yaml is in place, the etcd release its
//   image names (`3.5.24-0` → etcd 3.5.24); another image restarts it on the same data dir, as kubeadm's
//   etcd upgrade does (sim/cluster/etcd-members.ts). An image the simulation has no build of stops the
//   member (a kubelet that cannot pull it). A restored data dir is not run there (its peer URLs are
//   kubeadm's 10.0.0.x addresses): restores are the shared layout's.
// - kube-apiserver, kube-controller-manager, kube-scheduler, `shared`: like a load-balanced HA control
//   plane, each real process runs while at least one control plane has its manifest in place.
//   `per-node`: each host's process runs while its manifest is in place, the release its image
//   names; another image restarts it at that release (kubeadm's upgrade of the static pod). A manifest
//   whose command says `--emulated-version=kube=X.Y` runs its program so (KEP-4330); adding or removing
//   the flag restarts it, as a kubelet restarts a static pod whose manifest changed.
//   Its mirror pods follow the manifests too, as the kubelet's do (mirror-pods.ts).
// The kubelet reacts after the command that moved a manifest (a real one watches the dir and polls
// every 20 s), and four times a second while the real kubeadm runs (hosts/commands/kubeadm-real.ts);
// stops and starts are serialised, etcd before the apiserver, so they never overlap.
import type { ManifestSeen, StaticPodHooks } from '../hosts/cluster-effects.js';
import { CONTROL_PLANE_MANIFESTS, emulatedVersionOfManifest } from '../hosts/static-pod-manifest.js';
import { versionOfImage } from './control-plane-pods.js';
import { ETCD_RELEASES, etcdVersionOfTag } from './etcd-releases.js';
import type { KubeClients } from './kube-clients.js';
import { deleteMirrorPod, manifestHash, mirrorPodOf, replaceMirrorPod } from './mirror-pods.js';
import type { ControlPlane, PerNodeControlPlane, SharedControlPlane } from './control-plane.js';
import type { ManagedProcess } from '../../tooling/managed-process.js';

export const STATIC_POD_MANIFESTS = {
  etcd: 'etcd.yaml',
  'kube-apiserver': 'kube-apiserver.yaml',
  'kube-controller-manager': 'kube-controller-manager.yaml',
  'kube-scheduler': 'kube-scheduler.yaml',
} as const;
export type StaticPodName = keyof typeof STATIC_POD_MANIFESTS;
const NAMES = Object.keys(STATIC_POD_MANIFESTS) as StaticPodName[];

type StaticPodModel = StaticPodHooks & { settled(): Promise<void> };

export interface StaticPodModelOptions {
  onError: (err: Error) => void;
  /** A per-node component (etcd included) now runs another version (kubeadm's upgrade of its static pod). */
  onRestarted?: (node: string, component: string, version: string) => void;
  /** A per-node control plane's mirror pods follow its hosts' manifests through these clients (the kubelet's part). */
  kube?: KubeClients;
}

export function staticPodModel(cp: ControlPlane, controlPlaneNodes: readonly string[], options: StaticPodModelOptions): StaticPodModel {
  return cp.mode === 'shared' ? sharedModel(cp, controlPlaneNodes, options.onError) : perNodeModel(cp, controlPlaneNodes, options);
}

/** Runs `apply` after every change, one at a time; each change resolves once its apply is done. */
function serialised(apply: () => Promise<void>, onError: (err: Error) => void) {
  let queue: Promise<void> = Promise.resolve();
  return {
    next(): Promise<void> {
      queue = queue.then(apply).catch((err: unknown) => onError(err instanceof Error ? err : new Error(String(err))));
      return queue;
    },
    settled: () => queue,
  };
}

function sharedModel(cp: SharedControlPlane, controlPlaneNodes: readonly string[], onError: (err: Error) => void): StaticPodModel {
  const primary = controlPlaneNodes[0];
  const everything = new Set<string>(Object.values(STATIC_POD_MANIFESTS));
  const present = new Map<string, Set<string>>(controlPlaneNodes.map((n) => [n, new Set(everything)]));
  const processOf: Record<StaticPodName, ManagedProcess> = {
    etcd: cp.etcd,
    'kube-apiserver': cp.processes.apiserver,
    'kube-controller-manager': cp.processes.controllerManager,
    'kube-scheduler': cp.processes.scheduler,
  };
  /** Whether the real process of `name` should run, from every host's manifests. */
  const wanted = (name: StaticPodName): boolean =>
    name === 'etcd'
      ? (present.get(primary ?? '')?.has(STATIC_POD_MANIFESTS.etcd) ?? false)
      : [...present.values()].some((m) => m.has(STATIC_POD_MANIFESTS[name]));
  const apply = async (): Promise<void> => {
    // Stops: the dependants first.
    for (const name of [...NAMES].reverse()) if (!wanted(name) && processOf[name].running) await processOf[name].stop();
    // Starts: etcd first, healthy, then the apiserver ready, then the others.
    if (wanted('etcd') && !processOf.etcd.running) {
      processOf.etcd.start(['--force-new-cluster']);
      await cp.etcdHealthy();
    }
    if (wanted('kube-apiserver') && !processOf['kube-apiserver'].running && processOf.etcd.running) {
      processOf['kube-apiserver'].start();
      await cp.apiserverReady();
    }
    for (const name of ['kube-controller-manager', 'kube-scheduler'] as const) {
      if (wanted(name) && !processOf[name].running && processOf['kube-apiserver'].running) processOf[name].start();
    }
  };

  const queue = serialised(apply, onError);

  return {
    changed(node, manifests) {
      if (!present.has(node)) return Promise.resolve();
      present.set(node, new Set(manifests.map((m) => m.file)));
      return queue.next();
    },
    running(node) {
      const m = present.get(node);
      if (!m) return [];
      return NAMES.filter((name) => {
        const hasManifest = m.has(STATIC_POD_MANIFESTS[name]);
        // Another member's etcd is modelled: it runs while its manifest is there.
        if (name === 'etcd') return node === primary ? processOf.etcd.running : hasManifest;
        // A shared process shows on the hosts that have its manifest; while it stops after the last
        // manifest left, on every control plane, so each one's wait for it sees it go.
        const stopping = ![...present.values()].some((x) => x.has(STATIC_POD_MANIFESTS[name]));
        return processOf[name].running && (hasManifest || stopping);
      });
    },
    settled: queue.settled,
  };
}

/** What a host's manifest says: the version its image names, the emulated minor, its text. */
interface SeenManifest {
  version: string | undefined;
  emulated?: string;
  text?: string;
}

/** The kubelet's mirror pods follow the manifests: a new one for a changed file, none for a removed one. */
async function syncMirrorPods(
  kube: NonNullable<StaticPodModelOptions['kube']>,
  members: PerNodeControlPlane['etcdMembers'],
  mirrored: Map<string, string>,
  node: string,
  manifests: ReadonlyMap<string, { text?: string }>,
): Promise<void> {
  for (const name of NAMES) {
    const file = STATIC_POD_MANIFESTS[name];
    const key = `${node}/${file}`;
    const text = manifests.get(file)?.text;
    if (text === undefined) {
      if (!manifests.has(file) && mirrored.has(key)) {
        await deleteMirrorPod(kube, `${name}-${node}`);
        mirrored.delete(key);
      }
      continue;
    }
    if (mirrored.get(key) === manifestHash(text)) continue;
    await replaceMirrorPod(kube, mirrorPodOf(text, await kube.core.readNode({ name: node }), members.clientUrl(node)));
    mirrored.set(key, manifestHash(text));
  }
}

/**
 * Each member follows its host's etcd.yaml: stopped without one, (re)started at the version its image names.
 * Every member to start is started before any is waited for: a member is healthy only with a quorum.
 */
async function syncEtcdMembers(
  present: ReadonlyMap<string, ReadonlyMap<string, SeenManifest>>,
  members: PerNodeControlPlane['etcdMembers'],
  onRestarted: StaticPodModelOptions['onRestarted'],
): Promise<string[]> {
  const starting: { node: string; before: string | undefined; version: string }[] = [];
  const problems: string[] = [];
  for (const [node, manifests] of present) {
    if (!members.nodes.includes(node)) continue;
    const etcd = manifests.get(STATIC_POD_MANIFESTS.etcd);
    const before = members.versionOf(node);
    if (!etcd) {
      if (before) await members.stop(node);
      continue;
    }
    const version = etcd.version;
    if (version === undefined || !ETCD_RELEASES.includes(version)) {
      if (before) await members.stop(node);
      problems.push(
        `${node}: /etc/kubernetes/manifests/etcd.yaml names etcd ${version ?? '(no version)'}, which the simulation cannot run (it has ${ETCD_RELEASES.join(', ')}); the member stays down`,
      );
      continue;
    }
    if (before === version) continue;
    if (before) await members.stop(node);
    members.start(node, version);
    starting.push({ node, before, version });
  }
  const healthy = await Promise.allSettled(starting.map((s) => members.waitHealthy(s.node)));
  healthy.forEach((h, i) => {
    const s = starting[i]!;
    if (h.status === 'rejected')
      problems.push(`${s.node}: etcd ${s.version}: ${h.reason instanceof Error ? h.reason.message : String(h.reason)}`);
    else if (s.before !== undefined) onRestarted?.(s.node, 'etcd', s.version);
  });
  return problems;
}

function perNodeModel(
  cp: PerNodeControlPlane,
  controlPlaneNodes: readonly string[],
  { onError, onRestarted, kube }: StaticPodModelOptions,
): StaticPodModel {
  const members = cp.etcdMembers;
  /** Each host's manifests by file name; before the host's first report, what the processes run. */
  const present = new Map<string, Map<string, SeenManifest>>();
  for (const node of controlPlaneNodes) {
    const n = cp.nodes.get(node);
    present.set(
      node,
      new Map([
        [STATIC_POD_MANIFESTS.etcd, { version: members.versionOf(node) }],
        ...CONTROL_PLANE_MANIFESTS.map((c) => [STATIC_POD_MANIFESTS[c], { version: n?.versionOf(c) }] as const),
      ]),
    );
  }
  /** `node/file` → the hash of the manifest its mirror pod was made from (syncMirrorPods). */
  const mirrored = new Map<string, string>();

  const apply = async (): Promise<void> => {
    for (const [node, manifests] of present) {
      const n = cp.nodes.get(node);
      if (!n) continue;
      for (const c of [...CONTROL_PLANE_MANIFESTS].reverse()) if (!manifests.has(STATIC_POD_MANIFESTS[c])) await n.stop(c);
    }
    const etcdProblems = await syncEtcdMembers(present, members, onRestarted);
    if (!members.anyRunning) {
      if (etcdProblems.length > 0) throw new Error(etcdProblems.join('; '));
      return;
    }
    for (const [node, manifests] of present) {
      const n = cp.nodes.get(node);
      if (!n) continue;
      for (const c of CONTROL_PLANE_MANIFESTS) {
        const file = STATIC_POD_MANIFESTS[c];
        if (!manifests.has(file)) continue;
        // The controller-manager and scheduler need their host's apiserver, as on a kubeadm node.
        if (c !== 'kube-apiserver' && !n.versionOf('kube-apiserver')) continue;
        const { version, emulated } = manifests.get(file) ?? {};
        if (version === undefined) throw new Error(`${node}: /etc/kubernetes/manifests/${file} names no image with a version`);
        const before = { version: n.versionOf(c), emulated: n.emulatedOf(c) };
        await n.run(c, version, emulated);
        if (before.version !== undefined && (before.version !== version || before.emulated !== emulated)) onRestarted?.(node, c, version);
      }
      if (kube) await syncMirrorPods(kube, members, mirrored, node, manifests);
    }
    if (etcdProblems.length > 0) throw new Error(etcdProblems.join('; '));
  };
  const queue = serialised(apply, onError);

  return {
    changed(node, manifests: readonly ManifestSeen[]) {
      if (!present.has(node)) return Promise.resolve();
      present.set(
        node,
        new Map(
          manifests.map((m) => [
            m.file,
            {
              version: m.file === STATIC_POD_MANIFESTS.etcd ? etcdVersionOfTag(m.image?.split(':').at(-1)) : versionOfImage(m.image),
              ...(m.file === STATIC_POD_MANIFESTS.etcd ? {} : withEmulation(m.text)),
              text: m.text,
            },
          ]),
        ),
      );
      return queue.next();
    },
    running(node) {
      if (!present.has(node)) return [];
      const n = cp.nodes.get(node);
      return NAMES.filter((name) => (name === 'etcd' ? members.versionOf(node) !== undefined : n?.versionOf(name) !== undefined));
    },
    settled: queue.settled,
  };
}

/** The emulated minor a manifest names (`--emulated-version`, KEP-4330), as an optional field. */
function withEmulation(text: string): { emulated?: string } {
  const emulated = emulatedVersionOfManifest(text);
  return emulated === undefined ? {} : { emulated };
}
