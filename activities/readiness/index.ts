// The readiness report of issue 21: every check that can hold a hop (removed APIs in use, hop
// prerequisites, drains predicted to block, the operator's alerts firing now; and, as warnings, a
// node's other package sources that fail to refresh), run read-only against the live
// cluster, as one activity whose findings share one shape (rules/readiness/finding.ts). A new check
// adds its collector here and its findings to the list; each check's facts stay in its own module.
import type { ReadinessFinding } from '../../rules/readiness/finding.js';
import { removedApiFindingsForHops } from '../../rules/readiness/removed-apis.js';
import type { ClusterResolver } from '../cluster-access.js';
import { cancellationSignal } from '../health-poll.js';
import { invalid, shown } from '../host-commands.js';
import type { RolloutPolicy, WorkerHops } from '../../rules/index.js';
import { findDrainBlocks } from './drain-predictions.js';
import { findHopPrerequisites } from './hop-prerequisites.js';
import { collectRemovedApiUsage } from './removed-api-usage.js';
import { alertFindings } from '../../rules/readiness/operator-signals.js';
import { firingAlerts } from '../alerts.js';
import type { AlertsConfig } from '../cluster-config.js';
import { probeTarget } from '../health-probes.js';
import { findOtherSourceFailures } from './other-sources.js';
import { readReversibilityFacts } from './reversibility-facts.js';
import type { ReversibilityFacts } from '../../rules/index.js';

const DAY_SECONDS = 86_400;

export interface ReadinessInput {
  cluster: string;
  /** The cluster's version now (`1.32.13`): the first hop starts there. */
  from: string;
  /** Each hop's target, in order (`1.33.7`, `1.34.4`, or minors `1.33`). */
  hops: string[];
  /** The rollout's policy, so the drains predicted to block are named with the phases the upgrade will have. */
  policy?: RolloutPolicy;
  /** The hops each worker moves at (the plan's `workerHops`; absent: every hop), so a drain is named at the hop that makes it. */
  workerHops?: WorkerHops;
  drainTimeoutSeconds?: number;
  /** How long the run may take (certificates must outlive it); default a day per hop. */
  runSeconds?: number;
}

export interface ReadinessReport {
  cluster: string;
  findings: ReadinessFinding[];
  /** What a check could not read, one line each: the report is incomplete there. */
  problems: string[];
  /** What each check looked at, for the operator (counts and places, never contents). */
  looked: { removedApis: { metricsScrapes: number; auditLogsRead: string[]; deprecatedSeries: number; crdsStoredNotServed: number } };
  /**
   * The alert gate's Prometheus (the cluster configuration's `alerts:`), when there is one: where
   * (scheme, host and path), and why it could not be asked (the upgrade refuses to start then).
   */
  alerts?: { prometheus: string; firing: number; unreachable?: string };
  /** What a reversible hop's verdict reads (issue 36): the oldest etcd, the alpha gates the control planes turn on. */
  reversibility?: ReversibilityFacts;
}

/** The alerts firing now, as findings of the first hop; an unreachable Prometheus is said, not thrown. */
async function readAlerts(config: AlertsConfig | undefined, hop: string) {
  if (!config) return undefined;
  const prometheus = probeTarget(config.prometheusUrl);
  try {
    const { firing } = await firingAlerts(config);
    return { findings: alertFindings(firing, hop), looked: { prometheus, firing: firing.length } };
  } catch (err) {
    const unreachable = (err as Error).message;
    return { findings: [], looked: { prometheus, firing: 0, unreachable } };
  }
}

const VERSION = /^v?\d+\.\d+(\.\d+)?$/;

export function createReadinessActivities({ clusters }: { clusters: ClusterResolver }) {
  return {
    /** Everything that would hold each hop of `from` → `hops`, read-only. */
    async readinessReport(input: ReadinessInput): Promise<ReadinessReport> {
      if (!VERSION.test(String(input.from))) throw invalid(`readinessReport: from must be a version, not ${shown(input.from)}`);
      if (!Array.isArray(input.hops) || !input.hops.every((h) => VERSION.test(String(h))))
        throw invalid('readinessReport: hops must be a list of versions');
      const access = clusters(input.cluster);
      const signal = cancellationSignal();
      const runSeconds = input.runSeconds ?? DAY_SECONDS * Math.max(1, input.hops.length);
      const [usage, prerequisites, drains, alerts, otherSources, reversibility] = await Promise.all([
        collectRemovedApiUsage(access, signal),
        input.hops.length ? findHopPrerequisites(access, { cluster: input.cluster, hops: input.hops, runSeconds }) : undefined,
        input.hops.length
          ? findDrainBlocks(access, {
              cluster: input.cluster,
              hop: input.hops[0] as string,
              hops: input.hops,
              ...(input.workerHops ? { workerHops: input.workerHops } : {}),
              ...(input.policy ? { policy: input.policy } : {}),
              ...(input.drainTimeoutSeconds ? { drainTimeoutSeconds: input.drainTimeoutSeconds } : {}),
            })
          : undefined,
        readAlerts(access.config.alerts, input.hops[0] ?? input.from),
        input.hops.length ? findOtherSourceFailures(access, input.hops[0] as string, signal) : undefined,
        // Unreadable, the verdict goes without these facts (as before they were read) and the report says so.
        readReversibilityFacts(access, input.from).catch((err: Error) => err),
      ]);
      const findings = [
        ...removedApiFindingsForHops(input.from, input.hops, usage),
        ...(prerequisites?.findings ?? []),
        ...(drains?.findings ?? []),
        ...(alerts?.findings ?? []),
        ...(otherSources?.findings ?? []),
      ];
      return {
        cluster: input.cluster,
        findings,
        problems: [
          ...usage.problems,
          ...(drains?.problems ?? []),
          ...(otherSources?.problems ?? []),
          ...(alerts?.looked.unreachable ? [`alerts: ${alerts.looked.unreachable}`] : []),
          ...(reversibility instanceof Error ? [`reversibility facts: ${reversibility.message}`] : []),
        ],
        looked: {
          removedApis: {
            metricsScrapes: usage.metricsScrapes,
            auditLogsRead: usage.auditLogsRead,
            deprecatedSeries: usage.requested.length,
            crdsStoredNotServed: usage.storedNotServed.length,
          },
        },
        ...(alerts ? { alerts: alerts.looked } : {}),
        ...(reversibility instanceof Error ? {} : { reversibility }),
      };
    },
  };
}
