import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { parseDescription } from './description.js';
import { startSimulation } from './simulation.js';

/**
 * Measures `sim up` at a given size: wall time until the cluster is in the described state, and the
 * resident memory of the whole simulation (this process with the SSH hosts, plus every component).
 * Usage: node dist/sim/scale-check.js --workers 1000 --pods 10000
 */
const rssKiB = (pid: number | undefined) => {
  if (!pid) return 0;
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) : 0;
};

async function run(): Promise<void> {
  const { values } = parseArgs({ options: { workers: { type: 'string', default: '10' }, pods: { type: 'string', default: '100' } } });
  const workers = Number(values.workers);
  const pods = Number(values.pods);
  const deployments = Math.max(1, Math.round(pods / 100));
  const yaml = [
    'name: scale',
    'version: 1.33.7',
    'repository: [1.33.7, 1.34.2]',
    'nodes:',
    '  - {name: cp, role: control-plane, count: 3}',
    `  - {name: worker, role: worker, count: ${workers}}`,
    'workloads:',
    ...Array.from(
      { length: deployments },
      (_, i) => `  - {kind: Deployment, name: app-${i + 1}, replicas: ${Math.round(pods / deployments)}, pdb: {maxUnavailable: 1}}`,
    ),
    '',
  ].join('\n');
  const stateDir = mkdtempSync(join(tmpdir(), 'skewless-scale-'));
  const started = Date.now();
  const sim = await startSimulation(parseDescription(yaml), { stateDir, timeoutMs: 1_800_000 });
  const upSeconds = (Date.now() - started) / 1000;
  const components = Object.fromEntries(
    Object.entries(sim.controlPlane.running()).map(([name, p]) => [name, Math.round(rssKiB(p.pid) / 1024)]),
  );
  const self = Math.round(rssKiB(process.pid) / 1024);
  const total = self + Object.values(components).reduce((a, b) => a + b, 0);
  console.log(JSON.stringify({ workers, controlPlanes: 3, pods, upSeconds, rssMiB: { total, hostsAndDriver: self, ...components } }));
  await sim.stop();
  rmSync(stateDir, { recursive: true, force: true });
}

run().catch((err) => {
  console.error(err);
  process.exit(1);
});
