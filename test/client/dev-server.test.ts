import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { Connection, WorkflowClient } from '@temporalio/client';
import { devServerArgs } from '../../client/commands/dev-server.js';
import { SEARCH_ATTRIBUTES } from '../../workflows/search-attributes.js';
import { freePort } from '../../tooling/free-port.js';
import { archiveHistories, archiveLabel } from '../helpers/history-archive.js';
import { repoRoot } from '../helpers/run-cli.js';
import { tempDir } from '../helpers/temp-dir.js';

const started: ChildProcess[] = [];

function startDevServer(db: string, port: number, uiPort: number): ChildProcess {
  const child = spawn(
    process.execPath,
    [join(repoRoot, 'bin', 'skewless.js'), 'dev-server', '--db', db, '--port', String(port), '--ui-port', String(uiPort)],
    {
      stdio: ['ignore', 'ignore', 'pipe'],
    },
  );
  started.push(child);
  return child;
}

async function connect(port: number): Promise<Connection> {
  const deadline = Date.now() + 60_000;
  for (;;) {
    try {
      return await Connection.connect({ address: `127.0.0.1:${port}`, connectTimeout: 1000 });
    } catch (err) {
      if (Date.now() > deadline) throw err;
      await new Promise((r) => setTimeout(r, 250));
    }
  }
}

async function stop(child: ChildProcess): Promise<number | null> {
  if (child.exitCode !== null) return child.exitCode;
  const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
  child.kill('SIGTERM');
  return exited;
}

describe('skewless dev-server', () => {
  after(async () => {
    await Promise.all(started.map(stop));
  });

  it('serves Temporal and its UI, registers the search attributes, and keeps history across restarts', async () => {
    const db = join(tempDir('dev'), 'nested', 'temporal.db');
    const [port, uiPort] = [await freePort(), await freePort()];

    let server = startDevServer(db, port, uiPort);
    let connection = await connect(port);
    const { customAttributes } = await connection.operatorService.listSearchAttributes({ namespace: 'default' });
    for (const key of Object.values(SEARCH_ATTRIBUTES)) assert.ok(customAttributes?.[key.name] !== undefined, `${key.name} registered`);
    const ui = await fetch(`http://127.0.0.1:${uiPort}/`);
    assert.equal(ui.status, 200, 'the Web UI answers');

    // A workflow started before the restart is still there after it: history is on disk.
    const client = new WorkflowClient({ connection });
    await client.start('toolchainSmokeWorkflow', { taskQueue: 'nobody-polls', workflowId: 'persisted/1', args: [] });
    await connection.close();
    assert.ok(existsSync(db), 'database file created');
    await stop(server);

    server = startDevServer(db, port, uiPort);
    connection = await connect(port);
    const description = await new WorkflowClient({ connection }).getHandle('persisted/1').describe();
    assert.equal(description.status.name, 'RUNNING');
    await archiveHistories(connection, archiveLabel('dev-server-cli')); // for the run's secret scan
    await connection.close();
    await stop(server);
  });

  it('docker-compose registers the same search attributes as the dev server', () => {
    const compose = readFileSync(join(repoRoot, 'docker-compose.yml'), 'utf8');
    // The compose stack's one-shot setup service: `temporal operator search-attribute create --name N --type T ...`.
    const inCompose = [...compose.matchAll(/--name[= ](\S+)\s+(?:\\\s*)?--type[= ](\S+)/g)].map((m) => `${m[1]}=${m[2]}`);
    const args = devServerArgs({ db: 'x', ip: '127.0.0.1', port: 1, uiPort: 2 });
    const inDevServer = args.filter((_, i) => args[i - 1] === '--search-attribute');
    assert.deepEqual(inCompose, inDevServer);
    assert.equal(inDevServer.length, Object.keys(SEARCH_ATTRIBUTES).length);
  });
});
