import { spawn, type ChildProcess } from 'node:child_process';
import { appendFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Client, Connection } from '@temporalio/client';
import { loadTemporalClient } from '../temporal-sdk.js';
import { DefaultLogger, NativeConnection, Runtime, type Worker } from '@temporalio/worker';
import { createClusterResolver } from '../../activities/host-address.js';
import { ensureSimBinaries } from '../../sim/cluster/binaries.js';
import { parseDescription, type SimDescription } from '../../sim/description.js';
import { readSimInventory, readVersionHistory, type VersionRecord } from '../../sim/cluster/version-recorder.js';
import type { SkewInventory } from '../../rules/skew-policy.js';
import { freePort } from '../../tooling/free-port.js';
import { startSimulation, type Simulation } from '../../sim/simulation.js';
import { ensureTemporalBinary } from '../../tooling/temporal-binary.js';
import { createSkewlessWorker } from '../../worker/create-worker.js';
import { devServerArgs } from '../commands/dev-server.js';
import { pollUntil } from '../../tooling/poll-until.js';

// The one product module that imports the test world (sim/), the worker's internals and activity
// implementations (lint-enforced, ARCHITECTURE.md): the rehearsal runs a simulation, a dev server and a
// worker of its own. What the rest of client/rehearse/ needs of sim/ it gets from here, types only.
export type { Latencies, PdbSpec, SimDescription, SimNode, WorkloadSpec } from '../../sim/description.js';
export type { VersionRecord } from '../../sim/cluster/version-recorder.js';

/** Refuses (DescriptionError) a description the simulation would refuse, before anything starts. */
export function checkTwinDescription(yaml: string): void {
  parseDescription(yaml, 'the twin description');
}

/**
 * The simulated twin `skewless rehearse` runs the upgrade on, all inside the CLI process and a temp
 * folder: the simulation (real apiserver, kwok, SSH hosts) started from the description, a Temporal
 * dev server of its own on free loopback ports (its history in the temp folder), and an in-process
 * worker holding the twin's credentials. Nothing of it talks to the real cluster or its Temporal.
 * `stop()` tears everything down and removes the folder; safe to call twice.
 */
export interface Twin {
  sim: Simulation;
  client: Client;
  taskQueue: string;
  stateDir: string;
  /** The nodes' versions at the end, and every version state recorded on the way (once the recorder has caught up). */
  versions(): Promise<{ final: SkewInventory; history: VersionRecord[] }>;
  stop(): Promise<void>;
}

const TASK_QUEUE = 'skewless-rehearse';

async function waitForServer(address: string, server: ChildProcess, signal: AbortSignal): Promise<Connection> {
  let exited = false;
  server.once('exit', () => (exited = true));
  const connected = async (): Promise<Connection | undefined> => {
    if (exited) throw new Error("the twin's Temporal dev server exited at start");
    try {
      const { Connection } = await loadTemporalClient();
      const connection = await Connection.connect({ address, connectTimeout: 1000 });
      await connection.workflowService.getSystemInfo({});
      return connection;
    } catch {
      return undefined; // not listening yet
    }
  };
  return pollUntil(
    connected,
    (c): c is Connection => c !== undefined,
    () => {
      throw new Error(`the twin's Temporal dev server did not answer at ${address} within 90 s`);
    },
    { timeoutMs: 90_000, intervalMs: 250, signal },
  );
}

/**
 * The in-process worker logs what it sees (a blocked drain is an activity failure, logged as such);
 * that is the twin's business, not the operator's terminal: it goes to a file in the twin's folder.
 * The SDK's runtime is one per process: installed once, before the first connection.
 */
function quietRuntime(logFile: string): void {
  try {
    Runtime.install({
      logger: new DefaultLogger('WARN', (entry) => {
        try {
          appendFileSync(logFile, `${entry.level} ${entry.message}\n`);
        } catch {
          // The twin's folder is gone (a line after the teardown): nobody would read it.
        }
      }),
    });
  } catch {
    // Already installed (a second twin in this process): its logger stays.
  }
}

/** Brings the twin up; on any failure (or `signal`) what was started is stopped before the error is thrown. */
export async function startTwin(description: SimDescription, o: { signal: AbortSignal; say: (line: string) => void }): Promise<Twin> {
  // Builds (first use only) block: before anything of ours runs, never beside the in-process worker.
  const binaries = ensureSimBinaries();
  const temporalBin = ensureTemporalBinary();
  const stateDir = mkdtempSync(join(tmpdir(), 'skewless-rehearse-'));
  let server: ChildProcess | undefined;
  let sim: Simulation | undefined;
  let simStarting: Promise<Simulation> | undefined;
  let connection: Connection | undefined;
  let native: NativeConnection | undefined;
  let worker: Worker | undefined;
  let running: Promise<void> | undefined;
  let stopped = false;

  const stop = async () => {
    if (stopped) return;
    stopped = true;
    if (worker && worker.getState() === 'RUNNING') worker.shutdown();
    await running?.catch(() => undefined);
    await native?.close().catch(() => undefined);
    await connection?.close().catch(() => undefined);
    sim ??= await simStarting?.catch(() => undefined);
    await sim?.stop().catch(() => undefined);
    if (server && server.exitCode === null) {
      const gone = new Promise((r) => server?.once('exit', r));
      server.kill('SIGTERM');
      await Promise.race([gone, new Promise((r) => setTimeout(r, 10_000).unref())]);
      if (server.exitCode === null) server.kill('SIGKILL');
    }
    rmSync(stateDir, { recursive: true, force: true });
  };

  try {
    const port = await freePort();
    let uiPort = await freePort();
    while (uiPort === port) uiPort = await freePort(); // each was free a moment ago, not both at once
    const address = `127.0.0.1:${port}`;
    o.say(
      `starting the twin: ${description.nodes.length} simulated nodes at ${description.version}, and a Temporal dev server of its own on ${address}`,
    );
    simStarting = startSimulation(description, { stateDir: join(stateDir, 'sim'), binaries });
    simStarting.catch(() => undefined); // awaited below, or by stop()
    server = spawn(temporalBin, devServerArgs({ db: join(stateDir, 'temporal.db'), ip: '127.0.0.1', port, uiPort }), { stdio: 'ignore' });
    connection = await waitForServer(address, server, o.signal);
    sim = await simStarting;
    if (o.signal.aborted) throw o.signal.reason;
    quietRuntime(join(stateDir, 'worker.log'));
    native = await NativeConnection.connect({ address });
    worker = await createSkewlessWorker({
      connection: native,
      namespace: 'default',
      taskQueue: TASK_QUEUE,
      deps: { clusters: createClusterResolver(sim.endpoints.clustersDir) },
      shutdownGraceTime: '2 seconds',
    });
    running = worker.run();
    const { Client } = await loadTemporalClient();
    const client = new Client({ connection, namespace: 'default' });
    const twinSim = sim;
    const versions = async () => {
      await twinSim.versionHistorySettled();
      return { final: await readSimInventory(twinSim.kube), history: readVersionHistory(twinSim.stateDir) };
    };
    return { sim: twinSim, client, taskQueue: TASK_QUEUE, stateDir, versions, stop };
  } catch (err) {
    await stop();
    throw err;
  }
}
