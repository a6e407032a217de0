import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Context } from '@temporalio/activity';
import { ApplicationFailure, CancelledFailure, WorkflowFailedError } from '@temporalio/client';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import type { Activities } from '../../activities/index.js';
import { upgradeWorkflowId } from '../../contracts/workflow-ids.js';
import { clusterUpgradeWorkflow } from '../../workflows/cluster-upgrade-workflow.js';
import { statusQuery } from '../../workflows/rollout-messages.js';
import { fakeCluster } from '../helpers/fake-cluster.js';
import { startDevServer } from '../helpers/temporal-env.js';
import { withMockedWorker } from '../helpers/workers.js';

/**
 * The first control plane's kubeadm install, run by the upgrade itself before `kubeadm upgrade plan`
 * (issue 35, PATCH.firstKubeadmHolds): its holds read first and put back when the install fails, here
 * an install that could not re-hold kubeadm itself (the mocked node lost that hold).
 */
/** A fake restorePackageHolds: puts back into `held` what the node's step released, recording the call. */
const restoringInto = (c: ReturnType<typeof fakeCluster>, held: Set<string>) =>
  (async (i: { node: string; held: string[] }) => {
    c.calls.push(['restorePackageHolds', i]);
    const putBack = i.held.filter((p) => !held.has(p));
    for (const p of putBack) held.add(p);
    return { node: i.node, held: [...held].sort(), putBack, missing: [] };
  }) as unknown as Activities['restorePackageHolds'];

describe('workflow: a failed kubeadm install on the first control plane leaves its holds as before (mocked activities)', () => {
  let env: TestWorkflowEnvironment;
  before(async () => {
    env = await startDevServer();
  });
  after(async () => {
    await env?.teardown();
  });

  it('reads cp1 holds, and after the failed install puts back kubeadm before the run fails, naming it', async () => {
    const c = fakeCluster();
    const held = new Set(['kubeadm', 'kubelet', 'kubectl']);
    const acts: Partial<Activities> = {
      ...c.acts,
      readPackageHolds: (async (i: { node: string }) => (
        c.calls.push(['readPackageHolds', i]),
        { node: i.node, held: [...held].sort(), via: 'apt-mark' }
      )) as unknown as Activities['readPackageHolds'],
      installPackages: (async (i: { node: string; packages: string[] }) => {
        c.calls.push(['installPackages', i]);
        held.delete('kubeadm'); // unheld, then the install and its own re-hold failed
        throw ApplicationFailure.create({
          type: 'HostCommandFailed',
          nonRetryable: true,
          message: `apt-get install on ${i.node} exited 100`,
        });
      }) as unknown as Activities['installPackages'],
      restorePackageHolds: restoringInto(c, held),
    };
    const events = await withMockedWorker(env, acts, 'first-kubeadm', async (taskQueue) => {
      const h = await env.client.workflow.start(clusterUpgradeWorkflow, {
        taskQueue,
        workflowId: upgradeWorkflowId(`firstkubeadm-${taskQueue}`),
        args: [{ cluster: 'lab', to: '1.33', policy: { verifySeconds: 1 } }],
      });
      await assert.rejects(h.result(), (err: unknown) => {
        assert.ok(err instanceof WorkflowFailedError);
        const chain = [err.cause, err.cause?.cause].map((e) => (e as Error | undefined)?.message).join(' → ');
        assert.match(chain, /apt-get install on cp1 exited 100/);
        return true;
      });
      return (await h.query(statusQuery)).events;
    });
    assert.deepEqual(
      c.calls.filter(([, i]) => i.node === 'cp1').map(([n]) => n),
      [
        'availableVersions',
        'snapshotEtcd',
        'pointPackageRepository',
        'readPackageHolds',
        'installPackages',
        'restorePackageHolds',
        'uncordonNode', // the failed run's compensation (only what it cordoned: nothing here)
      ],
    );
    assert.deepEqual(c.calls.find(([n]) => n === 'restorePackageHolds')?.[1].held, ['kubeadm', 'kubectl', 'kubelet']);
    assert.deepEqual([...held].sort(), ['kubeadm', 'kubectl', 'kubelet'], "cp1's holds as before the run");
    assert.ok(events.includes('holds put back on cp1: kubeadm'), events.join('\n'));
  });

  it('a run cancelled while that install runs (unhold done, install not) puts the holds back as well', async () => {
    const c = fakeCluster();
    const held = new Set(['kubeadm', 'kubelet', 'kubectl']);
    let installing!: () => void;
    const started = new Promise<void>((resolve) => (installing = resolve));
    const acts: Partial<Activities> = {
      ...c.acts,
      readPackageHolds: (async (i: { node: string }) => ({
        node: i.node,
        held: [...held].sort(),
        via: 'apt-mark',
      })) as unknown as Activities['readPackageHolds'],
      installPackages: (async (i: { node: string }) => {
        c.calls.push(['installPackages', i]);
        held.delete('kubeadm'); // unheld; the install never comes (its worker gone, the run cancelled)
        installing();
        for (;;) {
          Context.current().heartbeat();
          await Context.current().sleep(100); // rejects once the cancellation reaches the activity
        }
      }) as unknown as Activities['installPackages'],
      restorePackageHolds: restoringInto(c, held),
    };
    await withMockedWorker(env, acts, 'first-kubeadm-cancel', async (taskQueue) => {
      const h = await env.client.workflow.start(clusterUpgradeWorkflow, {
        taskQueue,
        workflowId: upgradeWorkflowId(`firstkubeadm-cancel-${taskQueue}`),
        args: [{ cluster: 'lab', to: '1.33', policy: { verifySeconds: 1 } }],
      });
      await started;
      await h.cancel();
      await assert.rejects(h.result(), (err: unknown) => err instanceof WorkflowFailedError && err.cause instanceof CancelledFailure);
    });
    assert.deepEqual(
      c.calls.filter(([n]) => n === 'restorePackageHolds').map(([, i]) => i.held),
      [['kubeadm', 'kubectl', 'kubelet']],
    );
    assert.deepEqual([...held].sort(), ['kubeadm', 'kubectl', 'kubelet'], "cp1's holds as before the run");
  });
});
