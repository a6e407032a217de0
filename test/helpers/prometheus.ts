import { execFileSync } from 'node:child_process';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ManagedProcess } from '../../tooling/managed-process.js';
import { httpGet, waitFor } from '../../sim/cluster/wait-for.js';
import { freePort } from '../../tooling/free-port.js';
import { tempDir } from './temp-dir.js';

/**
 * A real Prometheus (Debian's package, scripts/ensure-prometheus.sh) on loopback for the alert gate's
 * tests: its own configuration, rules and data dir in a temp dir, scraping a tiny HTTP server of the
 * test that serves gauges the test sets. Each alert rule fires while its gauge is above 0 (no `for:`),
 * scrape and rule evaluation every second, so an alert fires or clears about 1-2 s after the flip.
 * It runs as a ManagedProcess: stopped by `stop()`, and killed with the test process however that
 * ends (exit handlers, and the kernel's parent-death signal when the runner SIGKILLs it).
 */

const repoRoot = fileURLToPath(new URL('../../../', import.meta.url));

/** The binary, installed once if missing (root needed then; any user may run it). */
export function prometheusBinary(): string {
  return execFileSync('bash', [join(repoRoot, 'scripts', 'ensure-prometheus.sh')], {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'inherit'],
  }).trim();
}

export interface AlertRule {
  /** The alert's name; its gauge is `skewless_test_<name lowercased>`. */
  alert: string;
  labels?: Record<string, string>;
  /** The rule's `for:` (e.g. `1h`): pending that long before it fires. Default none: it fires at once. */
  for?: string;
}

export interface TestPrometheus {
  /** `http://127.0.0.1:PORT`. */
  url: string;
  /** Sets the gauge behind `alert`: above 0 it fires (within the scrape and evaluation intervals), 0 clears it. */
  setGauge(alert: string, value: number): void;
  /** Waits until Prometheus reports exactly `alerts` firing (names, sorted). */
  waitForFiring(alerts: string[], timeoutMs?: number): Promise<void>;
  /** Waits until Prometheus reports exactly `alerts` pending. */
  waitForPending(alerts: string[], timeoutMs?: number): Promise<void>;
  /** Stops the server (SIGTERM, then SIGKILL); the target keeps serving. */
  stop(): Promise<void>;
  /** Stops everything and removes the temp dir. */
  close(): Promise<void>;
  /** Milliseconds from the spawn to /-/ready. */
  startMs: number;
  version: string;
}

const gaugeOf = (alert: string) => `skewless_test_${alert.toLowerCase()}`;
const same = (a: string[], b: string[]) => JSON.stringify([...a].sort()) === JSON.stringify([...b].sort());

export async function startPrometheus(rules: AlertRule[]): Promise<TestPrometheus> {
  const binary = prometheusBinary();
  const version = /version (\S+)/.exec(execFileSync(binary, ['--version'], { encoding: 'utf8' }))?.[1] ?? 'unknown';
  const dir = tempDir('prometheus');
  const gauges = new Map(rules.map((r) => [r.alert, 0]));
  const target: Server = createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'text/plain; version=0.0.4' });
    res.end([...gauges].map(([alert, v]) => `# TYPE ${gaugeOf(alert)} gauge\n${gaugeOf(alert)} ${v}\n`).join(''));
  });
  await new Promise<void>((resolve) => target.listen(0, '127.0.0.1', resolve));
  const targetPort = (target.address() as AddressInfo).port;

  const port = await freePort();
  mkdirSync(join(dir, 'data'));
  writeFileSync(
    join(dir, 'rules.yml'),
    JSON.stringify({
      groups: [
        {
          name: 'skewless-test',
          interval: '1s',
          rules: rules.map((r) => ({
            alert: r.alert,
            expr: `${gaugeOf(r.alert)} > 0`,
            labels: r.labels ?? {},
            ...(r.for ? { for: r.for } : {}),
          })),
        },
      ],
    }),
  );
  // JSON is YAML: no YAML writer needed.
  writeFileSync(
    join(dir, 'prometheus.yml'),
    JSON.stringify({
      global: { scrape_interval: '1s', scrape_timeout: '1s', evaluation_interval: '1s' },
      rule_files: [join(dir, 'rules.yml')],
      scrape_configs: [{ job_name: 'skewless-test', static_configs: [{ targets: [`127.0.0.1:${targetPort}`] }] }],
    }),
  );
  const args = [
    `--config.file=${join(dir, 'prometheus.yml')}`,
    `--storage.tsdb.path=${join(dir, 'data')}`,
    `--web.listen-address=127.0.0.1:${port}`,
    '--log.level=warn',
  ];
  const server = new ManagedProcess('prometheus', binary, args, join(dir, 'prometheus.log'));
  const url = `http://127.0.0.1:${port}`;
  const started = Date.now();
  server.start();
  await waitFor(
    'Prometheus ready',
    async () => {
      server.assertAlive();
      return (await httpGet(`${url}/-/ready`)).status === 200;
    },
    30_000,
    50,
  );
  const startMs = Date.now() - started;

  const inState = async (state: 'firing' | 'pending'): Promise<string[]> => {
    const { body } = await httpGet(`${url}/api/v1/query?query=${encodeURIComponent(`ALERTS{alertstate="${state}"}`)}`);
    const result = (JSON.parse(body) as { data: { result: { metric: { alertname: string } }[] } }).data.result;
    return result.map((r) => r.metric.alertname).sort();
  };
  return {
    url,
    startMs,
    version,
    setGauge: (alert, value) => {
      if (!gauges.has(alert)) throw new Error(`no rule for alert ${alert}`);
      gauges.set(alert, value);
    },
    waitForFiring: (alerts, timeoutMs = 20_000) =>
      waitFor(`alerts firing: [${alerts.join(', ')}]`, async () => same(await inState('firing'), alerts), timeoutMs, 100),
    waitForPending: (alerts, timeoutMs = 20_000) =>
      waitFor(`alerts pending: [${alerts.join(', ')}]`, async () => same(await inState('pending'), alerts), timeoutMs, 100),
    stop: () => server.stop(),
    close: async () => {
      await server.stop();
      await new Promise<void>((resolve) => target.close(() => resolve()));
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
