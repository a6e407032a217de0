import { NativeConnection } from '@temporalio/worker';
import { createClusterResolver } from '../activities/host-address.js';
import { temporalConfig } from './config.js';
import { createSkewlessWorker } from './create-worker.js';

/** The worker process: the only one that will hold cluster credentials. */
async function run(): Promise<void> {
  const config = temporalConfig();
  const connection = await NativeConnection.connect({ address: config.address });
  try {
    const deps = config.clustersDir ? { clusters: createClusterResolver(config.clustersDir) } : {};
    const worker = await createSkewlessWorker({ connection, namespace: config.namespace, taskQueue: config.taskQueue, deps });
    console.log(`skewless worker: task queue ${config.taskQueue} on ${config.address}, clusters from ${config.clustersDir ?? '(none)'}`);
    await worker.run();
  } finally {
    await connection.close();
  }
}

run().catch((err) => {
  console.error(err);
  process.exit(1);
});
