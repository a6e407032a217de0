import { chmodSync } from 'node:fs';
import { join } from 'node:path';
import { freePort } from '../../tooling/free-port.js';
import { freeStackPorts, startStack, type RunningStack } from '../../stack/stack.js';
import { DevServerProcess } from './fault-processes.js';

/**
 * The Temporal side of a fault run, and how to crash its parts: the dev server (its history in a
 * file) or the production stack (stack/: the Temporal server on PostgreSQL). The harness's loops
 * only see this interface, so every loop runs on either.
 */
export type FaultTemporalKind = 'dev' | 'stack';
export const FAULT_TEMPORAL_KINDS: readonly FaultTemporalKind[] = ['dev', 'stack'];

export interface FaultTemporal {
  kind: FaultTemporalKind;
  address: string;
  /** What the log's first line says about it. */
  describe(): string;
  /** SIGKILL the Temporal server (the dev server, or the stack's server), start it again after `downMs`, wait until it answers. */
  restartServer(downMs: number): Promise<void>;
  /** The stack only: SIGKILL PostgreSQL (postmaster and backends), start it again after `downMs` (WAL recovery). */
  restartDatabase?(downMs: number): Promise<void>;
  stop(): Promise<void>;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function devTemporal(stateDir: string): Promise<FaultTemporal> {
  const server = new DevServerProcess(stateDir, await freePort());
  await server.start();
  return {
    kind: 'dev',
    address: server.address,
    describe: () => `dev server ${server.address} (pid ${server.pid}, ${server.db})`,
    restartServer: async (downMs) => {
      await server.kill();
      await sleep(downMs);
      await server.start();
    },
    stop: () => server.stop(),
  };
}

async function stackTemporal(stateDir: string): Promise<FaultTemporal> {
  chmodSync(stateDir, 0o711); // PostgreSQL runs as its own user under root: it must enter the stack's dir below
  const stack: RunningStack = await startStack({ stateDir: join(stateDir, 'stack'), ports: await freeStackPorts(), ui: false });
  const pids = () => Object.entries(stack.info().pids).map(([name, pid]) => `${name} ${pid}`);
  return {
    kind: 'stack',
    address: stack.address,
    describe: () => `stack ${stack.address} (${pids().join(', ')}; ${stack.versions.temporalServer} on PostgreSQL)`,
    restartServer: (downMs) => stack.restartServer({ downMs }),
    restartDatabase: async (downMs) => {
      await stack.restartPostgres({ signal: 'SIGKILL', downMs });
    },
    stop: () => stack.stop(),
  };
}

export async function startFaultTemporal(kind: FaultTemporalKind, stateDir: string): Promise<FaultTemporal> {
  return kind === 'stack' ? stackTemporal(stateDir) : devTemporal(stateDir);
}
