// docker-compose.yml's temporal-schema job run for real, as far as this machine allows (no Docker engine):
// its shell script, word for word from the compose file, run by sh against the PostgreSQL and with the
// temporal-sql-tool and schema files of the stack without Docker (the server version both name). Only
// the image's paths are mapped: /run/secrets/db-password to a file, /etc/temporal/schema to the stack's
// schema folder, and the compose network's host to 127.0.0.1. Run twice: the second run (a compose
// restart) keeps both databases and changes nothing.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import { Postgres } from '../../stack/postgres.js';
import { ensureStackTools } from '../../stack/stack-tools.js';
import { freePort } from '../../tooling/free-port.js';
import { tempDir } from '../helpers/temp-dir.js';
import { asText, environmentOf, interpolate, loadCompose } from './compose-file.js';

const run = promisify(execFile);
const job = loadCompose().services['temporal-schema'];

/** The newest schema version a folder of `v1.x` migrations reaches. */
function newest(versioned: string): string {
  const versions = readdirSync(versioned)
    .map((d) => /^v(\d+)\.(\d+)$/.exec(d))
    .filter((m): m is RegExpExecArray => m !== null)
    .map((m) => [Number(m[1]), Number(m[2])] as const)
    .sort((a, b) => a[0] - b[0] || a[1] - b[1]);
  const [major, minor] = versions.at(-1) ?? [0, 0];
  return `${major}.${minor}`;
}

describe("docker-compose.yml's schema job against a real PostgreSQL and temporal-sql-tool", () => {
  const stateDir = tempDir('compose-schema');
  const password = 'compose-schema-job';
  let pg: Postgres;
  let port: number;
  const tools = ensureStackTools({ ui: false });

  before(async () => {
    port = await freePort();
    pg = new Postgres({ bin: tools.pgBin, stateDir, port, password });
    await pg.init();
    await pg.start();
  });
  after(async () => {
    await pg?.stop();
  });

  it('creates both databases at the newest schema, and a second run keeps them', async () => {
    assert.ok(job, 'docker-compose.yml has a temporal-schema service');
    const secret = join(stateDir, 'db-password');
    writeFileSync(secret, password, { mode: 0o600 });
    const bin = tempDir('compose-schema-bin');
    symlinkSync(tools.sqlTool, join(bin, 'temporal-sql-tool'));
    const script = interpolate(asText(job.command), {})
      .replaceAll('/run/secrets/db-password', secret)
      .replaceAll('/etc/temporal/schema', tools.schemaDir);
    const env: Record<string, string> = {
      PATH: `${bin}:/usr/bin:/bin`,
      ...environmentOf(job),
      SQL_HOST: '127.0.0.1',
      SQL_PORT: String(port),
    };
    assert.equal(env['SQL_PLUGIN'], 'postgres12');
    const expected = {
      temporal: newest(join(tools.schemaDir, 'postgresql', 'v12', 'temporal', 'versioned')),
      temporal_visibility: newest(join(tools.schemaDir, 'postgresql', 'v12', 'visibility', 'versioned')),
    };
    for (const pass of ['first', 'second']) {
      const r = await run('sh', ['-c', script], { env, timeout: 180_000 }).catch((e: { stdout?: string; stderr?: string }) => {
        throw new Error(`the ${pass} run failed: ${e.stderr ?? ''}${e.stdout ?? ''}`);
      });
      assert.ok(!`${r.stdout}${r.stderr}`.includes(password), 'the password is never printed');
      for (const [db, version] of Object.entries(expected))
        assert.equal(await pg.query(db, 'SELECT curr_version FROM schema_version'), version, `${db} after the ${pass} run`);
    }
    assert.ok(Number(await pg.query('temporal', "SELECT count(*) FROM pg_tables WHERE schemaname = 'public'")) > 20, "the server's tables");
  });
});
