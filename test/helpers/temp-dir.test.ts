import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { describe, it } from 'node:test';
import { pathToFileURL } from 'node:url';
import { repoRoot } from './run-cli.js';

/** Folders that keep their state on purpose when a run fails, for the post-mortem (their runner says where). */
const KEPT_ON_FAILURE = ['test/faults/harness.ts', 'test/stack/stack-upgrade.ts'];
/** The runner's own folders, removed by the runner. */
const RUNNER = ['test/runner/'];

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return name === 'fixtures' ? [] : sources(path);
    return name.endsWith('.ts') ? [path] : [];
  });
}

describe('tempDir: no test leaves a temporary folder behind', () => {
  it('removes its folders when the process exits, also after a failed test', () => {
    const base = mkdtempSync(join(tmpdir(), 'skewless-tempdir-check-'));
    try {
      const helper = pathToFileURL(join(import.meta.dirname, 'temp-dir.js')).href;
      const script = `
        import { writeFileSync } from 'node:fs';
        import { join } from 'node:path';
        import { it } from 'node:test';
        import { tempDir } from ${JSON.stringify(helper)};
        it('fails with its folders full', () => {
          writeFileSync(join(tempDir('a'), 'state'), 'x');
          tempDir('b');
          throw new Error('the assertion that failed');
        });`;
      const r = spawnSync(process.execPath, ['--input-type=module', '-e', script], {
        env: { ...process.env, TMPDIR: base },
        encoding: 'utf8',
      });
      assert.notEqual(r.status, 0, 'the test failed');
      assert.match(r.stdout + r.stderr, /the assertion that failed/);
      assert.deepEqual(readdirSync(base), []);
    } finally {
      rmSync(base, { recursive: true, force: true });
    }
  });

  it('is where every test and helper makes its temporary folders', () => {
    const root = join(repoRoot, 'test');
    const offenders = sources(root)
      .map((path) => relative(repoRoot, path))
      .filter((path) => path !== 'test/helpers/temp-dir.ts' && path !== 'test/helpers/temp-dir.test.ts')
      .filter((path) => !KEPT_ON_FAILURE.includes(path) && !RUNNER.some((r) => path.startsWith(r)))
      .filter((path) => /\bmkdtemp(Sync)?\(/.test(readFileSync(join(repoRoot, path), 'utf8')));
    assert.deepEqual(offenders, [], 'use tempDir() from test/helpers/temp-dir.ts');
    for (const path of KEPT_ON_FAILURE) assert.ok(existsSync(join(repoRoot, path)), path);
  });
});
