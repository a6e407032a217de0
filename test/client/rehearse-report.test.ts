import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { defaultPayloadConverter } from '@temporalio/common';
import type { RehearsalOutcome } from '../../client/rehearse/auto-operator.js';
import { blocksOf, finalVersions, reportText, skewOfHistory, type RehearsalReport } from '../../client/rehearse/report.js';
import { twinTimings } from '../../client/rehearse/timings.js';
import { clusterPlacement, placementNote, type TwinBlock } from '../../client/rehearse/twin-placement.js';
import type { VersionRecord } from '../../sim/cluster/version-recorder.js';
import type { UpgradeStatus } from '../../workflows/rollout-messages.js';

const names = {
  nodes: { 'ip-1': 'ip-1.internal', 'ip-2': 'ip-2.internal' },
  pdbs: { 'shop/web': 'shop/web-budget' },
  workloads: { 'default/debug-v2': 'default/debug.v2', 'shop/web': 'shop/web', 'shop/web-api': 'shop/web.api' },
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
          pods: ['shop/web-7f9c-abcde', 'shop/web-api-5d4-xyz', 'shop/other-1'],
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
      {
        node: 'ip-2.internal',
        hop: '1.34.2',
        pdbs: ['shop/web-budget'],
        // The twin's own pods, named by the cluster's workload that owns them (the longest name that fits).
        pods: [
          "a pod of shop/web (the twin's web-7f9c-abcde)",
          "a pod of shop/web.api (the twin's web-api-5d4-xyz)",
          "shop/other-1 (the twin's)",
        ],
        message: 'm',
        action: 'skip',
      },
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

  it("maps a drain blocked on the twin back to the cluster's nodes by the owning workload, not by the twin's placement", () => {
    // The twin put web's copies on ip-2; on the cluster web runs on ip-1 only (as read from the cluster).
    const placed = { ...names, clusterNodes: { 'shop/web': ['ip-1.internal'], 'shop/web-api': [] } };
    const block = (pods: string[]) =>
      ({
        blocks: [{ node: 'ip-2', kind: 'DrainBlocked', message: 'm', pods, pdbs: ['shop/web'], action: 'skip', at: '', hop: '1.34.2' }],
      }) as unknown as RehearsalOutcome;
    const [web] = blocksOf(block(['shop/web-7f9c-abcde']), placed).blockedDrains;
    assert.equal(web?.node, 'ip-2.internal', "the twin's node, as the heading says");
    assert.deepEqual(web?.clusterNodes, ['ip-1.internal']);
    assert.deepEqual(web?.clusterNodesByPdb, { 'shop/web-budget': ['ip-1.internal'] }, "by the budget's workload, in the cluster's names");
    assert.deepEqual(blocksOf(block(['shop/web-7f9c-abcde']), placed).placement, {
      twinOnly: ['ip-2.internal'],
      clusterBlocks: [{ node: 'ip-1.internal', pdbs: ['shop/web-budget'] }],
    });
    assert.deepEqual(blocksOf(block(['shop/web-api-5d4-xyz']), placed).blockedDrains[0]?.clusterNodes, [], 'no pod of it on the cluster');
    // Older readings carry no placement: nothing is claimed about the cluster.
    assert.equal(blocksOf(block(['shop/web-7f9c-abcde']), names).blockedDrains[0]?.clusterNodes, undefined);
    assert.equal(blocksOf(block(['shop/web-7f9c-abcde']), names).placement, undefined);
  });

  it("tells the twin's placement from the cluster's by owner: blocks the twin's alone, and where the cluster's drains block", () => {
    // The cluster runs web on w-1 only; the twin put its copies on w-2 and w-3, and db's on w-3 as the cluster does.
    // The cluster runs web on w-1 and db on w-1 and w-3; the twin put web's copies on w-2 and w-3, and db's on w-3.
    const blocks: TwinBlock[] = [
      { node: 'w-2', clusterNodesByPdb: { 'shop/web': ['w-1'] } },
      { node: 'w-3', clusterNodesByPdb: { 'shop/web': ['w-1'], 'shop/db': ['w-1', 'w-3'] } },
    ];
    const placement = clusterPlacement(blocks);
    assert.deepEqual(placement, {
      twinOnly: ['w-2'],
      clusterBlocks: [
        { node: 'w-1', pdbs: ['shop/db', 'shop/web'] },
        { node: 'w-3', pdbs: ['shop/db'] },
      ],
    });
    assert.equal(placementNote('w-2', placement, blocks), "blocked on the twin's placement only");
    assert.equal(placementNote('w-1', placement, blocks), 'on the cluster its drain blocks on PDB shop/db, shop/web');
    // w-3 blocked on the twin on db's pod, as on the cluster (web's copy there is the twin's, but db blocks it anyway).
    assert.equal(placementNote('w-3', placement, blocks), undefined);
    assert.equal(placementNote('w-4', placement, blocks), undefined, 'a node neither blocks: nothing to say');
    // No pod of the workload on the cluster: every block of it is the twin's alone, and no cluster drain blocks.
    assert.deepEqual(clusterPlacement([{ node: 'w-2', clusterNodesByPdb: { 'shop/web': [] } }]), { twinOnly: ['w-2'], clusterBlocks: [] });
    // Facts without placement (an older reading), or no block at all: nothing is claimed about the cluster.
    assert.equal(clusterPlacement([{ node: 'w-2' }]), undefined);
    assert.equal(clusterPlacement([]), undefined);
    assert.equal(placementNote('w-2', undefined, []), undefined);
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
    assert.match(
      text,
      /\nDrains that blocked on the twin \(its scheduler placed the pods: on the cluster, the readiness section's drain-block lines say which drains block\):\n/,
    );
    assert.match(text, /\nSkew policy: every one of the 4 version states the twin went through complies/);
    assert.match(text, /\nNot modelled by the twin:\n {2}x$/);
    // The live cluster's readiness, as plan --cluster shows it.
    assert.match(text, /\nreadiness \(c\): 1 finding; the upgrade would hold/);
    assert.match(text, /\n {2}HOLD removed-api before 1\.34: resource\.k8s\.io\/v1alpha3\/deviceclasses requested 2 times/);
    // A block mapped back by owner says where the cluster runs the workload's pods.
    const withPlacement = (clusterNodes?: string[]) =>
      reportText({
        ...r,
        blockedDrains: [
          {
            node: 'ip-2.internal',
            hop: '1.34.2',
            pdbs: ['shop/web-budget'],
            pods: ['p'],
            ...(clusterNodes ? { clusterNodes } : {}),
            message: 'm',
            action: 'skip',
          },
        ],
      });
    assert.match(
      withPlacement(['ip-1.internal']),
      /\n {2}ip-2\.internal \(1\.34\.2\): PDB shop\/web-budget refused evicting p; on the cluster its pods run on ip-1\.internal; the rehearsal answered skip/,
    );
    assert.match(withPlacement([]), /refused evicting p; on the cluster none of its pods runs; the rehearsal answered skip/);
    // The twin's node lists name its placement as such, and the cluster's drains come from the cluster's pods.
    const twinPlaced = reportText({
      ...r,
      phases: [{ hop: '1.34.2', phase: 'canary', seconds: 10.5, nodes: ['w-1', 'w-2'] }],
      nodes: [
        { node: 'w-1', hop: '1.34.2', seconds: 1, steps: [{ step: 'drain, kubelet, uncordon', seconds: 1, outcome: 'done' }] },
        { node: 'w-2', hop: '1.34.2', seconds: 10, steps: [{ step: 'drain, kubelet, uncordon', seconds: 10, outcome: 'skipped' }] },
      ],
      blockedDrains: [
        {
          node: 'w-2',
          hop: '1.34.2',
          pdbs: ['shop/web-budget'],
          pods: ['p'],
          clusterNodes: ['w-1'],
          clusterNodesByPdb: { 'shop/web-budget': ['w-1'] },
          message: 'm',
          action: 'skip',
        },
      ],
      placement: { twinOnly: ['w-2'], clusterBlocks: [{ node: 'w-1', pdbs: ['shop/web-budget'] }] },
    });
    assert.match(
      twinPlaced,
      /\n {2}1\.34\.2 +canary +10\.5 s {2}w-1 \(on the cluster its drain blocks on PDB shop\/web-budget\), w-2 \(blocked on the twin's placement only\)\n/,
    );
    assert.match(twinPlaced, /\nNodes \(on the twin\):\n/);
    assert.match(
      twinPlaced,
      /\nDrains that blocked on the twin \(its scheduler placed the pods; mapped to the cluster by the workload each budget covers\):\n/,
    );
    assert.match(
      twinPlaced,
      /\n {2}1\.34\.2 +w-2 +10\.0 s {2}drain, kubelet, uncordon 10\.0 s \(skipped\); blocked on the twin's placement only\n/,
    );
    assert.match(
      twinPlaced,
      /\n {2}1\.34\.2 +w-1 +1\.0 s {2}drain, kubelet, uncordon 1\.0 s; on the cluster its drain blocks on PDB shop\/web-budget\n/,
    );
    assert.match(
      twinPlaced,
      /\n {2}w-2 \(1\.34\.2, the twin's placement only\): PDB shop\/web-budget refused evicting p; on the cluster its pods run on w-1;/,
    );
    assert.match(
      twinPlaced,
      /\nOn the cluster \(its pods as read, not the twin's placement\) these drains block: w-1 \(PDB shop\/web-budget\)\n/,
    );
    assert.doesNotMatch(reportText(r), /On the cluster|placement only/, 'without placement facts nothing is said of the cluster');
    assert.match(withPlacement(), /refused evicting p; the rehearsal answered skip/);
    assert.match(reportText({ ...r, readiness: { notChecked: 'plan of c failed: x' } }), /\nreadiness: not checked: plan of c failed: x\n/);
  });
});
