// The workflows of "build 2" in the two-build e2e (test/e2e/worker-versioning.test.ts): the product's
// workflows with one change to a command sequence, the kind of change that needed a patched() branch
// before Worker Versioning. The upgrade waits one second on a timer before anything else, so its first
// command is StartTimer where build 1's is an activity: a build-1 history replayed here would fail
// with a non-determinism error, and a run of build 2 shows the change in its history.
import { sleep } from '@temporalio/workflow';
import { clusterUpgradeWorkflow as buildOne } from '../../../workflows/cluster-upgrade-workflow.js';

export * from '../../../workflows/index.js';

/** Build 2's upgrade: one timer, then build 1's upgrade. */
export async function clusterUpgradeWorkflow(...args: Parameters<typeof buildOne>): ReturnType<typeof buildOne> {
  await sleep('1 second');
  return buildOne(...args);
}
