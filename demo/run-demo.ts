import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { TestWorkflowEnvironment } from '@temporalio/testing';
import { DefaultLogger, Runtime } from '@temporalio/worker';
import { planToText } from '../client/render-plan.js';
import { planUpgrade, type ClusterInventory } from '../rules/index.js';
import { ensureTemporalBinary } from '../tooling/temporal-binary.js';
import { createSkewlessWorker } from '../worker/create-worker.js';
import { proceedSmokeSignal, smokeStatusQuery } from '../workflows/messages.js';
import { toolchainSmokeWorkflow } from '../workflows/index.js';
import { ALL_SEARCH_ATTRIBUTES } from '../workflows/search-attributes.js';

/**
 * The main job, as far as the project goes today: on the embedded Temporal dev server, a real
 * worker plans the example 3+7 cluster's upgrade from 1.32 to 1.34 inside a workflow and waits
 * for an operator's go-ahead; then the whole runbook is printed. Nothing is upgraded yet: the
 * simulated cluster and the upgrade workflow are the next issues, and this script grows into them.
 */
const example = (name: string) => fileURLToPath(new URL(`../../examples/${name}`, import.meta.url));

async function run(): Promise<void> {
  Runtime.install({ logger: new DefaultLogger('WARN') });
  const inventory = JSON.parse(readFileSync(example('inventory-3cp-7w.json'), 'utf8')) as ClusterInventory;
  const available = JSON.parse(readFileSync(example('available.json'), 'utf8')) as string[];
  const env = await TestWorkflowEnvironment.createLocal({
    server: { executable: { type: 'existing-path', path: ensureTemporalBinary() }, ip: '127.0.0.1', searchAttributes: ALL_SEARCH_ATTRIBUTES },
  });
  try {
    const taskQueue = 'skewless-demo';
    const worker = await createSkewlessWorker({ connection: env.nativeConnection, namespace: env.namespace ?? 'default', taskQueue });
    await worker.runUntil(async () => {
      const handle = await env.client.workflow.start(toolchainSmokeWorkflow, {
        taskQueue,
        workflowId: 'demo/plan-3cp-7w',
        args: [{ from: '1.32.4', to: '1.34', available }],
      });
      const status = await handle.query(smokeStatusQuery);
      console.log(`workflow ${handle.workflowId}: ${status.phase}, hops ${status.hops.join(' → ')}`);
      await handle.signal(proceedSmokeSignal, { by: 'demo', comment: 'go ahead' });
      const result = await handle.result();
      console.log(`approved by ${result.proceededBy}; worker ran on Node ${result.workerNodeVersion}\n`);
    });
    console.log(planToText(planUpgrade({ inventory, to: '1.34', available, policy: { batchSize: 3, maxUnavailable: 2 } }), '1.34'));
  } finally {
    await env.teardown();
  }
}

run().catch((err) => {
  console.error(err);
  process.exit(1);
});
