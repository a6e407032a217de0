import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, it } from 'node:test';
import { repoRoot } from '../helpers/run-cli.js';
import { FINALLY, TIER_NAMES, TIERS } from './tiers.js';

function testFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return testFiles(path);
    return name.endsWith('.test.ts') ? [relative(repoRoot, path)] : [];
  });
}

// What a unit test may not start: a dev server, the stack, a simulated cluster or hosts, a browser, a worker.
const SERVER_STARTERS =
  /\b(startDevServer|startStack|startDevServerWithUi|startTestCluster|startSimulation|startTestSim|createLocal|simWorker|withMockedWorker|chromium|Worker\.create|createSkewlessWorker)\b/;

describe('test tiers', () => {
  const listed = [...TIER_NAMES.flatMap((t) => TIERS[t].files), ...FINALLY];

  it('every test file is in exactly one tier, and every listed file exists', () => {
    const onDisk = testFiles(join(repoRoot, 'test')).sort();
    const counts = new Map<string, number>();
    for (const f of listed) counts.set(f, (counts.get(f) ?? 0) + 1);
    assert.deepEqual(
      onDisk.filter((f) => !counts.has(f)),
      [],
      'test files in no tier (add them to test/runner/tiers.ts)',
    );
    assert.deepEqual(
      [...counts].filter(([, n]) => n > 1).map(([f]) => f),
      [],
      'test files in more than one tier',
    );
    assert.deepEqual(
      listed.filter((f) => !existsSync(join(repoRoot, f))),
      [],
      'listed files that do not exist',
    );
  });

  it('a unit test starts no server, simulation, worker or browser', () => {
    const offenders = TIERS.unit.files.filter(
      (f) => f !== 'test/runner/tiers.test.ts' && SERVER_STARTERS.test(readFileSync(join(repoRoot, f), 'utf8').replace(/\/\/.*$/gm, '')),
    );
    assert.deepEqual(offenders, [], 'unit files that start a server: move them to integration or e2e');
  });

  it('the check above is not vacuous: it catches the starters of the other tiers', () => {
    const starters = [...TIERS.integration.files, ...TIERS.e2e.files].filter((f) =>
      SERVER_STARTERS.test(readFileSync(join(repoRoot, f), 'utf8')),
    );
    assert.ok(starters.length >= 40, `${starters.length} integration/e2e files recognised as starting something`);
  });
});
