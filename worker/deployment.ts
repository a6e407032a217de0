import type { NativeConnection } from '@temporalio/worker';
import { workerDeploymentName } from '../contracts/worker-deployment.js';

/** A worker's place in Worker Versioning: its deployment (one per task queue) and its build (the workflow bundle's hash). */
export interface DeploymentVersion {
  deploymentName: string;
  buildId: string;
}

export const deploymentVersion = (taskQueue: string, buildId: string): DeploymentVersion => ({
  deploymentName: workerDeploymentName(taskQueue),
  buildId,
});

/** What the worker found, for its start-up line. */
export type CurrentVersion =
  { current: 'this build' } | { current: 'another build'; buildId: string } | { current: 'unknown'; why: string };

/** A version exists on the server only once its worker polls: how long the first worker waits for its own to appear. */
const REGISTER_WITHIN_MS = 30_000;
const RETRY_EVERY_MS = 250;

const GRPC_NOT_FOUND = 5;
const grpcCode = (err: unknown): number | undefined => (err as { code?: number }).code;

/**
 * The first worker of a deployment makes its build current (a new installation needs no release
 * step); a later build is only registered beside the current one: which build takes new runs is the
 * operator's decision (`temporal worker deployment set-current-version`, docs/deployment.md). The
 * conflict token makes two first workers racing agree: the loser sees the winner's build current.
 */
export async function currentUnlessSet(
  connection: NativeConnection,
  namespace: string,
  version: DeploymentVersion,
  identity: string,
): Promise<CurrentVersion> {
  const service = connection.workflowService;
  const deadline = Date.now() + REGISTER_WITHIN_MS;
  let lastError = 'the deployment did not appear';
  while (Date.now() < deadline) {
    try {
      const described = await service.describeWorkerDeployment({ namespace, deploymentName: version.deploymentName });
      const current = described.workerDeploymentInfo?.routingConfig?.currentDeploymentVersion?.buildId;
      if (current) return current === version.buildId ? { current: 'this build' } : { current: 'another build', buildId: current };
      await service.setWorkerDeploymentCurrentVersion({
        namespace,
        deploymentName: version.deploymentName,
        buildId: version.buildId,
        conflictToken: described.conflictToken,
        identity,
      });
      return { current: 'this build' };
    } catch (err) {
      // Not found: the deployment or this version is not registered yet (the poll has not reached the
      // server); a conflict: another worker changed the routing since the describe. Both: ask again.
      lastError = (err as Error).message.split('\n')[0] ?? String(err);
      if (grpcCode(err) !== GRPC_NOT_FOUND && !/conflict|not found|no pollers/i.test(lastError)) {
        return { current: 'unknown', why: lastError };
      }
    }
    await new Promise((r) => setTimeout(r, RETRY_EVERY_MS));
  }
  return { current: 'unknown', why: lastError };
}

/** The start-up line's part about the build. */
export function describeVersion(version: DeploymentVersion, found: CurrentVersion): string {
  const head = `build ${version.buildId} of deployment ${version.deploymentName}`;
  if (found.current === 'this build') return `${head} (current: takes new runs)`;
  if (found.current === 'another build')
    return `${head} (registered; build ${found.buildId} is current and takes new runs: temporal worker deployment set-current-version --deployment-name ${version.deploymentName} --build-id ${version.buildId})`;
  return `${head} (could not read or set the current build: ${found.why})`;
}
