import type { V1PodDisruptionBudget } from '@kubernetes/client-node';
import type { Client } from '@temporalio/client';
import { selectorMatches } from '../rules/index.js';
import { mergePatch, type KubeClients } from '../sim/cluster/kube-clients.js';
import type { NodeBlock } from '../workflows/node-messages.js';
import { statusQuery, type UpgradeStatus } from '../workflows/rollout-messages.js';

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
  const operator = new DemoOperator(o);
  const loop = operator.run();
  return {
    actions: operator.actions,
    blocked: operator.blocked,
    async stop() {
      operator.stopped = true;
      await loop;
    },
  };
}

type Workload = { kind: 'Deployment' | 'StatefulSet'; name: string; replicas: number };

/** What the operator remembers between polls, and what it does on each. */
class DemoOperator {
  readonly actions: string[] = [];
  readonly blocked: Record<string, string> = {};
  stopped = false;
  private readonly handle;
  private readonly approved = new Set<string>();
  /** How many times each node's drain blocked: an operator gives up (aborts) after MAX_RETRIES retries. */
  private readonly blockedTimes = new Map<string, number>();
  private readonly fixesOf = new Map<string, { pdbs: Set<string>; fixes: Set<string> }>();

  constructor(private readonly o: OperatorOptions) {
    this.handle = o.client.workflow.getHandle(o.workflowId);
  }

  private say(line: string): void {
    this.o.say(`[operator] ${line}`);
  }

  async run(): Promise<void> {
    while (!this.stopped) {
      await this.tick();
      await sleep(this.o.pollMs ?? 500);
    }
  }

  private async tick(): Promise<void> {
    let s: UpgradeStatus;
    try {
      s = await this.handle.query(statusQuery);
    } catch {
      return; // not started yet, or between workflow tasks
    }
    for (const [node, n] of Object.entries(s.nodes)) {
      if (n.phase !== 'blocked' || !n.blocked) continue;
      const done = await this.unblock(node, n.blocked).catch((err: Error) => {
        this.say(`could not handle ${node}: ${err.message}`);
        return false;
      });
      // The parent hears of the retry from the node's workflow a moment later; until then the
      // status still says blocked. The next block of the same node comes a drain timeout later.
      if (done) await this.untilUnblocked(node, 15_000);
      else await sleep(2000); // and look again
    }
    for (const g of s.gates) {
      if (g.approvedBy || g.opensAt || this.approved.has(g.name)) continue;
      await this.approve(g.name, s).catch((err: Error) => this.say(`could not approve ${g.name}: ${err.message}`));
    }
  }

  /** Runs `skewless ARGS` as printed; on success `summary` joins the actions. */
  private async act(summary: string, args: string[]): Promise<boolean> {
    this.say(`$ skewless ${args.map((a) => (/^[\w./:=@%+-]+$/.test(a) ? a : `'${a.replace(/'/g, `'\\''`)}'`)).join(' ')}`);
    const code = await this.o.skewless(args);
    if (code === 0) this.actions.push(summary);
    else this.say(`(exit ${code}; will look again)`);
    return code === 0;
  }

  private byOperator(command: string[], comment: string): string[] {
    return [...command, '--by', 'demo-operator', '--comment', comment];
  }

  private async approve(gate: string, s: UpgradeStatus): Promise<void> {
    const hop = gate.replace(/^(workers|canary)-/, '');
    const comment = gate.startsWith('workers-') ? await this.controlPlanesChecked(gate, hop) : await this.canaryChecked(gate, hop, s);
    if (comment === undefined) return; // not yet: look again on the next poll
    if (await this.act(`approved gate ${gate}`, this.byOperator(['approve', this.o.cluster, '--gate', gate], comment)))
      this.approved.add(gate);
  }

  /** The workers gate's check: every control plane Ready at the hop. The approval's comment, or undefined: not yet. */
  private async controlPlanesChecked(gate: string, hop: string): Promise<string | undefined> {
    const cp = await controlPlanesAt(this.o.kube, hop);
    this.say(`gate ${gate}: checked control planes Ready at v${hop}: ${cp.ok.join(', ') || 'none'} (${cp.ok.length}/${cp.total})`);
    return cp.ok.length === cp.total ? `control planes ${cp.ok.join(', ')} Ready at v${hop}` : undefined;
  }

  /** The canary gate's check: every Deployment fully available. The approval's comment, or undefined: not yet. */
  private async canaryChecked(gate: string, hop: string, s: UpgradeStatus): Promise<string | undefined> {
    const canary = Object.entries(s.nodes)
      .filter(([, n]) => n.stage === 'canary')
      .map(([name]) => name);
    const d = await deploymentsAvailable(this.o.kube);
    this.say(
      `gate ${gate}: canary ${canary.join(', ') || '-'} done; Deployments fully available: ${d.total - d.short.length}/${d.total}${d.short.length ? ` (short: ${d.short.join(', ')})` : ''}`,
    );
    return d.short.length > 0 ? undefined : `canary ${canary.join(', ')} healthy at v${hop}, all ${d.total} Deployments available`;
  }

  private async unblock(node: string, block: NodeBlock): Promise<boolean> {
    this.say(`${node} is blocked: ${block.message}`);
    if (block.kind === 'StepFailed') {
      // The demo's hosts have no faults: a step that failed for good is a real problem, not one to retry blindly.
      this.blocked[node] = `${block.step} failed (${block.failure}): aborted`;
      const comment = `${block.summary} failed (${block.failure})`;
      return this.act(`aborted the upgrade: ${block.summary} failed`, this.byOperator(['abort', this.o.cluster], comment));
    }
    if (block.kind === 'DrainRefused') {
      // Nothing an operator can fix from here without deleting someone's pod: leave the node for later.
      this.blocked[node] = 'drain refused: skipped';
      return this.act(
        `skipped ${node} (drain refused)`,
        this.byOperator(
          ['resolve', this.o.cluster, '--node', node, '--action', 'skip'],
          'drain refused: unmanaged or local-storage pods; node left for the owners',
        ),
      );
    }
    const pdbs = [...new Set(block.pods.flatMap((p) => (p.pdbs ?? []).map((n) => `${p.namespace}/${n}`)))];
    const fixes: string[] = [];
    for (const id of pdbs) await this.fixBudget(id, node, fixes);
    return this.retryOrAbort(node, pdbs, fixes);
  }

  /** Looks at the budget `namespace/name` that blocks `node`'s drain and makes it allow an eviction (`fixes`: what it did). */
  private async fixBudget(id: string, node: string, fixes: string[]): Promise<void> {
    const [namespace, name] = id.split('/') as [string, string];
    const pdb = await this.o.kube.policy.readNamespacedPodDisruptionBudget({ namespace, name });
    const st = pdb.status;
    const budget =
      pdb.spec?.minAvailable !== undefined ? `minAvailable ${pdb.spec.minAvailable}` : `maxUnavailable ${pdb.spec?.maxUnavailable}`;
    this.say(
      `PodDisruptionBudget ${id}: ${budget}, ${st?.currentHealthy ?? 0} of ${st?.expectedPods ?? 0} pods healthy, ${st?.disruptionsAllowed ?? 0} disruption(s) allowed`,
    );
    if ((st?.disruptionsAllowed ?? 0) > 0) return;
    const workload = await workloadOf(this.o.kube, pdb);
    const min = pdb.spec?.minAvailable;
    if (workload && typeof min === 'number' && min >= workload.replicas) await this.scaleAboveBudget(workload, namespace, id, min, fixes);
    else {
      this.say(`${id} is at its floor for now: waiting for it to allow an eviction`);
      fixes.push(`waited for ${id}`);
    }
    const allowed = await this.ensureDisruption(pdb, node, fixes);
    this.say(`PodDisruptionBudget ${id} now allows ${allowed} disruption(s)`);
  }

  /** The budget can never allow an eviction: give it one replica of headroom; the app team's PDB stays as written. */
  private async scaleAboveBudget(workload: Workload, namespace: string, id: string, min: number, fixes: string[]): Promise<void> {
    const replicas = min + 1;
    this.say(
      `fix: ${workload.kind} ${namespace}/${workload.name} runs ${workload.replicas} replica(s) and its PDB wants ${min} available, so no pod may ever leave; scaling it to ${replicas}`,
    );
    const body = { spec: { replicas } };
    const apps = this.o.kube.apps;
    if (workload.kind === 'Deployment') await apps.patchNamespacedDeployment({ namespace, name: workload.name, body }, mergePatch);
    else await apps.patchNamespacedStatefulSet({ namespace, name: workload.name, body }, mergePatch);
    this.actions.push(
      `scaled ${workload.kind} ${namespace}/${workload.name} ${workload.replicas} → ${replicas} so that ${id} allows an eviction`,
    );
    fixes.push(`scaled ${namespace}/${workload.name} to ${replicas}`);
  }

  /** Retries the drain of `node`, saying what was fixed, or aborts the upgrade once it blocked more than MAX_RETRIES times. */
  private async retryOrAbort(node: string, pdbs: string[], fixes: string[]): Promise<boolean> {
    const attempts = (this.blockedTimes.get(node) ?? 0) + 1;
    this.blockedTimes.set(node, attempts);
    if (attempts > MAX_RETRIES) {
      this.blocked[node] = `drain blocked by PDB ${pdbs.join(', ')} ${attempts} times: aborted`;
      const comment = `${node} stayed blocked after ${MAX_RETRIES} retries`;
      return this.act(`aborted the upgrade: ${node} stayed blocked`, this.byOperator(['abort', this.o.cluster], comment));
    }
    const all = this.fixesOf.get(node) ?? { pdbs: new Set<string>(), fixes: new Set<string>() };
    this.fixesOf.set(node, all);
    pdbs.forEach((p) => all.pdbs.add(p));
    fixes.forEach((f) => all.fixes.add(f));
    this.blocked[node] =
      `drain blocked by PDB ${[...all.pdbs].join(', ')}: ${[...all.fixes, attempts > 1 ? `retried ${attempts}×` : 'retried'].join(', ')}`;
    return this.act(
      `retried the drain of ${node}`,
      this.byOperator(
        ['resolve', this.o.cluster, '--node', node, '--action', 'retry'],
        fixes.length ? `${fixes.join('; ')}; retrying` : 'retrying',
      ),
    );
  }

  /**
   * Waits for the budget to allow an eviction. If it does not, looks at its pods: one that has not
   * been Ready for a while (on a node other than the one draining) is deleted, so its controller
   * replaces it, and the wait starts again. Returns the disruptions allowed in the end.
   */
  private async ensureDisruption(pdb: V1PodDisruptionBudget, drainingNode: string, fixes: string[]): Promise<number> {
    const namespace = pdb.metadata?.namespace ?? 'default';
    const name = pdb.metadata?.name ?? '';
    let allowed = 0;
    for (let round = 0; round < 3 && !this.stopped; round++) {
      const expiry = await this.disruptedEntryExpiry(namespace, name);
      if (expiry !== undefined) {
        allowed = await this.waitForDisruption(namespace, name, Math.max(0, expiry - Date.now()) + 30_000);
        if (allowed > 0) break;
        continue;
      }
      allowed = await this.waitForDisruption(namespace, name, 20_000);
      if (allowed > 0) break;
      await this.deleteStuckPods(pdb, drainingNode, fixes);
    }
    return allowed;
  }

  /**
   * Kubernetes counts an evicted pod as disrupted until it is gone or 2 minutes have passed; a
   * StatefulSet's replacement has the same name, so it is not counted healthy until then. When the
   * budget still counts such a pod: when its entry expires (said), else undefined.
   */
  private async disruptedEntryExpiry(namespace: string, name: string): Promise<number | undefined> {
    const disrupted = Object.entries(
      (await this.o.kube.policy.readNamespacedPodDisruptionBudget({ namespace, name })).status?.disruptedPods ?? {},
    );
    if (disrupted.length === 0) return undefined;
    const expires = Math.max(...disrupted.map(([, at]) => new Date(at).getTime())) + 120_000;
    this.say(
      `${namespace}/${name} still counts ${disrupted.map(([pod]) => pod).join(', ')} as disrupted by an earlier eviction; Kubernetes counts a same-name replacement as healthy only when that entry expires, in ${Math.max(0, Math.round((expires - Date.now()) / 1000))} s: waiting`,
    );
    return expires;
  }

  /** Deletes the budget's pods (off the draining node) not Ready for over 15 s, so that their controllers replace them. */
  private async deleteStuckPods(pdb: V1PodDisruptionBudget, drainingNode: string, fixes: string[]): Promise<void> {
    const namespace = pdb.metadata?.namespace ?? 'default';
    const name = pdb.metadata?.name ?? '';
    const pods = (await this.o.kube.core.listNamespacedPod({ namespace })).items.filter(
      (p) => !p.metadata?.deletionTimestamp && selectorMatches(pdb.spec?.selector, p.metadata?.labels) && p.spec?.nodeName !== drainingNode,
    );
    const stuck = pods.filter((p) => {
      const ready = p.status?.conditions?.find((c) => c.type === 'Ready');
      const since = ready?.lastTransitionTime ? new Date(ready.lastTransitionTime).getTime() : Date.now();
      return ready?.status !== 'True' && Date.now() - since > 15_000;
    });
    for (const p of stuck) {
      const pod = `${namespace}/${p.metadata?.name}`;
      this.say(
        `pod ${pod} on ${p.spec?.nodeName} has not been Ready for over 15 s, which keeps ${namespace}/${name} at its floor: deleting it so that its controller replaces it`,
      );
      await this.o.kube.core.deleteNamespacedPod({ namespace, name: p.metadata?.name ?? '' }).catch(() => undefined);
      this.actions.push(`deleted pod ${pod}, stuck not Ready on ${p.spec?.nodeName}`);
      fixes.push(`deleted stuck pod ${pod}`);
    }
  }

  private async waitForDisruption(namespace: string, name: string, timeoutMs: number): Promise<number> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const pdb = await this.o.kube.policy.readNamespacedPodDisruptionBudget({ namespace, name });
      const allowed = pdb.status?.disruptionsAllowed ?? 0;
      if (allowed > 0 || Date.now() > deadline || this.stopped) return allowed;
      await sleep(500);
    }
  }

  private async untilUnblocked(node: string, timeoutMs: number): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline && !this.stopped) {
      const s = await this.handle.query(statusQuery).catch(() => undefined);
      if (s && s.nodes[node]?.phase !== 'blocked') return;
      await sleep(250);
    }
  }
}

async function controlPlanesAt(kube: KubeClients, version: string): Promise<{ total: number; ok: string[] }> {
  const nodes = (await kube.core.listNode()).items;
  const cps = nodes.filter((n) => n.metadata?.labels?.['node-role.kubernetes.io/control-plane'] !== undefined);
  const ok = cps.filter(
    (n) =>
      n.status?.nodeInfo?.kubeletVersion === `v${version}` && n.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True'),
  );
  return { total: cps.length, ok: ok.map((n) => n.metadata?.name ?? '?') };
}

async function deploymentsAvailable(kube: KubeClients): Promise<{ total: number; short: string[] }> {
  const ds = (await kube.apps.listDeploymentForAllNamespaces()).items;
  const short = ds
    .filter((d) => (d.status?.availableReplicas ?? 0) < (d.spec?.replicas ?? 1))
    .map((d) => `${d.metadata?.namespace}/${d.metadata?.name}`);
  return { total: ds.length, short };
}

/** The workload behind a PDB (Deployment or StatefulSet whose pod template the selector picks). */
async function workloadOf(kube: KubeClients, pdb: V1PodDisruptionBudget): Promise<Workload | undefined> {
  const namespace = pdb.metadata?.namespace ?? 'default';
  const selector = pdb.spec?.selector;
  const deployments = (await kube.apps.listNamespacedDeployment({ namespace })).items
    .filter((d) => selectorMatches(selector, d.spec?.template.metadata?.labels))
    .map((d) => ({ kind: 'Deployment' as const, name: d.metadata?.name ?? '', replicas: d.spec?.replicas ?? 1 }));
  const sets = (await kube.apps.listNamespacedStatefulSet({ namespace })).items
    .filter((d) => selectorMatches(selector, d.spec?.template.metadata?.labels))
    .map((d) => ({ kind: 'StatefulSet' as const, name: d.metadata?.name ?? '', replicas: d.spec?.replicas ?? 1 }));
  return [...deployments, ...sets][0];
}
