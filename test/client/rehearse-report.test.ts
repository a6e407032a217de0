import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { defaultPayloadConverter } from '@temporalio/common';
import type { RehearsalOutcome } from '../../client/rehearse/auto-operator.js';
import { blocksOf, finalVersions, reportText, skewOfHistory, type RehearsalReport } from '../../client/rehearse/report.js';
import { twinTimings } from '../../client/rehearse/timings.js';
import type { VersionRecord } from '../../sim/cluster/version-recorder.js';
import type { UpgradeStatus } from '../../workflows/upgrade-messages.js';

const names = {
  nodes: { 'ip-1': 'ip-1.internal', 'ip-2': 'ip-2.internal' },
  pdbs: { 'shop/web': 'shop/web-budget' },
  workloads: { 'default/debug-v2': 'default/debug.v2' },
};
const name = (twin: string) => names.nodes[twin as keyof typeof names.nodes] ?? twin;
const record = (cause: string, apiserver: string, kubelet: string, error?: string): VersionRecord => ({
  at: '2026-11-30T06:00:00.000Z',
  cause,
  inventory: {
    apiservers: [{ node: 'ip-1', version: apiserver }],
    kubelets: [
      { node: 'ip-1', version: apiserver },
      { node: 'ip-2', version: kubelet },
    ],
  },
  ...(error ? { error } : {}),
});

describe('rehearse report (pure): skew over every recorded state, names mapped back, timings from history', () => {
  it("judges every recorded state and names a violation with the cluster's node names; unreadable states are counted, not judged", () => {
    const ok = skewOfHistory([record('initial', '1.33.7', '1.33.7'), record('control-plane ip-1 1.34.2', '1.34.2', '1.33.7')], name);
    assert.deepEqual(ok, { statesChecked: 2, unreadable: 0, compliant: true, violations: [] });
    const bad = skewOfHistory(
      [record('initial', '1.33.7', '1.33.7'), record('kubelet ip-2 1.34.2', '1.33.7', '1.34.2'), record('x', '1', '1', 'apiserver down')],
      name,
    );
    assert.equal(bad.compliant, false);
    assert.equal(bad.unreadable, 1);
    assert.equal(bad.statesChecked, 2);
    assert.equal(bad.violations.length, 1);
    assert.equal(bad.violations[0]?.node, 'ip-2.internal');
    assert.equal(bad.violations[0]?.cause, 'kubelet ip-2.internal 1.34.2');
    assert.match(bad.violations[0]?.rule ?? '', /newer/);
    assert.equal(skewOfHistory([], name).compliant, false, 'no state judged is no verdict of compliance');
  });

  it("maps blocks and final versions back to the cluster's names", () => {
    const outcome = {
      blocks: [
        {
          node: 'ip-2',
          kind: 'DrainBlocked',
          message: 'm',
          pods: ['shop/web-1'],
          pdbs: ['shop/web'],
          action: 'skip',
          at: '',
          hop: '1.34.2',
        },
        { node: 'ip-1', kind: 'DrainRefused', message: 'm', pods: ['default/debug-v2'], pdbs: [], action: 'skip', at: '' },
      ],
    } as unknown as RehearsalOutcome;
    const b = blocksOf(outcome, names);
    assert.deepEqual(b.blockedDrains, [
      { node: 'ip-2.internal', hop: '1.34.2', pdbs: ['shop/web-budget'], pods: ['shop/web-1'], message: 'm', action: 'skip' },
    ]);
    assert.deepEqual(b.refusedNodes, [{ node: 'ip-1.internal', pods: ['default/debug.v2'], message: 'm', action: 'skip' }]);
    assert.deepEqual(
      finalVersions(
        {
          apiservers: [{ node: 'ip-1', version: '1.34.2' }],
          kubelets: [
            { node: 'ip-2', version: '1.33.7' },
            { node: 'ip-1', version: '1.34.2' },
          ],
        },
        name,
      ),
      [
        { node: 'ip-1.internal', kubelet: '1.34.2', apiserver: '1.34.2' },
        { node: 'ip-2.internal', kubelet: '1.33.7' },
      ],
    );
  });

  it("times phases and nodes from the parent's history: activities by hop, children by stage", () => {
    let id = 0;
    const at = (s: number) => ({ seconds: String(1_000 + s), nanos: 0 });
    const payload = (v: unknown) => ({ payloads: [defaultPayloadConverter.toPayload(v)] });
    const events: Record<string, unknown>[] = [];
    const activity = (name: string, input: unknown, from: number, to: number) => {
      const scheduled = ++id;
      events.push({
        eventId: String(scheduled),
        eventTime: at(from),
        activityTaskScheduledEventAttributes: { activityType: { name }, input: payload(input) },
      });
      events.push({
        eventId: String(++id),
        eventTime: at(to),
        activityTaskCompletedEventAttributes: { scheduledEventId: String(scheduled) },
      });
    };
    const child = (node: string, step: string, from: number, to: number, outcome = 'done') => {
      const initiated = ++id;
      events.push({
        eventId: String(initiated),
        eventTime: at(from),
        startChildWorkflowExecutionInitiatedEventAttributes: {
          workflowId: `upgrade/c/1.34.2/${node}`,
          input: payload({ node, step, version: '1.34.2' }),
        },
      });
      events.push({
        eventId: String(++id),
        eventTime: at(from),
        childWorkflowExecutionStartedEventAttributes: { initiatedEventId: String(initiated) },
      });
      events.push({
        eventId: String(++id),
        eventTime: at(to),
        childWorkflowExecutionCompletedEventAttributes: { initiatedEventId: String(initiated), result: payload({ outcome }) },
      });
    };
    activity('snapshotEtcd', { hop: '1.34.2' }, 0, 2);
    activity('installPackages', { version: '1.34.2' }, 2, 5);
    activity('kubeadmUpgradePlan', { version: '1.34.2' }, 5, 6);
    child('cp-1', 'control-plane', 6, 16);
    child('cp-1', 'node', 16, 20);
    child('w-1', 'node', 20, 30, 'skipped');
    child('w-2', 'node', 30, 35);
    child('w-3', 'node', 31, 40);
    const status = {
      hops: ['1.34.2'],
      nodes: { 'cp-1': { stage: 'control-plane' }, 'w-1': { stage: 'canary' }, 'w-2': { stage: 'batch-1' }, 'w-3': { stage: 'batch-1' } },
    } as unknown as UpgradeStatus;
    const t = twinTimings(events as never, status);
    assert.deepEqual(
      t.phases.map((p) => [p.phase, p.seconds, p.nodes]),
      [
        ['backup', 2, []],
        ['kubeadm-plan', 4, []],
        ['control-plane', 14, ['cp-1']],
        ['canary', 10, ['w-1']],
        ['batch-1', 10, ['w-2', 'w-3']],
      ],
    );
    assert.deepEqual(
      t.nodes.find((n) => n.node === 'cp-1'),
      {
        node: 'cp-1',
        hop: '1.34.2',
        seconds: 14,
        steps: [
          { step: 'control-plane components', seconds: 10, outcome: 'done' },
          { step: 'drain, kubelet, uncordon', seconds: 4, outcome: 'done' },
        ],
      },
    );
    assert.equal(t.nodes.find((n) => n.node === 'w-1')?.steps[0]?.outcome, 'skipped');
  });

  it('says in text what blocked, on which PDB, and the skew verdict', () => {
    const r: RehearsalReport = {
      cluster: 'c',
      target: '1.34.2',
      from: '1.33.7',
      hops: ['1.34.2'],
      outcome: 'partial',
      preflight: ['PodDisruptionBudget shop/web-budget: no eviction'],
      readiness: {
        findings: [
          {
            check: 'removed-api',
            severity: 'hold',
            hop: '1.34',
            what: 'resource.k8s.io/v1alpha3/deviceclasses requested 2 times, removed in 1.34',
            todo: 'move the clients to resource.k8s.io/v1beta1',
            source: 'https://kubernetes.io/docs/reference/using-api/deprecation-guide/',
            ack: 'removed-api:resource.k8s.io/v1alpha3/deviceclasses',
          },
        ],
        held: ['removed-api:resource.k8s.io/v1alpha3/deviceclasses'],
        acknowledged: [],
        problems: [],
        checked: true,
      },
      phases: [{ hop: '1.34.2', phase: 'canary', seconds: 10.5, nodes: ['w-1'] }],
      nodes: [],
      blockedDrains: [{ node: 'w-1', hop: '1.34.2', pdbs: ['shop/web-budget'], pods: ['shop/web-1'], message: 'm', action: 'skip' }],
      refusedNodes: [],
      otherBlocks: [],
      skew: { statesChecked: 4, unreadable: 0, compliant: true, violations: [] },
      finalVersions: [{ node: 'w-1', kubelet: '1.33.7' }],
      twin: { nodes: 2, workloads: 1, drainTimeoutSeconds: 60, latenciesMs: { aptInstall: 1 }, notModelled: ['x'] },
      seconds: 42,
    };
    const text = reportText(r);
    assert.match(text, /^Rehearsal of c: 1\.33\.7 → 1\.34\.2: the twin upgraded, with nodes left behind in 42\.0 s/);
    assert.match(text, /\n {2}w-1 \(1\.34\.2\): PDB shop\/web-budget refused evicting shop\/web-1; the rehearsal answered skip/);
    assert.match(text, /\nSkew policy: every one of the 4 version states the twin went through complies/);
    assert.match(text, /\nNot modelled by the twin:\n {2}x$/);
    // The live cluster's readiness, as plan --cluster shows it.
    assert.match(text, /\nreadiness \(c\): 1 finding; the upgrade would hold/);
    assert.match(text, /\n {2}HOLD removed-api before 1\.34: resource\.k8s\.io\/v1alpha3\/deviceclasses requested 2 times/);
    assert.match(reportText({ ...r, readiness: { notChecked: 'plan of c failed: x' } }), /\nreadiness: not checked: plan of c failed: x\n/);
  });
});
