import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { ApplicationFailure, WorkflowFailedError } from '@temporalio/client';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import type { Activities } from '../../activities/index.js';
import { upgradeWorkflowId } from '../../contracts/workflow-ids.js';
import { checkHopPrerequisites } from '../../rules/readiness/hop-prerequisites.js';
import { clusterUpgradeWorkflow } from '../../workflows/cluster-upgrade-workflow.js';
import { fakeCluster } from '../helpers/fake-cluster.js';
import { startDevServer } from '../helpers/temporal-env.js';
import { withMockedWorker } from '../helpers/workers.js';

/**
 * The etcd patch step in the upgrade's runbook (issue 35), with mocked activities: the order
 * (snapshot → members one by one, followers first and the leader last → etcd's health between →
 * the hop), that it runs only with fixPrerequisites and only before the hop that brings etcd 3.6,
 * and that an unhealthy etcd stops it. The activities themselves run against the simulated world
 * (test/e2e/etcd-fix.test.ts, on the per-node world's real members).
 */

type Acts = Partial<Activities>;
const CPS = ['cp1', 'cp2', 'cp3'];

/** A 3-control-plane cluster at 1.32.4 whose etcd members run 3.5.24-0, cp1 leading; `unhealthyAfter` never comes back. */
function etcdCluster(options: { unhealthyAfter?: string } = {}) {
  const c = fakeCluster({ controlPlanes: 3 });
  const tags: Record<string, string> = Object.fromEntries(CPS.map((n) => [n, '3.5.24-0']));
  const findings = checkHopPrerequisites(['1.33.7', '1.34.2'], {
    nodes: CPS.map((name) => ({ name, role: 'control-plane' as const, etcdImageTag: '3.5.24-0' })),
    now: '2026-12-02T08:00:00Z',
    runSeconds: 60,
  });
  const acts: Acts = {
    ...c.acts,
    readinessReport: (async (i: { cluster: string }) => (
      c.calls.push(['readinessReport', i]),
      { cluster: i.cluster, findings, problems: [], looked: {} }
    )) as unknown as Activities['readinessReport'],
    readEtcdMembers: (async (i: { node: string; controlPlanes: string[] }) => {
      c.calls.push(['readEtcdMembers', i]);
      return {
        members: i.controlPlanes.map((n) => ({ node: n, name: n, imageTag: tags[n], leader: n === 'cp1' })),
        health: { healthy: true, leader: 'cp1', versions: {}, problems: [] },
        others: [],
        target: '3.5.26-0',
      };
    }) as unknown as Activities['readEtcdMembers'],
    patchEtcdMember: (async (i: { node: string; tag: string }) => {
      c.calls.push(['patchEtcdMember', i]);
      const from = tags[i.node];
      tags[i.node] = i.tag;
      return { node: i.node, from, to: i.tag, image: `registry.k8s.io/etcd:${i.tag}`, changed: true };
    }) as unknown as Activities['patchEtcdMember'],
    checkEtcdHealth: (async (i: { node: string; expect?: { member: string; version: string } }) => {
      c.calls.push(['checkEtcdHealth', i]);
      if (i.expect && (i.expect.member === options.unhealthyAfter || tags[i.expect.member] !== i.expect.version))
        throw ApplicationFailure.create({ type: 'Unhealthy', nonRetryable: true, message: `member ${i.expect.member} does not answer` });
      return { node: i.node, leader: 'cp1', versions: tags };
    }) as unknown as Activities['checkEtcdHealth'],
  };
  return { ...c, tags, acts };
}

/** The calls as `name detail`, from the first of the step's to the 1.34 hop's apply. */
const trail = (calls: [string, Record<string, unknown>][]) =>
  calls
    .filter(([n]) => ['readEtcdMembers', 'snapshotEtcd', 'patchEtcdMember', 'checkEtcdHealth', 'kubeadmUpgradeApply'].includes(n))
    .map(([n, i]) =>
      n === 'snapshotEtcd'
        ? `snapshot ${i.hop as string}`
        : n === 'patchEtcdMember'
          ? `patch ${i.node as string} ${i.tag as string}`
          : n === 'checkEtcdHealth'
            ? `health${i.expect ? ` ${(i.expect as { member: string }).member}` : ''}`
            : n === 'kubeadmUpgradeApply'
              ? `apply ${i.version as string}`
              : 'read members',
    );

describe('workflow: the etcd patch step before the hop that brings etcd 3.6 (mocked activities)', () => {
  let env: TestWorkflowEnvironment;
  before(async () => {
    env = await startDevServer();
  });
  after(async () => {
    await env?.teardown();
  });
  const run = (acts: Acts, name: string, policy: Record<string, unknown>) =>
    withMockedWorker(env, acts, 'etcd-patch', async (taskQueue) => {
      const h = await env.client.workflow.start(clusterUpgradeWorkflow, {
        taskQueue,
        workflowId: upgradeWorkflowId(`${name}-${taskQueue}`),
        args: [{ cluster: 'lab', to: '1.34', policy: { verifySeconds: 1, ...policy } }],
      });
      return h.result();
    });

  it('without --fix-prerequisites the hold refuses the start, as before: nothing is patched', async () => {
    const c = etcdCluster();
    await assert.rejects(run(c.acts, 'nofix', {}), (err: unknown) => {
      assert.ok(err instanceof WorkflowFailedError);
      assert.match(String(err.cause?.message), /acknowledge with --acknowledge etcd-version:cp1/);
      return true;
    });
    assert.deepEqual(trail(c.calls), []);
  });

  it('with it: snapshot, then cp2, cp3 and the leader cp1, each checked, then the 1.34 hop; nothing acknowledged', async () => {
    const c = etcdCluster();
    const status = await run(c.acts, 'fix', { fixPrerequisites: true });
    assert.equal(status.phase, 'done');
    assert.deepEqual(trail(c.calls), [
      'snapshot 1.33.7',
      'apply 1.33.7',
      'read members',
      'health',
      'snapshot 1.34.2-before-etcd-3.5.26-0',
      'patch cp2 3.5.26-0',
      'health cp2',
      'patch cp3 3.5.26-0',
      'health cp3',
      'patch cp1 3.5.26-0',
      'health cp1',
      'snapshot 1.34.2',
      'apply 1.34.2',
    ]);
    assert.ok(
      status.events.some((e) => e.startsWith('readiness: etcd-version:cp1 fixed by the runbook before 1.34')),
      status.events.join('\n'),
    );
    assert.ok(!status.events.some((e) => e.includes('acknowledged')), status.events.join('\n'));
    assert.deepEqual(
      status.snapshots.map((s) => s.hop),
      ['1.33.7', '1.34.2-before-etcd-3.5.26-0', '1.34.2'],
    );
  });

  it('an etcd that is not whole after a member stops the step: no next member, no hop', async () => {
    const c = etcdCluster({ unhealthyAfter: 'cp2' });
    await assert.rejects(run(c.acts, 'sick', { fixPrerequisites: true }), WorkflowFailedError);
    const t = trail(c.calls);
    assert.deepEqual(t.slice(t.indexOf('read members')), [
      'read members',
      'health',
      'snapshot 1.34.2-before-etcd-3.5.26-0',
      'patch cp2 3.5.26-0',
      'health cp2',
    ]);
    assert.equal(c.tags.cp3, '3.5.24-0');
  });
});
