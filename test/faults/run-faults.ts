import { parseArgs } from 'node:util';
import { FAULT_WORLDS, workersFor, type FaultWorld } from './fault-lab.js';
import { FAULT_TEMPORAL_KINDS, type FaultTemporalKind } from './fault-temporal.js';
import { runFaultHarness, type FaultRunReport } from './harness.js';

/**
 * `npm run faults -- --kills 40 --seed 7 [--server-restarts 5] [--world shared|per-node]
 * [--temporal dev|stack] [--db-restarts K] [--state-dir DIR]`: one fault run (harness.ts), its log
 * line by line, and a one-line verdict. Exit 0 when every promise held, 1 when any did not, 2 on bad arguments.
 */

const help = `Usage: npm run faults -- --kills N --seed S [--server-restarts K] [--world shared|per-node]
                        [--temporal dev|stack] [--db-restarts K] [--state-dir DIR]

Upgrades a simulated cluster from 1.32 to 1.34 (two hops) with the real worker and Temporal as
separate processes, SIGKILLs the worker N times (at random moments and in the middle of a drain,
kubeadm upgrade apply, apt-get install, a kubelet restart and, per-node, kubeadm upgrade node), the
Temporal server K times and, on the stack, PostgreSQL, then checks that the upgrade still kept every
promise and that every history replays with the current workflow bundle.
  --kills N            worker kills (default 20)
  --seed S             the seed of every choice the run makes (default 1)
  --server-restarts K  Temporal server kills and restarts on the same storage (default 0); the dev
                       server's at random gaps, the stack's first inside apply, then inside a drain
  --world W            shared (default): 3 control planes sharing one set of control-plane programs
                       and max(7, 1.6 N) workers: the upgrade grows with the kills by more workers (more
                       drains, installs and restarts to kill into; the loop kills every ~22 s, the
                       upgrade moves a worker every ~13 s), not by
                       slower commands (the latencies the passing runs were measured with) or more hops
                       (1.32-1.34 are the minors with real releases here).
                       per-node: 3 control planes each running the real components and etcd of their
                       manifests' release and the real kubeadm of each minor, workers as above.
  --temporal T         dev (default): the Temporal dev server on a file. stack: the Temporal server on
                       PostgreSQL (stack/), as in production.
  --db-restarts K      PostgreSQL SIGKILLs and restarts, the first inside kubeadm upgrade apply, the
                       second inside a drain (default 0; needs --temporal stack)
  --state-dir DIR      keep the run's state and logs here (default: a temporary folder, kept on failure)`;

function count(value: string | undefined, flag: string, fallback: number): number {
  if (value === undefined) return fallback;
  if (!/^\d{1,6}$/.test(value)) throw new Error(`${flag} must be a whole number, got ${JSON.stringify(value)}`);
  return Number(value);
}

function oneOf<T extends string>(value: string | undefined, flag: string, allowed: readonly T[], fallback: T): T {
  if (value === undefined) return fallback;
  if (!(allowed as readonly string[]).includes(value))
    throw new Error(`${flag} must be ${allowed.join(' or ')}, got ${JSON.stringify(value)}`);
  return value as T;
}

function verdict(r: FaultRunReport): string {
  const hit = Object.entries(r.targetsHit)
    .filter(([t, n]) => n > 0 || t !== 'upgrade-node' || r.world === 'per-node')
    .map(([t, n]) => `${t} ${n}`)
    .join(', ');
  const hits = (records: FaultRunReport['dbRestarts']) =>
    r.temporal === 'stack'
      ? ` (hit: ${
          records
            .filter((d) => d.hit)
            .map((d) => d.target)
            .join(', ') || 'none'
        })`
      : '';
  const db = r.temporal === 'stack' ? `, ${r.dbRestarts.length} PostgreSQL kills${hits(r.dbRestarts)}` : '';
  const what = `seed ${r.seed}, ${r.world} world (${r.nodes} nodes), Temporal ${r.temporal}: ${r.kills.length} worker kills (targets hit: ${hit}), ${r.serverRestarts.length} server restarts${hits(r.serverRestarts)}${db}, ${r.hangups.length} commands lost their client, ${r.replayed} histories replayed, upgrade ${(r.upgradeMs / 1000).toFixed(0)} s, run ${(r.wallMs / 1000).toFixed(0)} s`;
  return r.ok ? `PASS ${what}: upgrade done, every check held` : `FAIL ${what}: ${r.problems.length} problem(s)`;
}

interface Args {
  kills: number;
  seed: number;
  serverRestarts: number;
  dbRestarts: number;
  world: FaultWorld;
  temporal: FaultTemporalKind;
  stateDir?: string;
}

function parse(): Args | 'help' {
  const { values } = parseArgs({
    options: {
      kills: { type: 'string' },
      seed: { type: 'string' },
      'server-restarts': { type: 'string' },
      'db-restarts': { type: 'string' },
      world: { type: 'string' },
      temporal: { type: 'string' },
      'state-dir': { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (values.help) return 'help';
  const args: Args = {
    kills: count(values.kills, '--kills', 20),
    seed: count(values.seed, '--seed', 1),
    serverRestarts: count(values['server-restarts'], '--server-restarts', 0),
    dbRestarts: count(values['db-restarts'], '--db-restarts', 0),
    world: oneOf(values.world, '--world', FAULT_WORLDS, 'shared'),
    temporal: oneOf(values.temporal, '--temporal', FAULT_TEMPORAL_KINDS, 'dev'),
    ...(values['state-dir'] ? { stateDir: values['state-dir'] } : {}),
  };
  if (args.dbRestarts > 0 && args.temporal !== 'stack')
    throw new Error('--db-restarts needs --temporal stack (the dev server has no PostgreSQL)');
  return args;
}

async function main(): Promise<number> {
  let args: Args | 'help';
  try {
    args = parse();
  } catch (err) {
    console.error(`faults: ${(err as Error).message.split('\n')[0]} (see --help)`);
    return 2;
  }
  if (args === 'help') {
    console.log(help);
    return 0;
  }
  if (args.world === 'shared')
    console.log(`[faults] shared world sized for ${args.kills} kills: 3 control planes, ${workersFor(args.kills)} workers`);
  const report = await runFaultHarness({
    seed: args.seed,
    kills: args.kills,
    serverRestarts: args.serverRestarts,
    dbRestarts: args.dbRestarts,
    world: args.world,
    temporal: args.temporal,
    ...(args.stateDir ? { stateDir: args.stateDir } : {}),
    log: (line) => console.log(line),
  });
  for (const p of report.problems) console.log(`[faults] PROBLEM: ${p}`);
  if (!report.ok) console.log(`[faults] state and logs kept in ${report.stateDir}`);
  console.log(verdict(report));
  return report.ok ? 0 : 1;
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    console.error(`faults: ${(err as Error).stack ?? String(err)}`);
    process.exit(1);
  },
);
