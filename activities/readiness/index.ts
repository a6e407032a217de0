// The readiness report of issue 21: every check that can hold a hop, run read-only against the live
// cluster, as one activity whose findings share one shape (rules/readiness/finding.ts). A new check
// adds its collector here and its findings to the list; each check's facts stay in its own module.
import type { ReadinessFinding } from '../../rules/readiness/finding.js';
import { removedApiFindingsForHops } from '../../rules/readiness/removed-apis.js';
import type { ClusterResolver } from '../cluster-access.js';
import { cancellationSignal } from '../health-poll.js';
import { invalid, shown } from '../host-commands.js';
import { collectRemovedApiUsage } from './removed-api-usage.js';

export interface ReadinessInput {
  cluster: string;
  /** The cluster's version now (`1.32.13`): the first hop starts there. */
  from: string;
  /** Each hop's target, in order (`1.33.7`, `1.34.4`, or minors `1.33`). */
  hops: string[];
}

export interface ReadinessReport {
  cluster: string;
  findings: ReadinessFinding[];
  /** What a check could not read, one line each: the report is incomplete there. */
  problems: string[];
  /** What each check looked at, for the operator (counts and places, never contents). */
  looked: { removedApis: { metricsScrapes: number; auditLogsRead: string[]; deprecatedSeries: number; crdsStoredNotServed: number } };
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
      const usage = await collectRemovedApiUsage(access, signal);
      const findings = [...removedApiFindingsForHops(input.from, input.hops, usage)];
      return {
        cluster: input.cluster,
        findings,
        problems: [...usage.problems],
        looked: {
          removedApis: {
            metricsScrapes: usage.metricsScrapes,
            auditLogsRead: usage.auditLogsRead,
            deprecatedSeries: usage.requested.length,
            crdsStoredNotServed: usage.storedNotServed.length,
          },
        },
      };
    },
  };
}
