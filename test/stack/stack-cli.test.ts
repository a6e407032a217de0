// `npm run stack -- up|down|status` (stack/cli.ts) as an operator runs it: PostgreSQL, the Temporal
// server built from the Go module proxy and the UI, in a temporary state dir on free ports. The first
// `up` meets a database an older server left (schema 1.17) and migrates it; every program answers;
// `down` and a SIGKILLed daemon both leave nothing running; a PostgreSQL killed under the daemon is
// started again, a workflow started after it runs through a server SIGKILL that `up` repairs, and
// status and down name what runs then.
import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { Client, Connection } from '@temporalio/client';
import { NativeConnection } from '@temporalio/worker';
import { freePort } from '../../tooling/free-port.js';
import { Postgres } from '../../stack/postgres.js';
import { STACK_FILE, type StackInfo } from '../../stack/stack.js';
import { ensureStackTools, stackVersions } from '../../stack/stack-tools.js';
import { createSkewlessWorker } from '../../worker/create-worker.js';
import { toolchainSmokeWorkflow } from '../../workflows/index.js';
import { proceedSmokeSignal, smokeStatusQuery } from '../../workflows/messages.js';
import { ALL_SEARCH_ATTRIBUTES } from '../../workflows/search-attributes.js';
import { uniqueTaskQueue, workflowBundle } from '../helpers/temporal-env.js';
import { tempDir } from '../helpers/temp-dir.js';

const run = promisify(execFile);
const CLI = fileURLToPath(new URL('../../stack/cli.js', import.meta.url));
const stateDir = tempDir('stack');
// --while-pid: the stack ends with this test process, even if the runner SIGKILLs it.
const stack = (...args: string[]) =>
  run(process.execPath, [CLI, ...args, '--state-dir', stateDir, ...(args[0] === 'up' ? ['--while-pid', String(process.pid)] : [])], {
    timeout: 300_000,
  }).then(
    (r) => ({ code: 0, out: r.stdout, err: r.stderr }),
    (e: { code?: number; stdout?: string; stderr?: string }) => ({ code: e.code ?? -1, out: e.stdout ?? '', err: e.stderr ?? '' }),
  );
const recorded = () => JSON.parse(readFileSync(join(stateDir, STACK_FILE), 'utf8')) as StackInfo & { daemonPid: number };
const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
async function gone(pids: number[], ms: number): Promise<number[]> {
  const deadline = Date.now() + ms;
  while (pids.some(alive) && Date.now() < deadline) await sleep(100);
  return pids.filter(alive);
}

/** The state an older server's first start left: the temporal database at schema 1.17 (and the password `up` keeps). */
async function leaveOlderSchema(): Promise<void> {
  const tools = ensureStackTools({ ui: true });
  const password = 'older-server';
  mkdirSync(join(stateDir, 'secrets'), { recursive: true });
  writeFileSync(join(stateDir, 'secrets', 'db-password'), password, { mode: 0o600 });
  const port = await freePort();
  const pg = new Postgres({ bin: tools.pgBin, stateDir, port, password });
  await pg.init();
  await pg.start();
  try {
    const env = {
      ...process.env,
      SQL_PLUGIN: 'postgres12',
      SQL_HOST: '127.0.0.1',
      SQL_PORT: String(port),
      SQL_USER: 'temporal',
      SQL_PASSWORD: password,
      SQL_DATABASE: 'temporal',
    };
    await run(tools.sqlTool, ['create-database', '--defaultdb', 'postgres'], { env });
    await run(tools.sqlTool, ['setup-schema', '-v', '0.0'], { env });
    await run(tools.sqlTool, ['update-schema', '-v', '1.17', '-d', join(tools.schemaDir, 'postgresql', 'v12', 'temporal', 'versioned')], {
      env,
    });
    assert.equal(await pg.query('temporal', 'SELECT curr_version FROM schema_version'), '1.17');
  } finally {
    await pg.stop();
  }
}

/**
 * A workflow started now (toolchainSmokeWorkflow, on a real worker) waits for its signal while the Temporal
 * server is SIGKILLed; `stack up` starts the server again at once and returns once it runs; the workflow
 * then finishes.
 */
async function smokeThroughServerKill(address: string, connection: Connection): Promise<void> {
  const native = await NativeConnection.connect({ address });
  const taskQueue = uniqueTaskQueue('stack');
  const worker = await createSkewlessWorker({
    connection: native,
    namespace: 'default',
    taskQueue,
    workflowBundle: await workflowBundle(),
  });
  try {
    await worker.runUntil(async () => {
      const client = new Client({ connection, namespace: 'default' });
      const handle = await client.workflow.start(toolchainSmokeWorkflow, {
        taskQueue,
        workflowId: `smoke/${taskQueue}`,
        args: [{ from: '1.32.4', to: '1.33', available: ['1.32.4', '1.33.7'] }],
      });
      // Answered once the worker ran its first task: a server that waited for the hosts of earlier servers in its
      // ring (this stack's SIGKILLed daemon's) dispatched none for over 30 s, and this query timed out.
      assert.equal((await handle.query(smokeStatusQuery)).phase, 'waiting');
      const server = recorded().pids['temporal-server']!;
      process.kill(server, 'SIGKILL');
      const upped = await stack('up');
      assert.equal(upped.code, 0, upped.err);
      assert.match(upped.out, /^started temporal-server again:/, upped.out);
      const now = recorded().pids['temporal-server']!;
      assert.ok(now !== server && alive(now), `up returned with the server running again: ${upped.out}`);
      await handle.signal(proceedSmokeSignal, { by: 'stack-test', comment: 'after the restarts' });
      assert.equal((await handle.result()).proceededBy, 'stack-test');
    });
  } finally {
    await native.close();
  }
}

describe('npm run stack: the production shape without Docker', () => {
  after(async () => {
    await stack('down');
    rmSync(stateDir, { recursive: true, force: true });
  });

  it('refuses bad input with one line and exit 2, starting nothing', async () => {
    for (const args of [['bogus'], ['up', 'extra'], ['status', '--nope'], ['up', '--while-pid', 'abc'], ['up', '--ui-port', '70000']]) {
      const r = await run(process.execPath, [CLI, ...args, '--state-dir', stateDir]).then(
        () => ({ code: 0, err: '' }),
        (e: { code?: number; stderr?: string }) => ({ code: e.code, err: e.stderr ?? '' }),
      );
      assert.equal(r.code, 2, `${args.join(' ')}: ${r.err}`);
      assert.equal(r.err.trim().split('\n').length, 1, `${args.join(' ')}: one line, got ${r.err}`);
      assert.match(r.err, /^stack: .*usage: npm run stack|^stack: --while-pid|^stack: --ui-port must be a port \(1-65535\), got "70000"$/m);
    }
    const help = await run(process.execPath, [CLI, '--help']);
    assert.match(help.stdout, /^usage: npm run stack -- up\|down\|status/);
    for (const flag of ['--frontend-port N', '--postgres-port N', '--ui-port N']) assert.ok(help.stdout.includes(flag), flag);
  });

  it(
    'up migrates an older schema, serves the namespace, search attributes and UI; status; down stops every program',
    { timeout: 600_000 },
    async () => {
      await leaveOlderSchema();

      const upped = await stack('up', '--free-ports');
      assert.equal(upped.code, 0, upped.err);
      const r = recorded();
      assert.deepEqual(
        r.schemas.map((s) => [s.database, s.from, s.to]),
        [
          ['temporal', '1.17', '1.18'],
          ['temporal_visibility', '', '1.9'],
        ],
      );
      assert.match(upped.out, new RegExp(`Temporal ${stackVersions().temporalServer}: ${r.address.replace(/\./g, '\\.')}`));

      const connection = await Connection.connect({ address: r.address });
      try {
        const info = await connection.workflowService.getSystemInfo({});
        assert.equal(`v${info.serverVersion}`, stackVersions().temporalServer);
        const { customAttributes } = await connection.operatorService.listSearchAttributes({ namespace: 'default' });
        assert.deepEqual(
          Object.keys(customAttributes ?? {})
            .filter((n) => n.startsWith('Skewless'))
            .sort(),
          ALL_SEARCH_ATTRIBUTES.map((a) => a.name).sort(),
        );
      } finally {
        await connection.close();
      }
      assert.ok(r.uiUrl);
      const page = await fetch(r.uiUrl);
      assert.equal(page.status, 200);
      assert.match(await page.text(), /<html/i);

      const st = await stack('status');
      assert.equal(st.code, 0, st.err);
      assert.match(st.out, /^running:/);
      const again = await stack('up');
      assert.match(again.out, /^already running:/);
      assert.equal(recorded().daemonPid, r.daemonPid);

      const downed = await stack('down');
      assert.equal(downed.code, 0, downed.err);
      assert.deepEqual(await gone([r.daemonPid, ...Object.values(r.pids)], 5_000), []);
      assert.equal((await stack('status')).code, 1);
    },
  );

  it(
    'a daemon SIGKILLed takes PostgreSQL, the server and the UI with it; the next up starts on the kept data',
    { timeout: 300_000 },
    async () => {
      const upped = await stack('up', '--free-ports', '--no-ui');
      assert.equal(upped.code, 0, upped.err);
      const r = recorded();
      assert.deepEqual(
        r.schemas.map((s) => s.from === s.to),
        [true, true],
        'the second start has nothing to migrate',
      );
      process.kill(r.daemonPid, 'SIGKILL');
      assert.deepEqual(
        await gone(Object.values(r.pids), 10_000),
        [],
        `still running after the daemon's SIGKILL: ${JSON.stringify(r.pids)}`,
      );
      const { stdout } = await run('ps', ['-eo', 'args']);
      assert.equal(
        stdout
          .split('\n')
          .filter((l) => l.includes(stateDir))
          .join('\n'),
        '',
        'no process of this state dir left',
      );
    },
  );

  it('up --while-pid: the stack stops when that process ends (a test runner killed)', { timeout: 300_000 }, async () => {
    const holder = spawn('sleep', ['600'], { stdio: 'ignore' });
    try {
      const upped = await run(process.execPath, [
        CLI,
        'up',
        '--free-ports',
        '--no-ui',
        '--state-dir',
        stateDir,
        '--while-pid',
        String(holder.pid),
      ]);
      assert.match(upped.stdout, /^up in/);
      const r = recorded();
      assert.ok(Object.values(r.pids).every(alive));
      holder.kill('SIGKILL');
      // A graceful stop: the server gets up to 20 s (ManagedProcess), then PostgreSQL's fast shutdown.
      assert.deepEqual(await gone([r.daemonPid, ...Object.values(r.pids)], 60_000), []);
    } finally {
      holder.kill('SIGKILL');
    }
  });

  it(
    'a PostgreSQL killed is started again by the daemon; a workflow started after runs through a server kill `up` repairs; status and down name what runs now',
    { timeout: 300_000 },
    async () => {
      const pgPort = await freePort();
      const upped = await stack('up', '--free-ports', '--no-ui', '--postgres-port', String(pgPort));
      assert.equal(upped.code, 0, upped.err);
      const r = recorded();
      assert.equal(r.postgres.address, `127.0.0.1:${pgPort}`, 'the port chosen by its own flag');
      // A port the running stack does not use: said, not ignored as "already running".
      const other = pgPort === 65535 ? pgPort - 1 : pgPort + 1;
      const moved = await stack('up', '--postgres-port', String(other));
      assert.equal(moved.code, 2, moved.out);
      assert.equal(moved.err, `stack up: --postgres-port ${other}: the running stack uses ${pgPort} (stack down first to move it)\n`);
      const killed = r.pids.postgres!;
      process.kill(killed, 'SIGKILL');
      let again: number | undefined;
      const deadline = Date.now() + 120_000;
      while (Date.now() < deadline) {
        const now = recorded().pids.postgres;
        if (now !== undefined && now !== killed && alive(now)) {
          again = now;
          break;
        }
        await sleep(250);
      }
      assert.ok(again, `PostgreSQL was not started again: ${readFileSync(join(stateDir, 'logs', 'daemon.log'), 'utf8').slice(-1500)}`);
      // Temporal serves again: a visibility query reads PostgreSQL.
      const connection = await Connection.connect({ address: r.address });
      try {
        let served = false;
        for (let i = 0; i < 240 && !served; i++) {
          served = await connection.workflowService.countWorkflowExecutions({ namespace: 'default', query: '' }).then(
            () => true,
            () => false,
          );
          if (!served) await sleep(250);
        }
        assert.ok(served, 'Temporal answered a visibility query after the restart');
        // A workflow started after PostgreSQL's restart runs, through a SIGKILL of the server that `up` starts again.
        await smokeThroughServerKill(r.address, connection);
      } finally {
        await connection.close();
      }
      const st = await stack('status');
      assert.equal(st.code, 0, st.out + st.err);
      assert.match(st.out, new RegExp(`\\(pid ${again}\\); schemas`));
      assert.ok(!st.out.includes(`pid ${killed})`), st.out);
      const server = recorded().pids['temporal-server']!;
      const downed = await stack('down');
      assert.equal(downed.code, 0, downed.err);
      assert.match(downed.out, new RegExp(`^stack: stopped the daemon, .*postgres \\(pid ${again}\\)`));
      assert.ok(!downed.out.includes(String(killed)), `down never claims the killed PostgreSQL: ${downed.out}`);
      assert.deepEqual(await gone([r.daemonPid, again!, server], 10_000), []);
    },
  );
});
