import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Connection } from '@temporalio/client';
import { ManagedProcess } from '../../tooling/managed-process.js';
import { freePort } from '../../tooling/free-port.js';
import { ensureTemporalBinary } from '../../tooling/temporal-binary.js';

/**
 * One Temporal dev server for a whole test tier: each test file registers a namespace of its own on it
 * (test/helpers/temporal-env.ts), instead of starting a server per file. It dies with the runner
 * (ManagedProcess: the parent-death signal), also when the runner is SIGKILLed.
 */
export interface SharedTemporal {
  address: string;
  stop(): Promise<void>;
}

// What the SDK's own ephemeral dev server sets (sdk-core ephemeral_server/mod.rs), so a file sees
// the same server whether it runs alone (createLocal) or under the runner.
const DYNAMIC_CONFIG = [
  'frontend.enableServerVersionCheck=false',
  'frontend.enableUpdateWorkflowExecution=true',
  'frontend.enableUpdateWorkflowExecutionAsyncAccepted=true',
];

export async function startSharedTemporal(): Promise<SharedTemporal> {
  const port = await freePort();
  const address = `127.0.0.1:${port}`;
  const dir = mkdtempSync(join(tmpdir(), 'skewless-tier-temporal-'));
  const args = ['server', 'start-dev', '--headless', '--ip', '127.0.0.1', '--port', String(port), '--log-level', 'error'];
  for (const value of DYNAMIC_CONFIG) args.push('--dynamic-config-value', value);
  const server = new ManagedProcess('temporal', ensureTemporalBinary(), args, join(dir, 'temporal.log'));
  server.start();
  const deadline = Date.now() + 60_000;
  for (;;) {
    server.assertAlive();
    try {
      const connection = await Connection.connect({ address, connectTimeout: 1_000 });
      await connection.workflowService.getSystemInfo({});
      await connection.close();
      break;
    } catch (err) {
      if (Date.now() > deadline) {
        await server.stop();
        throw new Error(
          `the shared Temporal dev server did not answer on ${address} within 60 s (log: ${join(dir, 'temporal.log')}): ${String(err)}`,
        );
      }
      await new Promise((r) => setTimeout(r, 200));
    }
  }
  return {
    address,
    async stop() {
      await server.stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
