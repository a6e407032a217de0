// `npm run stack -- up|down|status` (stack/cli.ts) as an operator runs it: PostgreSQL, the Temporal
// server built from the Go module proxy and the UI, in a temporary state dir on free ports. The first
// `up` meets a database an older server left (schema 1.17) and migrates it; every program answers;
// `down` and a SIGKILLed daemon both leave nothing running.
import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { Connection } from '@temporalio/client';
import { freePort } from '../../tooling/free-port.js';
import { Postgres } from '../../stack/postgres.js';
import { STACK_FILE, type StackInfo } from '../../stack/stack.js';
import { ensureStackTools, stackVersions } from '../../stack/stack-tools.js';
import { ALL_SEARCH_ATTRIBUTES } from '../../workflows/search-attributes.js';
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

describe('npm run stack: the production shape without Docker', () => {
  after(async () => {
    await stack('down');
    rmSync(stateDir, { recursive: true, force: true });
  });

  it('refuses bad input with one line and exit 2, starting nothing', async () => {
    for (const args of [['bogus'], ['up', 'extra'], ['status', '--nope'], ['up', '--while-pid', 'abc']]) {
      const r = await run(process.execPath, [CLI, ...args, '--state-dir', stateDir]).then(
        () => ({ code: 0, err: '' }),
        (e: { code?: number; stderr?: string }) => ({ code: e.code, err: e.stderr ?? '' }),
      );
      assert.equal(r.code, 2, `${args.join(' ')}: ${r.err}`);
      assert.equal(r.err.trim().split('\n').length, 1, `${args.join(' ')}: one line, got ${r.err}`);
      assert.match(r.err, /^stack: .*usage: npm run stack|^stack: --while-pid/);
    }
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
});
