import { condition, setHandler } from '@temporalio/workflow';

import { planHops, type HopRequest } from '../rules/index.js';
import { activities } from './activities-proxy.js';
import { proceedSmokeSignal, smokeStatusQuery, type Proceed, type SmokeStatus } from './messages.js';
import { applyRule } from './rule-failure.js';

const { describeWorker } = activities;

export interface SmokeResult {
  hops: string[];
  proceededBy: string;
  workerNodeVersion: string;
}

/**
 * The smallest end-to-end proof of the toolchain: the pure rules run inside the workflow sandbox,
 * a signal lets it go on, a query reports where it is, and one activity runs on the real worker.
 */
export async function toolchainSmokeWorkflow(request: HopRequest): Promise<SmokeResult> {
  const status: SmokeStatus = { phase: 'waiting', hops: applyRule(() => planHops(request)) };
  let proceed: Proceed | undefined;
  setHandler(proceedSmokeSignal, (p) => {
    proceed = p;
  });
  setHandler(smokeStatusQuery, () => status);

  await condition(() => proceed !== undefined);
  status.phase = 'running';
  status.proceededBy = proceed?.by;
  const worker = await describeWorker();
  status.phase = 'done';
  return { hops: status.hops, proceededBy: proceed?.by ?? '', workerNodeVersion: worker.nodeVersion };
}
