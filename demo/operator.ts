import type { V1PodDisruptionBudget } from '@kubernetes/client-node';
import type { Client } from '@temporalio/client';
import { selectorMatches } from '../rules/index.js';
import { mergePatch, type KubeClients } from '../sim/cluster/kube-clients.js';
import type { NodeBlock } from '../workflows/node-messages.js';
import { statusQuery, type UpgradeStatus } from '../workflows/upgrade-messages.js';

/**
 * The operator the demo plays: watches the upgrade's `status` query, and
 * - approves each waiting gate with `skewless approve ... --comment`, after looking at the cluster;
 * - for a blocked drain, prints what blocks it, fixes the cause the way an operator would (a budget
 *   that can never allow an eviction gets one more replica behind it; a budget that is only
 *   momentarily at zero is waited for), then `skewless resolve ... --action retry`.
 * Every action is printed with the `[operator]` prefix.
 */

export interface OperatorOptions {
  client: Client;
  workflowId: string;
  cluster: string;
  kube: KubeClients;
  /** Runs the real `skewless` CLI; resolves with its exit code. */
  skewless: (args: string[]) => Promise<number>;
  say: (line: string) => void;
  pollMs?: number;
}

export interface Operator {
  /** What the operator did, one line each (for the summary). */
  actions: string[];
  /** Nodes whose drain blocked: what blocked them and what the operator did, for the summary. */
  blocked: Record<string, string>;
  stop(): Promise<void>;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const MAX_RETRIES = 4;

export function startOperator(o: OperatorOptions): Operator {
  const actions: string[] = [];
  const blocked: Record<string, string> = {};
  const say = (line: string) => o.say(`[operator] ${line}`);
  const handle = o.client.workflow.getHandle(o.workflowId);
  const approved = new Set<string>();
  /** How many times each node's drain blocked: an operator gives up (aborts) after MAX_RETRIES retries. */
  const blockedTimes = new Map<string, number>();
  const fixesOf = new Map<string, { pdbs: Set<string>; fixes: Set<string> }>();
  let stopped = false;

  const act = async (summary: string, args: string[]) => {
    say(`$ skewless ${args.map((a) => (/^[\w./:=@%+-]+$/.test(a) ? a : `'${a.replace(/'/g, `'\\''`)}'`)).join(' ')}`);
    const code = await o.skewless(args);
    if (code === 0) actions.push(summary);
    else say(`(exit ${code}; will look again)`);
    return code === 0;
  };

  const controlPlanesAt = async (version: string) => {
    const nodes = (await o.kube.core.listNode()).items;
    const cps = nodes.filter((n) => n.metadata?.labels?.['node-role.kubernetes.io/control-plane'] !== undefined);
    const ok = cps.filter(
      (n) =>
        n.status?.nodeInfo?.kubeletVersion === `v${version}` &&
        n.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True'),
    );
    return { total: cps.length, ok: ok.map((n) => n.metadata?.name ?? '?') };
  };
  const deploymentsAvailable = async () => {
    const ds = (await o.kube.apps.listDeploymentForAllNamespaces()).items;
    const short = ds
      .filter((d) => (d.status?.availableReplicas ?? 0) < (d.spec?.replicas ?? 1))
      .map((d) => `${d.metadata?.namespace}/${d.metadata?.name}`);
    return { total: ds.length, short };
  };

  const approve = async (gate: string, s: UpgradeStatus) => {
    const hop = gate.replace(/^(workers|canary)-/, '');
    let comment: string;
    if (gate.startsWith('workers-')) {
      const cp = await controlPlanesAt(hop);
      say(`gate ${gate}: checked control planes Ready at v${hop}: ${cp.ok.join(', ') || 'none'} (${cp.ok.length}/${cp.total})`);
      if (cp.ok.length !== cp.total) return; // not yet: look again on the next poll
      comment = `control planes ${cp.ok.join(', ')} Ready at v${hop}`;
    } else {
      const canary = Object.entries(s.nodes)
        .filter(([, n]) => n.stage === 'canary')
        .map(([name]) => name);
      const d = await deploymentsAvailable();
      say(
        `gate ${gate}: canary ${canary.join(', ') || '-'} done; Deployments fully available: ${d.total - d.short.length}/${d.total}${d.short.length ? ` (short: ${d.short.join(', ')})` : ''}`,
      );
      if (d.short.length > 0) return;
      comment = `canary ${canary.join(', ')} healthy at v${hop}, all ${d.total} Deployments available`;
    }
    if (await act(`approved gate ${gate}`, ['approve', o.cluster, '--gate', gate, '--by', 'demo-operator', '--comment', comment]))
      approved.add(gate);
  };

  /** The workload behind a PDB (Deployment or StatefulSet whose pod template the selector picks). */
  const workloadOf = async (pdb: V1PodDisruptionBudget) => {
    const namespace = pdb.metadata?.namespace ?? 'default';
    const selector = pdb.spec?.selector;
    const deployments = (await o.kube.apps.listNamespacedDeployment({ namespace })).items
      .filter((d) => selectorMatches(selector, d.spec?.template.metadata?.labels))
      .map((d) => ({ kind: 'Deployment' as const, name: d.metadata?.name ?? '', replicas: d.spec?.replicas ?? 1 }));
    const sets = (await o.kube.apps.listNamespacedStatefulSet({ namespace })).items
      .filter((d) => selectorMatches(selector, d.spec?.template.metadata?.labels))
      .map((d) => ({ kind: 'StatefulSet' as const, name: d.metadata?.name ?? '', replicas: d.spec?.replicas ?? 1 }));
    return [...deployments, ...sets][0];
  };

  const waitForDisruption = async (namespace: string, name: string, timeoutMs: number) => {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const pdb = await o.kube.policy.readNamespacedPodDisruptionBudget({ namespace, name });
      const allowed = pdb.status?.disruptionsAllowed ?? 0;
      if (allowed > 0 || Date.now() > deadline || stopped) return allowed;
      await sleep(500);
    }
  };

  /**
   * Waits for the budget to allow an eviction. If it does not, looks at its pods: one that has not
   * been Ready for a while (on a node other than the one draining) is deleted, so its controller
   * replaces it, and the wait starts again. Returns the disruptions allowed in the end.
   */
  const ensureDisruption = async (pdb: V1PodDisruptionBudget, drainingNode: string, fixes: string[]) => {
    const namespace = pdb.metadata?.namespace ?? 'default';
    const name = pdb.metadata?.name ?? '';
    let allowed = 0;
    for (let round = 0; round < 3 && !stopped; round++) {
      // Kubernetes counts an evicted pod as disrupted until it is gone or 2 minutes have passed; a
      // StatefulSet's replacement has the same name, so it is not counted healthy until then.
      const disrupted = Object.entries(
        (await o.kube.policy.readNamespacedPodDisruptionBudget({ namespace, name })).status?.disruptedPods ?? {},
      );
      if (disrupted.length > 0) {
        const expires = Math.max(...disrupted.map(([, at]) => new Date(at).getTime())) + 120_000;
        say(
          `${namespace}/${name} still counts ${disrupted.map(([pod]) => pod).join(', ')} as disrupted by an earlier eviction; Kubernetes counts a same-name replacement as healthy only when that entry expires, in ${Math.max(0, Math.round((expires - Date.now()) / 1000))} s: waiting`,
        );
        allowed = await waitForDisruption(namespace, name, Math.max(0, expires - Date.now()) + 30_000);
        if (allowed > 0) break;
        continue;
      }
      allowed = await waitForDisruption(namespace, name, 20_000);
      if (allowed > 0) break;
      const pods = (await o.kube.core.listNamespacedPod({ namespace })).items.filter(
        (p) =>
          !p.metadata?.deletionTimestamp && selectorMatches(pdb.spec?.selector, p.metadata?.labels) && p.spec?.nodeName !== drainingNode,
      );
      const stuck = pods.filter((p) => {
        const ready = p.status?.conditions?.find((c) => c.type === 'Ready');
        const since = ready?.lastTransitionTime ? new Date(ready.lastTransitionTime).getTime() : Date.now();
        return ready?.status !== 'True' && Date.now() - since > 15_000;
      });
      if (stuck.length === 0) continue;
      for (const p of stuck) {
        const pod = `${namespace}/${p.metadata?.name}`;
        say(
          `pod ${pod} on ${p.spec?.nodeName} has not been Ready for over 15 s, which keeps ${namespace}/${name} at its floor: deleting it so that its controller replaces it`,
        );
        await o.kube.core.deleteNamespacedPod({ namespace, name: p.metadata?.name ?? '' }).catch(() => undefined);
        actions.push(`deleted pod ${pod}, stuck not Ready on ${p.spec?.nodeName}`);
        fixes.push(`deleted stuck pod ${pod}`);
      }
    }
    return allowed;
  };

  const unblock = async (node: string, block: NodeBlock): Promise<boolean> => {
    say(`${node} is blocked: ${block.message}`);
    if (block.kind === 'StepFailed') {
      // The demo's hosts have no faults: a step that failed for good is a real problem, not one to retry blindly.
      blocked[node] = `${block.step} failed (${block.failure}): aborted`;
      return act(`aborted the upgrade: ${block.summary} failed`, [
        'abort',
        o.cluster,
        '--by',
        'demo-operator',
        '--comment',
        `${block.summary} failed (${block.failure})`,
      ]);
    }
    if (block.kind === 'DrainRefused') {
      // Nothing an operator can fix from here without deleting someone's pod: leave the node for later.
      blocked[node] = 'drain refused: skipped';
      return act(`skipped ${node} (drain refused)`, [
        'resolve',
        o.cluster,
        '--node',
        node,
        '--action',
        'skip',
        '--by',
        'demo-operator',
        '--comment',
        'drain refused: unmanaged or local-storage pods; node left for the owners',
      ]);
    }
    const pdbs = [...new Set(block.pods.flatMap((p) => (p.pdbs ?? []).map((n) => `${p.namespace}/${n}`)))];
    const fixes: string[] = [];
    for (const id of pdbs) {
      const [namespace, name] = id.split('/') as [string, string];
      const pdb = await o.kube.policy.readNamespacedPodDisruptionBudget({ namespace, name });
      const st = pdb.status;
      const budget =
        pdb.spec?.minAvailable !== undefined ? `minAvailable ${pdb.spec.minAvailable}` : `maxUnavailable ${pdb.spec?.maxUnavailable}`;
      say(
        `PodDisruptionBudget ${id}: ${budget}, ${st?.currentHealthy ?? 0} of ${st?.expectedPods ?? 0} pods healthy, ${st?.disruptionsAllowed ?? 0} disruption(s) allowed`,
      );
      if ((st?.disruptionsAllowed ?? 0) > 0) continue;
      const workload = await workloadOf(pdb);
      const min = pdb.spec?.minAvailable;
      if (workload && typeof min === 'number' && min >= workload.replicas) {
        // The budget can never allow an eviction: give it one replica of headroom; the app team's PDB stays as written.
        const replicas = min + 1;
        say(
          `fix: ${workload.kind} ${namespace}/${workload.name} runs ${workload.replicas} replica(s) and its PDB wants ${min} available, so no pod may ever leave; scaling it to ${replicas}`,
        );
        const body = { spec: { replicas } };
        if (workload.kind === 'Deployment')
          await o.kube.apps.patchNamespacedDeployment({ namespace, name: workload.name, body }, mergePatch);
        else await o.kube.apps.patchNamespacedStatefulSet({ namespace, name: workload.name, body }, mergePatch);
        actions.push(
          `scaled ${workload.kind} ${namespace}/${workload.name} ${workload.replicas} → ${replicas} so that ${id} allows an eviction`,
        );
        fixes.push(`scaled ${namespace}/${workload.name} to ${replicas}`);
      } else {
        say(`${id} is at its floor for now: waiting for it to allow an eviction`);
        fixes.push(`waited for ${id}`);
      }
      const allowed = await ensureDisruption(pdb, node, fixes);
      say(`PodDisruptionBudget ${id} now allows ${allowed} disruption(s)`);
    }
    const attempts = (blockedTimes.get(node) ?? 0) + 1;
    blockedTimes.set(node, attempts);
    if (attempts > MAX_RETRIES) {
      blocked[node] = `drain blocked by PDB ${pdbs.join(', ')} ${attempts} times: aborted`;
      return act(`aborted the upgrade: ${node} stayed blocked`, [
        'abort',
        o.cluster,
        '--by',
        'demo-operator',
        '--comment',
        `${node} stayed blocked after ${MAX_RETRIES} retries`,
      ]);
    }
    const all = fixesOf.get(node) ?? { pdbs: new Set<string>(), fixes: new Set<string>() };
    fixesOf.set(node, all);
    pdbs.forEach((p) => all.pdbs.add(p));
    fixes.forEach((f) => all.fixes.add(f));
    blocked[node] =
      `drain blocked by PDB ${[...all.pdbs].join(', ')}: ${[...all.fixes, attempts > 1 ? `retried ${attempts}×` : 'retried'].join(', ')}`;
    return act(`retried the drain of ${node}`, [
      'resolve',
      o.cluster,
      '--node',
      node,
      '--action',
      'retry',
      '--by',
      'demo-operator',
      '--comment',
      fixes.length ? `${fixes.join('; ')}; retrying` : 'retrying',
    ]);
  };

  const untilUnblocked = async (node: string, timeoutMs: number) => {
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline && !stopped) {
      const s = await handle.query(statusQuery).catch(() => undefined);
      if (s && s.nodes[node]?.phase !== 'blocked') return;
      await sleep(250);
    }
  };

  const tick = async () => {
    let s: UpgradeStatus;
    try {
      s = await handle.query(statusQuery);
    } catch {
      return; // not started yet, or between workflow tasks
    }
    for (const [node, n] of Object.entries(s.nodes)) {
      if (n.phase !== 'blocked' || !n.blocked) continue;
      const done = await unblock(node, n.blocked).catch((err: Error) => {
        say(`could not handle ${node}: ${err.message}`);
        return false;
      });
      // The parent hears of the retry from the node's workflow a moment later; until then the
      // status still says blocked. The next block of the same node comes a drain timeout later.
      if (done) await untilUnblocked(node, 15_000);
      else await sleep(2000); // and look again
    }
    for (const g of s.gates) {
      if (g.approvedBy || g.opensAt || approved.has(g.name)) continue;
      await approve(g.name, s).catch((err: Error) => say(`could not approve ${g.name}: ${err.message}`));
    }
  };

  const loop = (async () => {
    while (!stopped) {
      await tick();
      await sleep(o.pollMs ?? 500);
    }
  })();

  return {
    actions,
    blocked,
    async stop() {
      stopped = true;
      await loop;
    },
  };
}
