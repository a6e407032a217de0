import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { ApplicationFailure, WorkflowFailedError } from '@temporalio/client';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import type { Activities } from '../../activities/index.js';
import { upgradeWorkflowId } from '../../contracts/workflow-ids.js';
import { clusterUpgradeWorkflow } from '../../workflows/cluster-upgrade-workflow.js';
import { abortSignal, approveUpdate, rollbackTrialUpdate, statusQuery, type UpgradeStatus } from '../../workflows/rollout-messages.js';
import { fakeCluster } from '../helpers/fake-cluster.js';
import { startDevServer } from '../helpers/temporal-env.js';
import { withMockedWorker } from '../helpers/workers.js';

/**
 * The reversible hop's workflow logic (issue 36, workflows/reversible-hop.ts) on mocked activities:
 * the trial on every control plane, the gate commit-<hop>, then the commit in the hop's order or the
 * rollback in reverse with kubeadm downgraded and the holds put back. The real programs run in
 * test/e2e/readiness-plan.test.ts and test/activities/control-plane-trial.test.ts.
 */
/** The control planes' host steps the fake recorded, in order (the checks aside). */
const hostSteps = (c: ReturnType<typeof fakeCluster>) =>
  c.calls
    .filter(([n]) => /Control|downgrade|restorePackageHolds|trial/i.test(n) && n !== 'checkControlPlane')
    .map(([n, i]) => `${n} ${String(i.node)} ${String(i.version ?? '')}`);
/** Both control planes in trial, then rolled back last first: kubeadm's manifests, the package, the holds. */
const TRIALS_ROLLED_BACK = [
  'trialControlPlane cp1 1.33.7',
  'trialControlPlane cp2 1.33.7',
  'rollbackControlPlane cp2 1.32.4',
  'downgradePackages cp2 1.32.4',
  'restorePackageHolds cp2 ',
  'rollbackControlPlane cp1 1.32.4',
  'downgradePackages cp1 1.32.4',
  'restorePackageHolds cp1 ',
];

describe('workflow: a reversible hop (mocked activities)', () => {
  let env: TestWorkflowEnvironment;
  before(async () => {
    env = await startDevServer();
  });
  after(async () => {
    await env?.teardown();
  });

  /** A two-control-plane fake whose trial, rollback and commit move its apiservers as the real ones would. */
  const world = (versions?: Record<string, string>, failTrialOn?: string) => {
    const c = fakeCluster({ controlPlanes: 2, ...(versions ? { versions } : {}) });
    const rec = (name: string, i: Record<string, unknown>) => c.calls.push([name, i]);
    const acts: Partial<Activities> = {
      ...c.acts,
      checkApiserver: (async (i: Record<string, unknown>) => (rec('checkApiserver', i), {})) as unknown as Activities['checkApiserver'],
      trialControlPlane: (async (i: { node: string; version: string }) => {
        rec('trialControlPlane', i);
        if (i.node === failTrialOn)
          throw ApplicationFailure.nonRetryable('kubeadm upgrade apply exited 1: etcd unhealthy', 'HostCommandFailed');
        c.state.apiserver[i.node] = i.version;
        return {};
      }) as unknown as Activities['trialControlPlane'],
      rollbackControlPlane: (async (i: { node: string; version: string }) => (
        rec('rollbackControlPlane', i),
        (c.state.apiserver[i.node] = i.version),
        { node: i.node, version: i.version, ran: true, restored: ['kube-scheduler'], backup: '/etc/kubernetes/tmp/b' }
      )) as unknown as Activities['rollbackControlPlane'],
      commitControlPlane: (async (i: Record<string, unknown>) => (
        rec('commitControlPlane', i),
        {}
      )) as unknown as Activities['commitControlPlane'],
      downgradePackages: (async (i: Record<string, unknown>) => (
        rec('downgradePackages', i),
        {}
      )) as unknown as Activities['downgradePackages'],
    };
    return { c, acts };
  };
  const untilTrial = async (h: { query: (q: typeof statusQuery) => Promise<UpgradeStatus> }) => {
    for (;;) {
      const s = await h.query(statusQuery);
      if (s.trial?.state === 'trial' && s.gates.some((g) => g.name === 'commit-1.33.7')) return s;
      await new Promise((r) => setTimeout(r, 200));
    }
  };
  const reversible = { reversible: { acknowledged: [] } };

  it('rollback: every control plane back in reverse, its repository, kubeadm and holds at 1.32.4; no kubelet moved; the run ends aborted', async () => {
    const { c, acts } = world();
    const status = await withMockedWorker(env, acts, 'rev-rollback', async (taskQueue) => {
      const h = await env.client.workflow.start(clusterUpgradeWorkflow, {
        taskQueue,
        workflowId: upgradeWorkflowId(`rev-rollback-${taskQueue}`),
        args: [{ cluster: 'lab', to: '1.33', policy: { verifySeconds: 1 }, ...reversible }],
      });
      const waiting = await untilTrial(h);
      assert.equal(waiting.trial?.emulates, '1.32');
      await assert.rejects(h.executeUpdate(rollbackTrialUpdate, { args: [{ by: '' }] }), (err: Error) =>
        /needs a "by"/.test(String(err.cause)),
      );
      await h.executeUpdate(rollbackTrialUpdate, { args: [{ by: 'bob', reason: 'p99 up' }] });
      return h.result();
    });
    assert.equal(status.phase, 'aborted', status.events.join('\n'));
    assert.match(status.outcome ?? '', /^trial of 1\.33\.7 rolled back to 1\.32\.4 by bob \(p99 up\): no etcd restore/);
    assert.deepEqual(hostSteps(c), TRIALS_ROLLED_BACK);
    const repoOf = (node: string) =>
      c.calls.filter(([n, i]) => n === 'pointPackageRepository' && i.node === node).map(([, i]) => i.version);
    assert.deepEqual(repoOf('cp2'), ['1.33.7', '1.32.4'], "cp2's repository back at 1.32");
    assert.ok(!c.calls.some(([n]) => n === 'restartKubelet' || n === 'kubeadmUpgradeApply' || n === 'commitControlPlane'));
    assert.deepEqual(Object.values(c.state.apiserver), ['1.32.4', '1.32.4']);
  });

  it('commit: approve commit-1.33.7 removes the emulation in the hop order (apply on cp1, node on cp2), then the kubelets move', async () => {
    const { c, acts } = world();
    const status = await withMockedWorker(env, acts, 'rev-commit', async (taskQueue) => {
      const h = await env.client.workflow.start(clusterUpgradeWorkflow, {
        taskQueue,
        workflowId: upgradeWorkflowId(`rev-commit-${taskQueue}`),
        args: [{ cluster: 'lab', to: '1.33', policy: { verifySeconds: 1 }, ...reversible }],
      });
      await untilTrial(h);
      await h.executeUpdate(approveUpdate, { args: [{ gate: 'commit-1.33.7', by: 'carol' }] });
      const done = await h.result();
      await assert.rejects(h.executeUpdate(rollbackTrialUpdate, { args: [{ by: 'bob' }] }));
      return done;
    });
    assert.equal(status.phase, 'done', status.events.join('\n'));
    assert.equal(status.trial?.state, 'committed');
    const commits = c.calls.filter(([n]) => n === 'commitControlPlane').map(([, i]) => `${String(i.node)} first=${String(i.first)}`);
    assert.deepEqual(commits, ['cp1 first=true', 'cp2 first=false']);
    const firstKubelet = c.calls.findIndex(([n]) => n === 'restartKubelet');
    assert.ok(firstKubelet > c.calls.findIndex(([n]) => n === 'commitControlPlane'), 'the kubelets after the commit');
    assert.deepEqual(Object.values(c.state.kubelet), ['1.33.7', '1.33.7', '1.33.7', '1.33.7']);
    assert.ok(!c.calls.some(([n]) => n === 'rollbackControlPlane' || n === 'downgradePackages'));
  });

  it('an abort at the gate rolls the trial back: no run leaves a trial behind', async () => {
    const { c, acts } = world();
    const status = await withMockedWorker(env, acts, 'rev-abort', async (taskQueue) => {
      const h = await env.client.workflow.start(clusterUpgradeWorkflow, {
        taskQueue,
        workflowId: upgradeWorkflowId(`rev-abort-${taskQueue}`),
        args: [{ cluster: 'lab', to: '1.33', policy: { verifySeconds: 1 }, ...reversible }],
      });
      await untilTrial(h);
      await h.signal(abortSignal, { by: 'dana' });
      return h.result();
    });
    assert.equal(status.trial?.state, 'rolled-back');
    assert.match(status.outcome ?? '', /^aborted by dana/);
    assert.deepEqual(Object.values(c.state.apiserver), ['1.32.4', '1.32.4']);
  });

  it('refuses to start when a hop cannot be reversible and is not acknowledged (1.32 binaries emulate nothing older)', async () => {
    const at131 = { 'apiserver cp1': '1.31.9', 'apiserver cp2': '1.31.9', 'kubelet cp1': '1.31.9', 'kubelet cp2': '1.31.9' };
    const { c, acts } = world({ ...at131, 'kubelet w1': '1.31.9', 'kubelet w2': '1.31.9' });
    await withMockedWorker(env, acts, 'rev-refuse', async (taskQueue) => {
      const h = await env.client.workflow.start(clusterUpgradeWorkflow, {
        taskQueue,
        workflowId: upgradeWorkflowId(`rev-refuse-${taskQueue}`),
        args: [{ cluster: 'lab', to: '1.32', policy: { verifySeconds: 1 }, ...reversible }],
      });
      await assert.rejects(h.result(), (err: unknown) => {
        assert.ok(err instanceof WorkflowFailedError);
        assert.match(
          err.cause?.message ?? '',
          /refusing to start: --reversible: hop 1\.32\.4 cannot be reversible: the 1\.32\.4 binaries cannot emulate 1\.31/,
        );
        return true;
      });
    });
    assert.ok(!c.calls.some(([n]) => n === 'snapshotEtcd' || n === 'trialControlPlane'), 'nothing touched');
  });

  it('--auto-commit: the soak passes, the probes pass again, the trial commits with no approval, and history and status say so', async () => {
    const { c, acts } = world();
    const status = await withMockedWorker(env, acts, 'rev-auto', async (taskQueue) => {
      const h = await env.client.workflow.start(clusterUpgradeWorkflow, {
        taskQueue,
        workflowId: upgradeWorkflowId(`rev-auto-${taskQueue}`),
        args: [{ cluster: 'lab', to: '1.33', policy: { verifySeconds: 1, phaseSoakSeconds: 1 }, reversible: { autoCommit: true } }],
      });
      return h.result();
    });
    assert.equal(status.phase, 'done', status.events.join('\n'));
    assert.equal(status.trial?.state, 'committed');
    assert.equal(status.trial?.autoCommittedAfterSeconds, 1);
    const gate = status.gates.find((g) => g.name === 'commit-1.33.7');
    assert.equal(gate?.approvedBy, 'auto-commit');
    assert.match(gate?.comment ?? '', /soak of 1 s passed, alerts clear, probes passing/);
    assert.ok(
      status.events.some((e) => /trial of 1\.33\.7 committed automatically after a soak of 1 s/.test(e)),
      status.events.join('\n'),
    );
    // The probes ran again after the soak, before the first commit.
    const probes = c.calls.map(([n], i) => (n === 'runProbes' ? i : -1)).filter((i) => i >= 0);
    const firstCommit = c.calls.findIndex(([n]) => n === 'commitControlPlane');
    const lastTrial = c.calls.findLastIndex(([n]) => n === 'trialControlPlane');
    assert.equal(probes.filter((i) => i > lastTrial && i < firstCommit).length, 2, 'probes after the trial and after the soak');
    assert.deepEqual(Object.values(c.state.kubelet), ['1.33.7', '1.33.7', '1.33.7', '1.33.7']);
  });

  it('--auto-commit without a soak refuses the start: a trial would commit at once', async () => {
    const { c, acts } = world();
    await withMockedWorker(env, acts, 'rev-auto-nosoak', async (taskQueue) => {
      const h = await env.client.workflow.start(clusterUpgradeWorkflow, {
        taskQueue,
        workflowId: upgradeWorkflowId(`rev-auto-nosoak-${taskQueue}`),
        args: [{ cluster: 'lab', to: '1.33', policy: { verifySeconds: 1 }, reversible: { autoCommit: true } }],
      });
      await assert.rejects(h.result(), (err: unknown) => {
        assert.ok(err instanceof WorkflowFailedError);
        assert.match(err.cause?.message ?? '', /refusing to start: autoCommit needs a soak/);
        return true;
      });
    });
    assert.ok(!c.calls.some(([n]) => n === 'snapshotEtcd' || n === 'trialControlPlane'), 'nothing touched');
  });

  it('a trial that fails half-way (cp2, for good) is rolled back by the run: cp2 then cp1 back at 1.32.4, the run ends saying so', async () => {
    const { c, acts } = world(undefined, 'cp2');
    const status = await withMockedWorker(env, acts, 'rev-halfway', async (taskQueue) => {
      const h = await env.client.workflow.start(clusterUpgradeWorkflow, {
        taskQueue,
        workflowId: upgradeWorkflowId(`rev-halfway-${taskQueue}`),
        args: [{ cluster: 'lab', to: '1.33', policy: { verifySeconds: 1 }, ...reversible }],
      });
      return h.result();
    });
    assert.equal(status.phase, 'aborted', status.events.join('\n'));
    assert.match(
      status.outcome ?? '',
      /^trial of 1\.33\.7 failed on cp2 \(trialControlPlane: kubeadm upgrade apply exited 1: etcd unhealthy\): rolled back to 1\.32\.4 by the run: no etcd restore/,
    );
    assert.equal(status.trial?.state, 'rolled-back');
    assert.equal(status.trial?.failedOn, 'cp2');
    assert.deepEqual(hostSteps(c), TRIALS_ROLLED_BACK);
    assert.deepEqual(Object.values(c.state.apiserver), ['1.32.4', '1.32.4']);
    assert.ok(!c.calls.some(([n]) => n === 'restartKubelet' || n === 'commitControlPlane'), 'no kubelet moved, nothing committed');
  });

  it("the cluster's facts from the readiness report (an alpha gate on) make the hop irreversible: refused, or acknowledged and run without a trial", async () => {
    const { c, acts } = world();
    const report = {
      cluster: 'lab',
      findings: [],
      problems: [],
      looked: { removedApis: { metricsScrapes: 0, auditLogsRead: [], deprecatedSeries: 0, crdsStoredNotServed: 0 } },
    };
    const facts = { ...report, reversibility: { etcd: '3.5.24', alphaFeatureGates: ['MutatingAdmissionPolicy'] } };
    acts.readinessReport = (async (i: Record<string, unknown>) => (
      c.calls.push(['readinessReport', i]),
      facts
    )) as unknown as Activities['readinessReport'];
    const status = await withMockedWorker(env, acts, 'rev-facts', async (taskQueue) => {
      const start = (id: string, acknowledged: string[]) =>
        env.client.workflow.start(clusterUpgradeWorkflow, {
          taskQueue,
          workflowId: upgradeWorkflowId(`${id}-${taskQueue}`),
          args: [{ cluster: 'lab', to: '1.33', policy: { verifySeconds: 1 }, reversible: { acknowledged } }],
        });
      const refused = await start('rev-facts', []);
      await assert.rejects(refused.result(), (err: unknown) => {
        assert.ok(err instanceof WorkflowFailedError);
        assert.match(
          err.cause?.message ?? '',
          /^refusing to start: --reversible: hop 1\.33\.7 cannot be reversible: alpha feature gates MutatingAdmissionPolicy are on: .*--acknowledge reversible:1\.33\.7/,
        );
        return true;
      });
      assert.ok(!c.calls.some(([n]) => n === 'snapshotEtcd' || n === 'trialControlPlane'), 'nothing touched');
      return (await start('rev-facts-ack', ['reversible:1.33.7'])).result();
    });
    assert.equal(status.phase, 'done', status.events.join('\n'));
    assert.equal(status.trial, undefined, 'acknowledged: the hop ran without a trial');
    assert.ok(
      status.events.some((e) =>
        /reversible: 1\.33\.7 acknowledged \(reversible:1\.33\.7\), runs without a trial: alpha feature gates/.test(e),
      ),
    );
    assert.ok(!c.calls.some(([n]) => n === 'trialControlPlane'));
  });
});
