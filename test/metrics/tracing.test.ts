import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { freePort } from '../../tooling/free-port.js';
import { waitFor } from '../../sim/cluster/wait-for.js';
import { proceedSmokeSignal } from '../../workflows/messages.js';
import { toolchainSmokeWorkflow } from '../../workflows/index.js';
import { freshPrivateKey } from '../helpers/ssh-key.js';
import { cliAsync, spawnCli, type RunningCli } from '../helpers/spawn-cli.js';
import { startDevServer, uniqueTaskQueue, temporalVars } from '../helpers/temporal-env.js';
import { scrape, startOtlpReceiver, type OtlpReceiver } from './observability.js';
import { startTogether } from '../helpers/start-together.js';
import { tempDir } from '../helpers/temp-dir.js';

/** A clusters directory with one well-formed configuration (its files exist; nothing dials them). */
function clustersDir(): string {
  const dir = tempDir('clusters');
  for (const f of ['kubeconfig', 'known_hosts']) writeFileSync(join(dir, f), 'x');
  writeFileSync(join(dir, 'id_ed25519'), freshPrivateKey());
  mkdirSync(join(dir, 'conf'));
  writeFileSync(
    join(dir, 'conf', 'lab.yaml'),
    [
      'name: lab',
      `kubeconfig: ${dir}/kubeconfig`,
      'ssh:',
      '  user: skewless',
      `  privateKeyPath: ${dir}/id_ed25519`,
      `  knownHostsPath: ${dir}/known_hosts`,
      'snapshots:',
      `  dir: ${dir}/snapshots`,
      '',
    ].join('\n'),
  );
  return join(dir, 'conf');
}

// The plain environment, so a SKEWLESS_* or OTEL_* variable of the machine running the tests changes nothing.
const cleanEnv = () => Object.fromEntries(Object.entries(process.env).filter(([k]) => !/^(TEMPORAL|SKEWLESS|OTEL)_/.test(k)));
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const oneLine = (stderr: string, message: RegExp) => {
  assert.equal(stderr.trim().split('\n').length, 1, stderr);
  assert.match(stderr, message);
};

/**
 * Tracing is off unless SKEWLESS_OTLP_ENDPOINT (or --otlp-endpoint) is set: then the smallest
 * workflow's spans and its activity's arrive at a local OTLP/HTTP endpoint with the workflow id;
 * without it nothing is sent, even with OpenTelemetry's own OTEL_EXPORTER_OTLP_* variables pointing
 * at the same endpoint. Bad metrics and tracing settings are one line and exit 2, before connecting.
 */
describe('skewless worker: tracing on and off, and bad observability settings', () => {
  let env: TestWorkflowEnvironment;
  let otlp: OtlpReceiver;
  const workers: RunningCli[] = [];
  const dir = clustersDir();

  before(async () => {
    [env, otlp] = await startTogether([startDevServer(), startOtlpReceiver()]);
  });
  after(async () => {
    for (const w of workers) if (w.child.exitCode === null && w.child.signalCode === null) w.child.kill('SIGKILL');
    await env?.teardown();
    await otlp?.close();
  });

  /** A worker process on its own queue, and one smoke workflow run to its end on it. */
  const runSmoke = async (name: string, extraArgs: string[], extraEnv: NodeJS.ProcessEnv) => {
    const taskQueue = uniqueTaskQueue(name);
    const worker = spawnCli(['worker', '--clusters-dir', dir, '--task-queue', taskQueue, ...extraArgs], {
      ...cleanEnv(),
      ...temporalVars(env),
      ...extraEnv,
    });
    workers.push(worker);
    await waitFor('the worker polling', () => worker.stderr().includes('skewless worker: task queue'), 120_000, 100).catch((err: Error) => {
      throw new Error(`${err.message}\n${worker.stderr()}`);
    });
    const workflowId = `smoke/${taskQueue}`;
    const handle = await env.client.workflow.start(toolchainSmokeWorkflow, {
      taskQueue,
      workflowId,
      args: [{ from: '1.32.4', to: '1.33', available: ['1.32.4', '1.33.7'] }],
    });
    await handle.signal(proceedSmokeSignal, { by: 'tracing test' });
    await handle.result();
    worker.child.kill('SIGTERM'); // its shutdown exports what is still buffered
    const exited = await worker.exited;
    assert.equal(exited.code, 0, exited.stderr);
    return { workflowId, stderr: exited.stderr };
  };

  it("with SKEWLESS_OTLP_ENDPOINT, the workflow's and its activity's spans arrive with the workflow id, as OTLP JSON", async () => {
    const { workflowId, stderr } = await runSmoke('traced', [], { SKEWLESS_OTLP_ENDPOINT: otlp.url });
    assert.match(stderr, /traces to the OTLP endpoint/);
    await waitFor(
      'the workflow and activity spans',
      () =>
        otlp.spans.some((s) => s.name === 'RunWorkflow:toolchainSmokeWorkflow' && s.attributes.workflowId === workflowId) &&
        otlp.spans.some((s) => s.name === 'RunActivity:describeWorker' && s.attributes.temporalWorkflowId === workflowId),
      30_000,
      200,
    ).catch((err: Error) => {
      throw new Error(`${err.message}; received: ${otlp.spans.map((s) => s.name).join(', ')}`);
    });
    const run = otlp.spans.find((s) => s.name === 'RunWorkflow:toolchainSmokeWorkflow' && s.attributes.workflowId === workflowId);
    const activity = otlp.spans.find((s) => s.name === 'RunActivity:describeWorker' && s.attributes.temporalWorkflowId === workflowId);
    assert.equal(activity?.traceId, run?.traceId, "one trace: the activity continues the workflow's");
    const scheduled = otlp.spans.find((s) => s.spanId === activity?.parentSpanId);
    assert.equal(scheduled?.name, 'StartActivity:describeWorker', "the activity's span is the child of the workflow's StartActivity");
    assert.equal(scheduled?.parentSpanId, run?.spanId);
    assert.ok(
      otlp.requests.length > 0 &&
        otlp.requests.every((r) => r.method === 'POST' && r.path === '/v1/traces' && r.contentType.startsWith('application/json')),
    );
  });

  it('without it nothing is sent, even with OTEL_EXPORTER_OTLP_* pointing at the same endpoint', async () => {
    const before = otlp.requests.length;
    const { stderr } = await runSmoke('untraced', [], {
      OTEL_EXPORTER_OTLP_ENDPOINT: otlp.url.replace(/\/v1\/traces$/, ''),
      OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: otlp.url,
    });
    assert.doesNotMatch(stderr, /traces|metrics on/);
    await sleep(3_000); // longer than the span processor's 1 s batch delay
    assert.equal(otlp.requests.length, before, 'no request reached the endpoint');
  });

  it('--metrics-address serves /metrics; bad settings are one line and exit 2, before connecting', async () => {
    const address = `127.0.0.1:${await freePort()}`;
    const taskQueue = uniqueTaskQueue('metrics-flag');
    const worker = spawnCli(['worker', '--clusters-dir', dir, '--task-queue', taskQueue, '--metrics-address', address], {
      ...cleanEnv(),
      ...temporalVars(env),
    });
    workers.push(worker);
    await waitFor('the worker polling', () => worker.stderr().includes('skewless worker: task queue'), 120_000, 100);
    // Metrics on, traces off: the start-up line names no OTLP endpoint after the metrics' address.
    assert.match(worker.stderr(), new RegExp(`metrics on http://${address.replace(/\./g, '\\.')}/metrics(?!; traces)[;\n]`));
    const samples = await scrape(address);
    assert.ok(
      samples.some((s) => s.name.startsWith('temporal_')),
      samples.map((s) => s.name).join(' '),
    );

    // The port it holds, taken by a second worker; a host name (the SDK binds addresses only); not a URL.
    const busy = createServer();
    await new Promise<void>((r) => busy.listen(0, '127.0.0.1', () => r()));
    const busyPort = (busy.address() as { port: number }).port;
    const unreachable = `127.0.0.1:${await freePort()}`;
    const cases: [string[], NodeJS.ProcessEnv, RegExp][] = [
      [
        ['--metrics-address', `127.0.0.1:${busyPort}`],
        {},
        new RegExp(`^skewless: cannot serve metrics on 127\\.0\\.0\\.1:${busyPort}: Address already in use`),
      ],
      [['--metrics-address', 'localhost:9464'], {}, /^skewless: --metrics-address must be IP:PORT to listen on .*got "localhost:9464"/],
      [[], { SKEWLESS_METRICS_ADDRESS: '0.0.0.0' }, /^skewless: SKEWLESS_METRICS_ADDRESS must be IP:PORT/],
      [
        [],
        { SKEWLESS_OTLP_ENDPOINT: 'collector:4318' },
        /^skewless: SKEWLESS_OTLP_ENDPOINT must be the http\(s\) URL of an OTLP\/HTTP traces endpoint/,
      ],
      [
        ['--otlp-endpoint', 'http://user:s3cret@collector:4318/v1/traces'],
        {},
        /^skewless: --otlp-endpoint must be .*without credentials\n$/,
      ],
    ];
    try {
      for (const [args, vars, message] of cases) {
        // An unreachable Temporal: exit 2, not 3, shows the setting was refused before any connection.
        const r = await cliAsync(['worker', '--clusters-dir', dir, ...args], { ...cleanEnv(), TEMPORAL_ADDRESS: unreachable, ...vars });
        assert.equal(r.code, 2, `${args.join(' ')} ${JSON.stringify(vars)}: ${r.stderr}`);
        oneLine(r.stderr, message);
        assert.ok(!r.stderr.includes('s3cret'), 'a credential in the URL is never shown');
      }
    } finally {
      busy.close();
    }
    worker.child.kill('SIGTERM');
    assert.equal((await worker.exited).code, 0);
  });
});
