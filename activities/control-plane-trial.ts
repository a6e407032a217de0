// The trial of a reversible hop on one control plane (issue 36), and its rollback, without etcd:
//   trialControlPlane     the N+1 binaries emulating N: kubeadm's own `upgrade apply` with `--patches` adding
//                         `--emulated-version=kube=N` to the three components' manifests, `--etcd-upgrade=false`,
//                         and the phases that move what cannot come back skipped (TRIAL_SKIPPED_PHASES). kubeadm
//                         backs the old manifests up in /etc/kubernetes/tmp/kubeadm-backup-manifests-*.
//   rollbackControlPlane  the N manifests kubeadm backed up moved back into place, scheduler, controller-manager,
//                         then apiserver (the reverse of kubeadm's order), each waited for at N. kubeadm itself
//                         refuses a minor downgrade, so the way back is its backups, as its own failed-upgrade rollback.
//   commitControlPlane    the emulation removed by kubeadm itself, without the patches: `upgrade apply` on the
//                         first control plane (it uploads kubeadm-config at N+1, moves etcd and the addons as
//                         in any hop), `upgrade node` on the others (their manifests regenerated from it).
// Both read the control plane's state first (the mirror pods' images and command lines, which the kubelet
// copies from the manifests) and do nothing when it is already there.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ApplicationFailure } from '@temporalio/activity';
import { canEmulate, emulationRange, minorOf, parseMinor, parseVersion } from '../rules/index.js';
import type { ClusterAccess, ClusterResolver } from './cluster-access.js';
import { heartbeatWhile, hostActivityScope, type HostActivityScope } from './host-activity-context.js';
import { checkNode, checkVersion, clusterVersion, commandFailed, invalid, run } from './host-commands.js';
import { ErrorType, kubeCall } from './errors.js';
import { pollUntil } from '../tooling/poll-until.js';

export const TRIAL_COMPONENTS = ['kube-apiserver', 'kube-controller-manager', 'kube-scheduler'] as const;
type TrialComponent = (typeof TRIAL_COMPONENTS)[number];
const MANIFESTS = '/etc/kubernetes/manifests';
const KUBEADM_TMP = '/etc/kubernetes/tmp';
/** Where the emulation patches live for kubeadm's `--patches` (root's, beside kubeadm's own files). */
export const patchesDir = (emulates: string): string => `/etc/kubernetes/skewless/emulation-${parseMinor(emulates).text}`;
/**
 * Phases a trial skips (`kubeadm upgrade apply phase --help`, 1.33.13 and 1.34.4): upload-config, so that
 * kube-system/kubeadm-config keeps N's ClusterConfiguration (the rollback has nothing to undo in the API,
 * and the commit's ordinary `upgrade apply` records N+1); the kubelet's configuration (no kubelet moves in
 * a trial); the addons (CoreDNS and kube-proxy at N+1 are not taken back by the N binaries). Every control
 * plane runs `upgrade apply`: `upgrade node` takes its version from kubeadm-config, which still says N.
 */
export const TRIAL_SKIPPED_PHASES = ['upload-config', 'kubelet-config', 'addon/coredns', 'addon/kube-proxy'];
const EMULATED = /^--emulated-version=(?:[^\s,]*,)?(?:kube=)?(\d+\.\d+)/;
const WAIT_MS = 180_000;
const READ_MS = 60_000;

/** What one control plane's three components run: version and emulated minor, from their mirror pods. */
export type ControlPlaneRun = Partial<Record<TrialComponent, { version: string; emulated?: string }>>;

export async function readControlPlaneRun(access: ClusterAccess, node: string): Promise<ControlPlaneRun> {
  const { items } = await kubeCall(`list control-plane pods on ${node}`, () =>
    access.kube.core.listNamespacedPod({
      namespace: 'kube-system',
      labelSelector: 'tier=control-plane',
      fieldSelector: `spec.nodeName=${node}`,
    }),
  );
  const out: ControlPlaneRun = {};
  for (const pod of items) {
    const component = pod.metadata?.labels?.component as TrialComponent | undefined;
    if (!component || !(TRIAL_COMPONENTS as readonly string[]).includes(component)) continue;
    const container = pod.spec?.containers[0];
    const tag = container?.image?.split(':').at(-1);
    if (!tag?.startsWith('v')) continue;
    const emulated = (container?.command ?? []).map((a) => EMULATED.exec(a)?.[1]).find((e) => e !== undefined);
    out[component] = { version: tag.slice(1), ...(emulated ? { emulated } : {}) };
  }
  return out;
}

const runsAt = (run: ControlPlaneRun, version: string, emulated: string | undefined): boolean =>
  TRIAL_COMPONENTS.every((c) => run[c]?.version === version && run[c]?.emulated === emulated);

/** kubeadm's JSON patch (RFC 6902) appending the flag to the one container's command. */
export const emulationPatch = (emulates: string): string =>
  JSON.stringify([{ op: 'add', path: '/spec/containers/0/command/-', value: `--emulated-version=kube=${parseMinor(emulates).text}` }]);

export interface TrialResult {
  node: string;
  version: string;
  emulates: string;
  /** False when the control plane already ran the trial and nothing ran on the host. */
  ran: boolean;
  components: ControlPlaneRun;
}

async function awaitRun(
  access: ClusterAccess,
  node: string,
  version: string,
  emulated: string | undefined,
  scope: HostActivityScope,
): Promise<ControlPlaneRun> {
  const what = `${version}${emulated ? ` emulating ${emulated}` : ''}`;
  const step = { node, step: `wait for control-plane pods at ${what}` };
  return pollUntil(
    // The apiserver restarting is part of the wait (a single control plane has no other): unreadable is not yet.
    () => readControlPlaneRun(access, node).catch((): ControlPlaneRun => ({})),
    (r) => runsAt(r, version, emulated),
    (r) => {
      throw ApplicationFailure.create({
        type: ErrorType.Unhealthy,
        message: `control plane on ${node} is not at ${what} ${WAIT_MS / 1000} s after the change: ${JSON.stringify(r)}`,
      });
    },
    { timeoutMs: WAIT_MS, intervalMs: 1000, signal: scope.signal, onPending: () => scope.heartbeat(step) },
  );
}

/** The emulation patches written to patchesDir on the node: uploaded as the SSH user, moved into place by root. */
async function writePatches(access: ClusterAccess, node: string, emulates: string, signal: AbortSignal | undefined): Promise<string> {
  const upload = access.shell.upload?.bind(access.shell);
  if (!upload) throw invalid(`the shell to ${node} cannot copy files onto it: the emulation patches need SFTP`);
  const dir = patchesDir(emulates);
  await run(access, node, ['mkdir', '-p', dir], { sudo: true, timeoutMs: READ_MS, signal });
  const local = mkdtempSync(join(tmpdir(), 'skewless-patch-'));
  try {
    for (const c of TRIAL_COMPONENTS) {
      const file = `${c}+json.json`;
      writeFileSync(join(local, file), emulationPatch(emulates));
      const staged = `/tmp/skewless-${c}+json.json`;
      await upload(node, join(local, file), staged, { timeoutMs: READ_MS, ...(signal ? { signal } : {}) });
      await run(access, node, ['mv', staged, `${dir}/${file}`], { sudo: true, timeoutMs: READ_MS, signal });
    }
  } finally {
    rmSync(local, { recursive: true, force: true });
  }
  return dir;
}

/**
 * The trial on one control plane: kubeadm (the N+1 package, installed before) moves its components to
 * `version` emulating `emulates`; etcd, the kubelet, the addons and kubeadm-config stay.
 */
export async function trialControlPlane(
  access: ClusterAccess,
  input: { node: string; version: string; emulates: string },
): Promise<TrialResult> {
  const node = checkNode(input.node);
  const version = checkVersion(input.version);
  const emulates = parseMinor(input.emulates).text;
  if (!canEmulate(version, emulates)) {
    const r = emulationRange(version);
    throw invalid(`the ${version} binaries cannot emulate ${emulates}: their --emulated-version accepts ${r.oldest}..${r.newest}`);
  }
  const scope = hostActivityScope();
  const now = await readControlPlaneRun(access, node);
  if (runsAt(now, version, emulates)) return { node, version, emulates, ran: false, components: now };
  if (Object.keys(now).length === 0) throw invalid(`${node} runs no control-plane mirror pods: a trial moves a control plane`);
  const dir = await writePatches(access, node, emulates, scope.signal);
  const argv = [
    'kubeadm',
    'upgrade',
    'apply',
    `v${version}`,
    '--yes',
    '--patches',
    dir,
    '--etcd-upgrade=false',
    `--skip-phases=${TRIAL_SKIPPED_PHASES.join(',')}`,
  ];
  const result = await heartbeatWhile(
    scope,
    () => ({ node, step: 'kubeadm upgrade apply (trial)' }),
    access.shell.exec(node, argv, { timeoutMs: access.config.timeouts.kubeadmApplySeconds * 1000, sudo: true, signal: scope.signal }),
  );
  if (result.exitCode !== 0) throw commandFailed(node, argv, result);
  return { node, version, emulates, ran: true, components: await awaitRun(access, node, version, emulates, scope) };
}

export interface RollbackResult {
  node: string;
  version: string;
  ran: boolean;
  /** The kubeadm backup the manifests came from, when any moved. */
  backup?: string;
  restored: TrialComponent[];
}

/** kubeadm's manifest backups on the node, newest first (their names end in a sortable timestamp). */
async function kubeadmBackups(access: ClusterAccess, node: string, signal: AbortSignal | undefined): Promise<string[]> {
  const r = await access.shell.exec(node, ['ls', '-1', KUBEADM_TMP], { sudo: true, timeoutMs: READ_MS, signal });
  if (r.exitCode !== 0) return [];
  return r.stdout
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => /^kubeadm-backup-manifests-[\w.:-]+$/.test(l))
    .sort()
    .reverse()
    .map((l) => `${KUBEADM_TMP}/${l}`);
}

/** The image tag and emulation of a manifest's text (a backup's), as readControlPlaneRun reads a mirror pod. */
function manifestRun(text: string): { version?: string; emulated?: string } {
  const tag = /^\s*image:\s*\S+:v(\S+)\s*$/m.exec(text)?.[1];
  const emulated = /^\s*-\s*--emulated-version=(?:[^\s,]*,)?(?:kube=)?(\d+\.\d+)/m.exec(text)?.[1];
  return { ...(tag ? { version: tag } : {}), ...(emulated ? { emulated } : {}) };
}

/**
 * The rollback of one control plane's trial: each component not at `version` without emulation gets
 * the manifest kubeadm backed up before the trial (the newest backup whose manifest names `version`
 * and no emulation), scheduler first, apiserver last; then every component is waited for at `version`.
 */
export async function rollbackControlPlane(access: ClusterAccess, input: { node: string; version: string }): Promise<RollbackResult> {
  const node = checkNode(input.node);
  const version = checkVersion(input.version);
  const scope = hostActivityScope();
  const now = await readControlPlaneRun(access, node);
  if (runsAt(now, version, undefined)) return { node, version, ran: false, restored: [] };
  const pending = [...TRIAL_COMPONENTS].reverse().filter((c) => !(now[c]?.version === version && now[c]?.emulated === undefined));
  let backup: string | undefined;
  for (const dir of await kubeadmBackups(access, node, scope.signal)) {
    const texts = await Promise.all(
      pending.map((c) => access.shell.exec(node, ['cat', `${dir}/${c}.yaml`], { sudo: true, timeoutMs: READ_MS, signal: scope.signal })),
    );
    if (texts.every((t) => t.exitCode === 0 && manifestRun(t.stdout).version === version && manifestRun(t.stdout).emulated === undefined)) {
      backup = dir;
      break;
    }
  }
  if (!backup) {
    throw ApplicationFailure.create({
      type: ErrorType.Invalid,
      nonRetryable: true,
      message: `no kubeadm backup on ${node} holds ${pending.join(', ')} at ${version} (${KUBEADM_TMP}/kubeadm-backup-manifests-*): the trial cannot be rolled back by its manifests`,
    });
  }
  for (const c of pending) {
    await run(access, node, ['mv', `${backup}/${c}.yaml`, `${MANIFESTS}/${c}.yaml`], {
      sudo: true,
      timeoutMs: READ_MS,
      signal: scope.signal,
    });
  }
  await awaitRun(access, node, version, undefined, scope);
  return { node, version, ran: true, backup, restored: pending };
}

export interface CommitResult {
  node: string;
  version: string;
  /** False when the control plane already ran `version` without emulation (and, on the first, kubeadm-config said so). */
  ran: boolean;
  components: ControlPlaneRun;
}

/**
 * The commit of one control plane's trial: kubeadm regenerates its manifests without the patches, so
 * the emulation flag goes. `first`: `kubeadm upgrade apply v<version> --yes` (the hop's full apply:
 * kubeadm-config, etcd, addons); the others `kubeadm upgrade node`, which reads kubeadm-config the first set.
 */
export async function commitControlPlane(
  access: ClusterAccess,
  input: { node: string; version: string; first: boolean },
): Promise<CommitResult> {
  const node = checkNode(input.node);
  const version = checkVersion(input.version);
  const scope = hostActivityScope();
  const now = await readControlPlaneRun(access, node);
  const recorded = await clusterVersion(access);
  if (runsAt(now, version, undefined) && (!input.first || recorded === version)) return { node, version, ran: false, components: now };
  if (Object.keys(now).length === 0) throw invalid(`${node} runs no control-plane mirror pods: a commit moves a control plane`);
  if (!input.first && recorded !== version)
    throw invalid(`kubeadm-config says ${recorded ?? 'no version'}, not ${version}: commit the first control plane before ${node}`);
  const argv = input.first ? ['kubeadm', 'upgrade', 'apply', `v${version}`, '--yes'] : ['kubeadm', 'upgrade', 'node'];
  const result = await heartbeatWhile(
    scope,
    () => ({ node, step: `${argv.slice(0, 3).join(' ')} (commit)` }),
    access.shell.exec(node, argv, { timeoutMs: access.config.timeouts.kubeadmApplySeconds * 1000, sudo: true, signal: scope.signal }),
  );
  if (result.exitCode !== 0) throw commandFailed(node, argv, result);
  return { node, version, ran: true, components: await awaitRun(access, node, version, undefined, scope) };
}

/** The minor a trial to `version` emulates: the one below it. */
export const trialEmulates = (version: string): string => {
  const v = parseVersion(version);
  return minorOf({ major: v.major, minor: v.minor - 1 });
};

export function createControlPlaneTrialActivities(deps: { clusters: ClusterResolver }) {
  return {
    /** The N+1 binaries emulating N on one control plane, through kubeadm's --patches; etcd, kubelet and addons stay. */
    trialControlPlane: async (input: { cluster: string; node: string; version: string; emulates: string }) =>
      trialControlPlane(deps.clusters(input.cluster), input),
    /** One control plane back to the N manifests kubeadm backed up before its trial. */
    rollbackControlPlane: async (input: { cluster: string; node: string; version: string }) =>
      rollbackControlPlane(deps.clusters(input.cluster), input),
    /** One control plane's emulation removed by kubeadm (apply on the first, node on the others): the hop committed. */
    commitControlPlane: async (input: { cluster: string; node: string; version: string; first: boolean }) =>
      commitControlPlane(deps.clusters(input.cluster), input),
  };
}
