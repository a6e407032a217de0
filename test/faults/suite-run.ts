import type { TestContext } from 'node:test';
import { runFaultHarness, type FaultRunReport } from './harness.js';

/**
 * What the suite's short fault runs share: the small shared-world lab (3 + 3 nodes, two hops, no
 * StatefulSet, whose 2-minute PDB hold after an eviction would dominate the time; pods that take 2 s to
 * go, so a drain lasts long enough for a kill aimed at it to land inside) and a run whose log
 * is kept for the failure message while the kills' lines go to the test's output as evidence.
 */
export function suiteLab(name: string, kubeadmApplyMs: number): string {
  return `
name: ${name}
version: 1.32.4
repository: [1.32.4, 1.33.0, 1.33.7, 1.34.0, 1.34.2]
rebootSeconds: 1
terminationGraceSeconds: 2
latencies: {aptInstall: 1500, kubeletRestart: 1500, kubeadmApply: ${kubeadmApplyMs}, kubeadmNode: 1000}
nodes:
  - {name: cp, role: control-plane, count: 3}
  - {name: worker, role: worker, count: 3}
workloads:
  - {kind: Deployment, name: web, replicas: 4, pdb: {minAvailable: 3}}
  - {kind: Deployment, name: api, replicas: 3, pdb: {maxUnavailable: 1}}
  - {kind: DaemonSet, name: node-exporter, namespace: monitoring}
`;
}

/** One fault run; `shown` picks the log lines (kills, restarts) the test's output carries. */
export async function runInSuite(
  t: TestContext,
  options: Omit<Parameters<typeof runFaultHarness>[0], 'log'>,
  shown: RegExp,
): Promise<{ report: FaultRunReport; trace: string }> {
  const lines: string[] = [];
  const report = await runFaultHarness({ ...options, log: (line) => lines.push(line) });
  for (const line of lines.filter((l) => shown.test(l))) t.diagnostic(line.replace('[faults] ', ''));
  t.diagnostic(
    `${report.hangups.length} host commands lost their client; ${report.replayed} histories replayed; ` +
      `upgrade ${(report.upgradeMs / 1000).toFixed(0)} s, run ${(report.wallMs / 1000).toFixed(0)} s`,
  );
  return { report, trace: `\n${lines.join('\n')}\nstate: ${report.stateDir}` };
}
