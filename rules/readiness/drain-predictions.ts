/**
 * Drains that will block, predicted before the run (issue 21): for each pod, the node it runs on
 * and the rollout phase that drains it, why its eviction will wait. Facts in (gathered by
 * activities/readiness/drain-predictions.ts), findings out; no I/O. Reuses the drain's own filters
 * (bare pods, emptyDir, DaemonSets: rules/drain-filters.ts) and the PDB audit (rules/pdb-audit.ts),
 * so a prediction says what the drain itself would say.
 *
 * Severity: `warn` throughout. A blocked drain already stops for the operator (nodeBlocked,
 * `skewless resolve`), so the prediction tells them early rather than holding the hop. That holds
 * for the webhook case too, though it is the worst: while its backends are evicted, writes its rules
 * match fail, until they are rescheduled outside the batch.
 */
import type { LabelSelector } from '../label-selector.js';
import { selectorMatches } from '../label-selector.js';
import { compareNatural } from '../natural-order.js';
import { planDrainPods, type DrainOptions, type DrainPodFacts } from '../drain-filters.js';
import { auditPdb, type PdbFacts } from '../pdb-audit.js';
import type { RolloutPhase } from '../rollout-plan.js';
import type { ReadinessFinding } from './finding.js';

/** A pod as the prediction needs it: the drain filters' facts plus where it runs and what owns it. */
export interface PredictionPod extends DrainPodFacts {
  node: string;
  labels: Record<string, string>;
  /** spec.terminationGracePeriodSeconds (the API's default is 30). */
  terminationGracePeriodSeconds?: number;
  /** The workload behind its controller: a ReplicaSet's Deployment, a StatefulSet; with its spec.replicas. */
  workload?: { kind: string; name: string; replicas?: number };
}

export interface PredictionPdb extends PdbFacts {
  selector?: LabelSelector;
}

/** One webhook of a Validating/MutatingWebhookConfiguration, with the pods behind its Service. */
export interface PredictionWebhook {
  /** `<configuration>/<webhook>`. */
  name: string;
  kind: 'validating' | 'mutating';
  failurePolicy: 'Fail' | 'Ignore';
  /** The Service it calls; absent for a URL webhook (its backend is outside the cluster). */
  service?: { namespace: string; name: string };
  /** The Service's backend pods (selector-matched, live). */
  backends: { namespace: string; name: string; node: string }[];
}

export interface DrainPredictionFacts {
  /** The hop's target (`1.34`). */
  hop: string;
  /** The rollout's phases (rules/rollout-plan.ts planRollout): which phase drains which node. */
  phases: readonly RolloutPhase[];
  pods: readonly PredictionPod[];
  pdbs: readonly PredictionPdb[];
  webhooks: readonly PredictionWebhook[];
  /** The drain's options (cluster configuration) and its timeout (policy drainTimeoutSeconds). */
  drain: Omit<DrainOptions, 'force'> & { timeoutSeconds: number };
}

const SOURCE_DRAIN = 'https://kubernetes.io/docs/tasks/administer-cluster/safely-drain-node/';
const SOURCE_PDB = 'https://kubernetes.io/docs/concepts/workloads/pods/disruptions/';
const SOURCE_GRACE = 'https://kubernetes.io/docs/concepts/workloads/pods/pod-lifecycle/#pod-termination';
const SOURCE_STS = 'https://kubernetes.io/docs/concepts/workloads/controllers/statefulset/#deployment-and-scaling-guarantees';
const SOURCE_DRAIN_RULES = 'https://cluster-api.sigs.k8s.io/tasks/automated-machine-management/machine_drain_rules';
const SOURCE_WEBHOOK = 'https://kubernetes.io/docs/reference/access-authn-authz/extensible-admission-controllers/#failure-policy';

const id = (p: { namespace: string; name: string }) => `${p.namespace}/${p.name}`;
const isLivePod = (p: PredictionPod) => !p.terminating && p.phase !== 'Succeeded' && p.phase !== 'Failed';
const DEFAULT_GRACE = 30;

/** Node → the phase that drains it (its stage: `batch-2`, `canary`, `control-plane`). */
function phaseIndex(phases: readonly RolloutPhase[]): Map<string, RolloutPhase> {
  const m = new Map<string, RolloutPhase>();
  for (const phase of phases) for (const n of phase.nodes) if (!m.has(n)) m.set(n, phase);
  return m;
}

type Emit = (pod: { namespace: string; name: string; node: string }, what: string, todo: string, source: string) => void;

/** The evicted pods a PodDisruptionBudget holds: a single replica, a budget that allows nothing, a StatefulSet's wait. */
function pdbBlocks(pdbs: DrainPredictionFacts['pdbs'], evicted: PredictionPod[], emit: Emit): void {
  for (const pdb of pdbs) {
    const covered = evicted.filter(
      (p) => p.namespace === pdb.namespace && pdb.selector !== undefined && selectorMatches(pdb.selector, p.labels),
    );
    if (covered.length === 0) continue;
    const audit = auditPdb(pdb);
    for (const pod of covered) {
      const w = pod.workload;
      if (w && w.kind !== 'StatefulSet' && (w.replicas ?? covered.length) === 1) {
        // One finding for the single replica: the budget's own reason folded in, not said twice.
        const refused = audit.find((a) => a.severity === 'error') ?? audit.find((a) => a.ruleId === 'no-disruptions-allowed');
        emit(
          pod,
          `${id(pod)} is the only replica of ${w.kind} ${w.name} under PodDisruptionBudget ${id(pdb)}: ${
            refused
              ? `the budget allows no eviction of it (${refused.reason}), so the drain waits`
              : 'its eviction takes the workload down until it runs elsewhere'
          }`,
          `scale ${w.kind} ${w.name} to 2 or more replicas for the upgrade${refused ? `, or ${refused.remedy}` : ''}`,
          SOURCE_PDB,
        );
        continue;
      }
      // The budget's reason only: its remedy is the finding's todo (the rendered line says both, once each).
      for (const a of audit) emit(pod, `${id(pod)} is covered by PodDisruptionBudget ${id(pdb)}: ${a.reason}`, a.remedy, SOURCE_PDB);
      if (w?.kind === 'StatefulSet') {
        emit(
          pod,
          `${id(pod)} belongs to StatefulSet ${w.name} under PodDisruptionBudget ${id(pdb)}: its replacement of the same name starts only once it is gone, so the budget stays spent meanwhile (the demo's two-minute hold)`,
          `expect the drain of ${pod.node} to wait for ${id(pod)} to come back Ready; loosen PodDisruptionBudget ${id(pdb)} if that is too long`,
          SOURCE_STS,
        );
      }
    }
  }
}

/** Pods that may take longer to stop than the drain's timeout. */
function graceBlocks(evicted: PredictionPod[], timeoutSeconds: number, emit: Emit): void {
  for (const pod of evicted) {
    const grace = pod.terminationGracePeriodSeconds ?? DEFAULT_GRACE;
    if (grace > timeoutSeconds) {
      emit(
        pod,
        `${id(pod)} may take terminationGracePeriodSeconds ${grace} s to stop, longer than the drain timeout of ${timeoutSeconds} s`,
        `raise drainTimeoutSeconds above ${grace}, or lower the pod's terminationGracePeriodSeconds`,
        SOURCE_GRACE,
      );
    }
  }
}

/** Pods the drain waits for until they complete (drainRules waitCompleted, or their label): the drain lasts as long as they run. */
function waitCompletedBlocks(waited: PredictionPod[], timeoutSeconds: number, emit: Emit): void {
  for (const pod of waited) {
    emit(
      pod,
      `${id(pod)} is waited for until it completes (waitCompleted), up to the drain timeout of ${timeoutSeconds} s; it is never evicted`,
      `expect the drain of ${pod.node} to last until ${id(pod)} completes; raise drainTimeoutSeconds if it runs longer`,
      SOURCE_DRAIN_RULES,
    );
  }
}

/** A failing-closed webhook whose every backend is drained in the same phase: API writes refused meanwhile. */
function webhookBlocks(webhooks: DrainPredictionFacts['webhooks'], phaseOf: Map<string, RolloutPhase>, emit: Emit): void {
  for (const w of webhooks) {
    if (w.failurePolicy !== 'Fail' || w.backends.length === 0) continue;
    const phases = new Set(w.backends.map((b) => phaseOf.get(b.node)));
    const [phase] = phases;
    if (phases.size !== 1 || phase === undefined) continue;
    for (const b of w.backends) {
      emit(
        b,
        `${id(b)} is a backend of ${w.kind} webhook ${w.name} (failurePolicy Fail${w.service ? `, Service ${id(w.service)}` : ''}), and every backend runs on a node of phase ${phase.stage}: while they are evicted, API writes the webhook matches are refused`,
        `spread the backends of ${w.name} over nodes of other phases (more replicas, anti-affinity), or set its failurePolicy to Ignore for the upgrade`,
        SOURCE_WEBHOOK,
      );
    }
  }
}

/** Every predicted drain block of one hop, sorted by phase order, node, pod. */
export function predictDrainBlocks(facts: DrainPredictionFacts): ReadinessFinding[] {
  const phaseOf = phaseIndex(facts.phases);
  const out: { order: number; f: ReadinessFinding }[] = [];
  const emit = (pod: { namespace: string; name: string; node: string }, what: string, todo: string, source: string) => {
    const phase = phaseOf.get(pod.node);
    if (!phase) return; // a node the run does not drain
    out.push({
      order: facts.phases.indexOf(phase),
      f: {
        check: 'drain-block',
        severity: 'warn',
        hop: facts.hop,
        node: pod.node,
        pod: id(pod),
        phase: phase.stage,
        what: `${what} (drain of ${pod.node} in phase ${phase.stage} of the ${facts.hop} hop)`,
        todo,
        source,
        ack: `drain-block:${id(pod)}`,
      },
    });
  };

  const live = facts.pods.filter(isLivePod);
  const options: DrainOptions = {
    ignoreDaemonSets: facts.drain.ignoreDaemonSets,
    deleteEmptyDirData: facts.drain.deleteEmptyDirData,
    force: [],
    ...(facts.drain.rules ? { rules: facts.drain.rules } : {}),
  };
  const byId = new Map(live.map((p) => [id(p), p]));
  const plan = planDrainPods(live, options);

  // What the drain's own filters refuse: bare pods, emptyDir without deleteEmptyDirData, DaemonSets without ignoreDaemonSets.
  for (const b of plan.blockers) {
    const pod = byId.get(id(b.pod));
    if (pod)
      emit(pod, b.reason, `set ${b.override} (or force the pod by name) for this run, or move the pod off ${pod.node} first`, SOURCE_DRAIN);
  }

  // Those the drain evicts: never the mirror and DaemonSet pods it skips, nor those drain rules skip or wait for.
  const ruled = new Set([...plan.skipped.filter((s) => s.filter === 'drainRule').map((s) => id(s.pod)), ...plan.waitCompleted.map(id)]);
  const evicted = live.filter(
    (p) =>
      !ruled.has(id(p)) &&
      p.annotations['kubernetes.io/config.mirror'] === undefined &&
      !p.ownerReferences.some((o) => o.controller === true && o.kind === 'DaemonSet'),
  );
  waitCompletedBlocks(
    plan.waitCompleted.flatMap((p) => byId.get(id(p)) ?? []),
    facts.drain.timeoutSeconds,
    emit,
  );
  pdbBlocks(facts.pdbs, evicted, emit);
  graceBlocks(evicted, facts.drain.timeoutSeconds, emit);
  webhookBlocks(facts.webhooks, phaseOf, emit);

  return out
    .sort((a, b) => a.order - b.order || compareNatural(a.f.node ?? '', b.f.node ?? '') || (a.f.pod ?? '').localeCompare(b.f.pod ?? ''))
    .map((o) => o.f);
}
