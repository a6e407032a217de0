// deploy/systemd/skewless-worker.service, checked as far as a machine without systemd as PID 1 allows:
// `systemd-analyze verify` on the file as shipped, the hardening read off the parsed unit, and the
// worker started with exactly the unit's ExecStart and Environment lines against the dev server.
// What systemd itself would add is added the way it documents: the directories it makes
// (ConfigurationDirectory=, StateDirectory=, LoadCredential=) as $CONFIGURATION_DIRECTORY,
// $STATE_DIRECTORY and $CREDENTIALS_DIRECTORY, the optional EnvironmentFile= (a site's Temporal
// connection, which overrides Environment=), and ${VAR} expanded in ExecStart.
import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { freePort } from '../../tooling/free-port.js';
import { proceedSmokeSignal } from '../../workflows/messages.js';
import { toolchainSmokeWorkflow } from '../../workflows/index.js';
import { repoRoot } from '../helpers/run-cli.js';
import { freshPrivateKey } from '../helpers/ssh-key.js';
import { startDevServer, temporalVars } from '../helpers/temporal-env.js';
import { tempDir } from '../helpers/temp-dir.js';

const UNIT = join(repoRoot, 'deploy', 'systemd', 'skewless-worker.service');
/** Where `npm install -g` (prefix /usr) puts the command; here, the checkout's own. */
const INSTALLED = '/usr/bin/skewless';

/** The unit's [section] → key → values, in order (a key may repeat), as systemd reads it. */
function parseUnit(text: string): Record<string, Record<string, string[]>> {
  const unit: Record<string, Record<string, string[]>> = {};
  let section = '';
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (line === '' || line.startsWith('#') || line.startsWith(';')) continue;
    const header = /^\[(.+)\]$/.exec(line);
    if (header) {
      section = header[1] as string;
      unit[section] ??= {};
      continue;
    }
    const eq = line.indexOf('=');
    assert.ok(eq > 0 && section, `not a unit line: ${line}`);
    ((unit[section] as Record<string, string[]>)[line.slice(0, eq)] ??= []).push(line.slice(eq + 1));
  }
  return unit;
}

const unit = parseUnit(readFileSync(UNIT, 'utf8'));
const service = unit.Service as Record<string, string[]>;
const one = (key: string) => {
  assert.equal(service[key]?.length, 1, `one ${key}=`);
  return service[key]![0] as string;
};

describe('deploy/systemd/skewless-worker.service', () => {
  it('passes systemd-analyze verify (only the command may be missing on a machine without the package)', (t) => {
    const r = spawnSync('systemd-analyze', ['verify', UNIT], { encoding: 'utf8', timeout: 60_000 });
    if (r.error && (r.error as NodeJS.ErrnoException).code === 'ENOENT') return t.skip('systemd-analyze is not installed here');
    const complaints = r.stderr
      .split('\n')
      .filter((l) => l.trim() !== '')
      .filter(
        (l) => existsSync(INSTALLED) || l !== `skewless-worker.service: Command ${INSTALLED} is not executable: No such file or directory`,
      );
    assert.deepEqual(complaints, [], r.stderr);
  });

  it('is hardened: its own user, nothing of the system writable, the secrets as credentials', () => {
    for (const [key, value] of Object.entries({
      DynamicUser: 'yes',
      ProtectSystem: 'strict',
      ProtectHome: 'yes',
      PrivateTmp: 'yes',
      NoNewPrivileges: 'yes',
      CapabilityBoundingSet: '',
      StateDirectory: 'skewless',
      ConfigurationDirectory: 'skewless',
      LoadCredential: 'secrets:/etc/skewless/secrets',
      ReadOnlyPaths: '/etc/skewless',
      RestartPreventExitStatus: '2',
    }))
      assert.equal(one(key), value, key);
    assert.equal(service.MemoryDenyWriteExecute, undefined, "Node's JIT needs writable executable memory");
    assert.ok(Number(one('TimeoutStopSec')) > 30, 'longer than the worker’s shutdown grace');
    assert.ok(!JSON.stringify(service.Environment).match(/KEY|TOKEN|PASSWORD/i), 'no secret in an Environment= line');
  });

  describe('the worker, started with exactly its ExecStart and Environment lines', () => {
    let env: TestWorkflowEnvironment;
    let child: ChildProcess | undefined;
    before(async () => {
      env = await startDevServer();
    });
    after(async () => {
      if (child && child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      await env?.teardown();
    });

    it('polls the unit’s task queue with the configurations of $CONFIGURATION_DIRECTORY, serves metrics, stops on SIGTERM', async () => {
      // What systemd makes before the start.
      const configDir = tempDir('unit-etc');
      const stateDir = tempDir('unit-state');
      const credentials = tempDir('unit-credentials');
      for (const f of ['kubeconfig', 'known_hosts']) writeFileSync(join(credentials, `secrets_${f}`), 'x');
      writeFileSync(join(credentials, 'secrets_id_ed25519'), freshPrivateKey()); // the worker parses the key at start-up
      mkdirSync(join(configDir, 'clusters'));
      writeFileSync(
        join(configDir, 'clusters', 'lab.yaml'),
        [
          'name: lab',
          `kubeconfig: ${credentials}/secrets_kubeconfig`,
          `ssh: {user: skewless, privateKeyPath: ${credentials}/secrets_id_ed25519, knownHostsPath: ${credentials}/secrets_known_hosts}`,
          `snapshots: {dir: ${stateDir}/snapshots}`,
          '',
        ].join('\n'),
      );
      const metricsPort = await freePort();
      const site = { ...temporalVars(env), SKEWLESS_METRICS_ADDRESS: `127.0.0.1:${metricsPort}` }; // EnvironmentFile=
      const systemdVars = { CONFIGURATION_DIRECTORY: configDir, STATE_DIRECTORY: stateDir, CREDENTIALS_DIRECTORY: credentials };
      const unitVars = Object.fromEntries(
        (service.Environment ?? []).map((assignment) => {
          const eq = assignment.indexOf('=');
          return [assignment.slice(0, eq), assignment.slice(eq + 1)];
        }),
      );
      const vars: Record<string, string> = { PATH: process.env.PATH ?? '/usr/bin:/bin', ...unitVars, ...site, ...systemdVars };
      const argv = one('ExecStart')
        .split(/\s+/)
        .map((word) =>
          word.replace(/\$\{([A-Z_]+)\}/g, (_, name: string) => vars[name] ?? assert.fail(`ExecStart names \${${name}}, unset`)),
        );
      assert.equal(argv[0], INSTALLED);
      assert.equal(one('EnvironmentFile'), '-/etc/skewless/worker.env', 'optional: the unit starts without it');

      child = spawn(process.execPath, [join(repoRoot, 'bin', 'skewless.js'), ...argv.slice(1)], { env: vars, cwd: stateDir });
      let log = '';
      child.stderr?.on('data', (d: Buffer) => (log += d.toString()));
      const exited = new Promise<number | null>((r) => child!.on('exit', (code) => r(code)));
      const deadline = Date.now() + 60_000;
      while (!log.includes('skewless worker: task queue')) {
        assert.ok(Date.now() < deadline && child.exitCode === null, `the worker did not start: ${log}`);
        await new Promise((r) => setTimeout(r, 200));
      }
      assert.match(
        log,
        new RegExp(`task queue ${unitVars.SKEWLESS_TASK_QUEUE} on ${env.address}, .*clusters lab from ${configDir}/clusters`),
      );

      const handle = await env.client.workflow.start(toolchainSmokeWorkflow, {
        taskQueue: unitVars.SKEWLESS_TASK_QUEUE as string,
        workflowId: `smoke/systemd-unit/${process.pid}`,
        args: [{ from: '1.32.4', to: '1.34', available: ['1.32.4', '1.33.7', '1.34.2'] }],
      });
      await handle.signal(proceedSmokeSignal, { by: 'systemd unit test' });
      assert.deepEqual((await handle.result()).hops, ['1.33.7', '1.34.2']);
      const metrics = await fetch(`http://127.0.0.1:${metricsPort}/metrics`);
      assert.equal(metrics.status, 200);

      child.kill(one('KillSignal') as NodeJS.Signals);
      assert.equal(await exited, 0, log);
      assert.match(log, /skewless worker: stopped/);
    });
  });
});
