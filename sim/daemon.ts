import { rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { join } from 'node:path';
import { loadClusterConfig } from '../activities/cluster-config.js';
import { readDescription, type SimDescription } from './description.js';
import { startSimulation } from './simulation.js';

/**
 * The process behind `sim up`: runs one simulation until SIGTERM/SIGINT, then stops everything it
 * started. It writes <state>/daemon.json once ready (pid, control port) and removes it on exit.
 * A small loopback HTTP endpoint lets `sim fault` change host faults at run time; machines come and
 * go through the simulation's machine API (`sim machine`).
 */
async function run(): Promise<void> {
  const [file, stateDir] = process.argv.slice(2);
  if (!file || !stateDir) throw new Error('usage: daemon.js DESCRIPTION STATE_DIR');
  const description = readDescription(file);
  // Handlers first: the components then leave their shutdown to us (see ManagedProcess).
  let shutdown: () => Promise<void> = async () => process.exit(1);
  process.on('SIGTERM', () => void shutdown());
  process.on('SIGINT', () => void shutdown());
  const sim = await startSimulation(description, { stateDir });

  const control = createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      try {
        if (req.url === '/faults' && req.method === 'GET') {
          const faults = Object.fromEntries(sim.hosts.hosts.map((h) => [h.name, sim.hosts.activeFaults(h.name)]));
          res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(faults));
          return;
        }
        const m = /^\/hosts\/([a-z0-9-]+)\/faults$/.exec(req.url ?? '');
        if (!m || !m[1]) throw new Error(`unknown path ${req.url}`);
        if (req.method === 'POST')
          sim.hosts.setFault(m[1], JSON.parse(body), { sentBySkewless: configuredCommands(stateDir, description) });
        else if (req.method === 'DELETE') sim.hosts.clearFaults(m[1]);
        else throw new Error(`unsupported method ${req.method}`);
        res.writeHead(204).end();
      } catch (err) {
        res.writeHead(400, { 'content-type': 'text/plain' }).end((err as Error).message);
      }
    });
  });
  await new Promise<void>((resolve) => control.listen(0, '127.0.0.1', resolve));
  const address = control.address();
  const daemonFile = join(stateDir, 'daemon.json');
  const writeDaemonFile = () =>
    writeFileSync(
      daemonFile,
      JSON.stringify(
        { pid: process.pid, controlPort: typeof address === 'object' && address ? address.port : 0, ...sim.endpoints },
        null,
        2,
      ),
    );
  writeDaemonFile();
  // Machines created or deleted through the machine API (sim machine create|delete) change the hosts.
  sim.onEndpointsChanged(() => {
    if (!stopping) writeDaemonFile();
  });

  let stopping = false;
  shutdown = async () => {
    if (stopping) return;
    stopping = true;
    control.close();
    await sim.stop();
    rmSync(daemonFile, { force: true });
    process.exit(0);
  };
}

/**
 * The host commands the worker's cluster configuration (<state>/clusters/NAME.yaml, as the worker reads
 * it) has skewless send beside its own: maintenance.command once an operator added it. A configuration
 * the worker would refuse configures nothing.
 */
function configuredCommands(stateDir: string, description: SimDescription): string[][] {
  try {
    const command = loadClusterConfig(join(stateDir, 'clusters'), description.name).maintenance?.command;
    return command ? [command] : [];
  } catch {
    return [];
  }
}

run().catch((err) => {
  console.error(`sim daemon: ${(err as Error).stack ?? err}`);
  process.exit(1);
});
