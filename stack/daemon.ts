import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { STACK_FILE, startStack, type StackPorts } from './stack.js';

/**
 * The process behind `npm run stack up`: holds the stack's programs (each dies with it, even on
 * SIGKILL) until SIGTERM/SIGINT, then stops them and removes <state>/stack.json, which it writes
 * once everything answers (the stack's addresses, versions, pids and its own pid). A program that
 * exits on its own is started again with a backoff, and stack.json rewritten with what runs now;
 * SIGUSR2 (from `stack up`) cuts that backoff short.
 */

async function run(): Promise<void> {
  const [stateDir, portsJson, ui, whilePid] = process.argv.slice(2);
  if (!stateDir || !portsJson) throw new Error('usage: daemon.js STATE_DIR PORTS_JSON [ui|no-ui] [WHILE_PID]');
  const file = join(stateDir, STACK_FILE);
  // Handlers first: the programs then leave their shutdown to us (see ManagedProcess).
  let shutdown: () => Promise<void> = async () => process.exit(1);
  process.on('SIGTERM', () => void shutdown());
  process.on('SIGINT', () => void shutdown());
  // `stack up` on a stack with a program down: start it now rather than after its backoff.
  let startNow: () => void = () => undefined;
  process.on('SIGUSR2', () => startNow());
  const stack = await startStack({
    stateDir,
    ports: JSON.parse(portsJson) as StackPorts,
    ui: ui !== 'no-ui',
    log: (l) => console.log(`stack: ${l}`),
  });
  let stopping = false;
  shutdown = async () => {
    if (stopping) return;
    stopping = true;
    rmSync(file, { force: true });
    await stack.stop();
    process.exit(0);
  };
  const record = () => {
    if (!stopping) writeFileSync(file, `${JSON.stringify({ daemonPid: process.pid, ...stack.info() }, null, 2)}\n`);
  };
  record();
  const log = (l: string) => console.log(`stack: ${new Date().toISOString()} ${l}`);
  const supervisor = stack.supervise({ log, changed: record });
  startNow = () => {
    log('stack up asked to start what is down now');
    supervisor.startNow();
  };
  if (whilePid) stopWhenGone(Number(whilePid), () => void shutdown());
}

/** `up --while-pid`: the stack ends with that process (a test, a CI job), however it ends. */
function stopWhenGone(pid: number, stop: () => void): void {
  const timer = setInterval(() => {
    try {
      process.kill(pid, 0);
    } catch {
      clearInterval(timer);
      stop();
    }
  }, 500);
}

run().catch((err) => {
  console.error(`stack daemon: ${(err as Error).stack ?? err}`);
  process.exit(1);
});
