import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { TimelineBar, TimelinePhase } from '../client/timeline/timeline-model.js';
import { TIMELINE_PHASES } from '../client/timeline/timeline-model.js';
import type { ProcessRegistry } from '../demo/processes.js';
import type { SimBinaries } from '../sim/cluster/binaries.js';
import type { Simulation } from '../sim/simulation.js';

/**
 * One run of the articles' runbook (bench/baseline.sh) against a simulated cluster: the real
 * kubectl of the simulation's Kubernetes and the real OpenSSH client, with the keys and
 * known_hosts the worker uses, an admin kubeconfig as an operator has.
 */

const SCRIPT = fileURLToPath(new URL('../../bench/baseline.sh', import.meta.url));

export interface BaselineOutcome {
  wallSeconds: number;
  bars: TimelineBar[];
}

export async function runBaseline(o: {
  sim: Simulation;
  binaries: SimBinaries;
  registry: ProcessRegistry;
  logsDir: string;
  versions: string[];
  label: string;
}): Promise<BaselineOutcome> {
  const roleOf = new Map(o.sim.description.nodes.map((n) => [n.name, n.role]));
  const hosts = [...o.sim.endpoints.ssh.hosts].sort(
    (a, b) =>
      Number(roleOf.get(a.name) === 'worker') - Number(roleOf.get(b.name) === 'worker') ||
      a.name.localeCompare(b.name, 'en', { numeric: true }),
  );
  const hostsFile = join(o.logsDir, `${o.label}.hosts`);
  writeFileSync(hostsFile, hosts.map((h) => `${h.name} ${h.port} ${roleOf.get(h.name)}`).join('\n') + '\n');
  const timeline = join(o.logsDir, `${o.label}.timeline`);
  writeFileSync(timeline, '');
  const env = {
    ...process.env,
    KUBECTL: o.binaries.bin('kubectl'),
    KUBECONFIG: o.sim.endpoints.adminKubeconfig,
    SSH_USER: o.sim.endpoints.ssh.user,
    SSH_KEY: o.sim.endpoints.ssh.privateKeyPath,
    KNOWN_HOSTS: o.sim.endpoints.ssh.knownHostsPath,
    HOSTS_FILE: hostsFile,
    VERSIONS: o.versions.join(' '),
    TIMELINE: timeline,
  };
  const started = Date.now();
  const run = o.registry.spawn(`baseline-${o.label}`, 'bash', [SCRIPT], { env, logFile: join(o.logsDir, `${o.label}.baseline.log`) });
  const code = await run.exited;
  const wallSeconds = (Date.now() - started) / 1000;
  if (code !== 0) throw new Error(`bench/baseline.sh exited ${code}; see ${join(o.logsDir, `${o.label}.baseline.log`)}`);
  return { wallSeconds, bars: parseTimelineLog(readFileSync(timeline, 'utf8')) };
}

/** The script's log, `NODE PHASE START_MS END_MS` per line, as timeline bars. */
export function parseTimelineLog(text: string): TimelineBar[] {
  return text
    .split('\n')
    .filter((l) => l.trim())
    .map((line) => {
      const [lane = '?', phase = 'other', start = '0', end = '0'] = line.trim().split(/\s+/);
      const known = (TIMELINE_PHASES as readonly string[]).includes(phase) ? (phase as TimelinePhase) : 'other';
      return { lane, phase: known, startMs: Number(start), endMs: Number(end) };
    });
}
