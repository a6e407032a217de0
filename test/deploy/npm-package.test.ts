// The npm package as an operator gets it: `npm pack`, then `npm install -g` of the tarball into an
// empty prefix, then the installed `skewless` run from a folder that is not the repository. The
// dependencies come from a registry on loopback made of package-lock.json and this machine's npm
// cache (test/helpers/lockfile-registry.ts): no network, and the very tree the rest of the suite ran.
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join, relative, resolve } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { startLockfileRegistry, type LockfileRegistry } from '../helpers/lockfile-registry.js';
import { repoRoot } from '../helpers/run-cli.js';
import type { TestCluster } from '../helpers/sim-cluster.js';
import { startClusterWorld } from '../helpers/sim-world.js';
import { temporalVars, uniqueTaskQueue } from '../helpers/temporal-env.js';
import { tempDir } from '../helpers/temp-dir.js';

const DESCRIPTION = `
name: packaged
version: 1.32.4
repository: [1.32.4, 1.33.7]
nodes:
  - {name: cp, role: control-plane}
`;
const pkg = JSON.parse(readFileSync(join(repoRoot, 'package.json'), 'utf8')) as { name: string; version: string };
/** Folders and files of the checkout that are the test world or the build's inputs, never the product. */
const NOT_SHIPPED = /^(test|sim|bench|demo|stack|examples|dist\/(test|sim|bench|demo|stack))\/|\.ts$|\.map$|tsbuildinfo/;

const run = (cmd: string, args: string[], cwd: string, env: NodeJS.ProcessEnv = process.env) => {
  const r = spawnSync(cmd, args, { cwd, env, encoding: 'utf8', timeout: 240_000 });
  assert.equal(r.status, 0, `${cmd} ${args.join(' ')}: ${r.stderr}${r.stdout}`);
  return r.stdout;
};

function spawnAsync(cmd: string, args: string[], options: { cwd: string; env?: NodeJS.ProcessEnv }) {
  return new Promise<{ code: number | null; stdout: string; stderr: string }>((done) => {
    const p = spawn(cmd, args, options);
    let stdout = '';
    let stderr = '';
    p.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    p.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    p.on('close', (code) => done({ code, stdout, stderr }));
  });
}

describe('the npm package, installed into an empty prefix', () => {
  let registry: LockfileRegistry;
  let files: string[];
  let prefix: string;
  let elsewhere: string;
  let installed: string;
  // The installed command with nothing of the repository around it: another folder, no SKEWLESS_*/TEMPORAL_*.
  const env = (): NodeJS.ProcessEnv => ({
    ...Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('TEMPORAL_') && !k.startsWith('SKEWLESS_'))),
    PATH: `${join(prefix, 'bin')}:${dirname(process.execPath)}:/usr/bin:/bin`,
  });
  const skewless = (args: string[], extra: NodeJS.ProcessEnv = {}) => {
    const r = spawnSync('skewless', args, { cwd: elsewhere, env: { ...env(), ...extra }, encoding: 'utf8', timeout: 60_000 });
    return { code: r.status, stdout: r.stdout, stderr: r.stderr };
  };

  before(async () => {
    const out = tempDir('pack');
    // --ignore-scripts: the suite has built dist/ already; the pack's own build (prepare: rm -rf dist
    // first) would pull it from under the tests running beside this one.
    const [packed] = JSON.parse(run('npm', ['pack', '--ignore-scripts', '--json', '--pack-destination', out], repoRoot)) as {
      filename: string;
      files: { path: string }[];
    }[];
    files = packed!.files.map((f) => f.path);
    registry = await startLockfileRegistry(join(repoRoot, 'package-lock.json'), join(homedir(), '.npm'));
    prefix = tempDir('prefix');
    elsewhere = tempDir('elsewhere');
    const npmArgs = ['install', '-g', '--prefix', prefix, '--registry', registry.url, '--cache', tempDir('npm-cache')];
    // Asynchronously: the registry answers from this process.
    const install = await spawnAsync('npm', [...npmArgs, '--no-audit', '--no-fund', join(out, packed!.filename)], { cwd: elsewhere });
    assert.equal(install.code, 0, `npm install -g: ${install.stderr}${install.stdout}`);
    installed = join(prefix, 'lib', 'node_modules', pkg.name);
  });
  after(async () => {
    await registry?.stop();
  });

  it('holds the product only: the compiled code, the workflow bundle, bin/, docs/ and deploy/', () => {
    for (const f of [
      'bin/skewless.js',
      'dist/client/cli.js',
      'dist/worker/main.js',
      'dist/workflow-bundle.js',
      'deploy/rbac.yaml',
      'docs/deployment.md',
    ])
      assert.ok(files.includes(f), `${f} is in the tarball`);
    const stray = files.filter((f) => NOT_SHIPPED.test(f));
    assert.deepEqual(stray, [], 'no test, simulation, benchmark, source or map file');
    assert.ok(files.length < 400, `${files.length} files`);
  });

  it("every relative import of a shipped module is shipped too (rehearse's twin alone reaches the simulation)", () => {
    const shipped = new Set(files);
    const missing: string[] = [];
    for (const f of files.filter((p) => p.endsWith('.js') && p !== 'dist/workflow-bundle.js')) {
      const code = readFileSync(join(installed, f), 'utf8');
      for (const m of code.matchAll(/(?:from\s+|import\(\s*)'(\.{1,2}\/[^']+)'/g)) {
        const target = relative(installed, resolve(installed, dirname(f), m[1] as string));
        if (!shipped.has(target)) missing.push(`${f} → ${target}`);
      }
    }
    assert.deepEqual(
      missing.filter((m) => !m.startsWith('dist/client/rehearse/twin.js → dist/sim/')),
      [],
    );
    assert.ok(missing.length > 0, 'the twin does import the simulation (else this exception is stale)');
  });

  it('skewless --help and version run from another folder; the build id is the bundle it shipped', () => {
    const help = skewless(['--help']);
    assert.equal(help.code, 0, help.stderr);
    assert.match(help.stdout, /^Usage: skewless COMMAND/);
    assert.match(help.stdout, /\n {2}worker {7}/);
    const bundle = readFileSync(join(installed, 'dist', 'workflow-bundle.js'));
    const buildId = createHash('sha256').update(bundle).digest('hex').slice(0, 12);
    const sdk = (
      JSON.parse(readFileSync(join(installed, 'node_modules', '@temporalio', 'client', 'package.json'), 'utf8')) as { version: string }
    ).version;
    for (const args of [
      ['version', '--output', 'json'],
      ['--version', '--output', 'json'],
    ]) {
      const r = skewless(args);
      assert.equal(r.code, 0, r.stderr);
      assert.deepEqual(JSON.parse(r.stdout), { version: pkg.version, workflowBuildId: buildId, temporalSdk: sdk });
    }
    assert.equal(skewless(['version']).stdout, `skewless ${pkg.version}\nworkflow build ${buildId}\nTemporal TypeScript SDK ${sdk}\n`);
  });

  it('plan from files runs there', () => {
    writeFileSync(
      join(elsewhere, 'inv.json'),
      JSON.stringify({ apiservers: [{ node: 'cp1', version: '1.32.4' }], kubelets: [{ node: 'w1', version: '1.32.4' }] }),
    );
    writeFileSync(join(elsewhere, 'av.json'), JSON.stringify(['1.32.4', '1.33.7', '1.34.2']));
    const plan = skewless(['plan', '--inventory', 'inv.json', '--available', 'av.json', '--to', '1.34', '--output', 'json']);
    assert.equal(plan.code, 0, plan.stderr);
    assert.deepEqual((JSON.parse(plan.stdout) as { hops: string[] }).hops, ['1.33.7', '1.34.2']);
  });

  describe('against a simulated cluster', () => {
    let tenv: TestWorkflowEnvironment;
    let tc: TestCluster;
    const children: ReturnType<typeof spawn>[] = [];
    before(async () => {
      [tenv, tc] = await startClusterWorld(DESCRIPTION);
    });
    after(async () => {
      for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
      await tc?.stop();
      await tenv?.teardown();
    });

    const cli = (args: string[], vars: NodeJS.ProcessEnv) => spawnAsync('skewless', args, { cwd: elsewhere, env: vars });

    it('the installed worker (its shipped bundle) and plan --cluster read the live cluster; rehearse says its twin is not shipped', async () => {
      const taskQueue = uniqueTaskQueue('packaged');
      const vars = { ...env(), ...temporalVars(tenv), SKEWLESS_TASK_QUEUE: taskQueue };
      const worker = spawn('skewless', ['worker', '--clusters-dir', tc.clustersDir], { cwd: elsewhere, env: vars });
      children.push(worker);
      let log = '';
      worker.stderr.on('data', (d: Buffer) => (log += d.toString()));
      const deadline = Date.now() + 60_000;
      while (!log.includes('skewless worker: task queue')) {
        assert.ok(Date.now() < deadline && worker.exitCode === null, `the worker did not start: ${log}`);
        await new Promise((r) => setTimeout(r, 200));
      }
      const plan = await cli(['plan', '--cluster', 'packaged', '--to', '1.33', '--output', 'json'], vars);
      assert.equal(plan.code, 0, plan.stderr + log);
      const result = JSON.parse(plan.stdout) as { hops: string[] };
      assert.deepEqual(result.hops, ['1.33.7']);
      assert.doesNotMatch(log, /bundl(ing|e) workflow code/i, 'the worker loaded the shipped bundle, it did not bundle at start');

      assert.ok(!existsSync(join(installed, 'dist', 'sim')));
      const rehearse = await cli(['rehearse', '--cluster', 'packaged', '--to', '1.33', '--repository', '1.32.4,1.33.7'], vars);
      assert.equal(rehearse.code, 1, rehearse.stderr);
      assert.equal(
        rehearse.stderr.trim(),
        'skewless: rehearse runs a simulated twin, which comes with a clone of the repository, not with the npm package',
      );
      worker.kill('SIGTERM');
    });
  });
});
