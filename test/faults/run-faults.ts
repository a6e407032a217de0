import { parseArgs } from 'node:util';
import { runFaultHarness, type FaultRunReport } from './harness.js';

/**
 * `npm run faults -- --kills 40 --seed 7 [--server-restarts 5] [--state-dir DIR]`: one fault run
 * (harness.ts), its log line by line, and a one-line verdict. Exit 0 when every promise held, 1 when
 * any did not, 2 on bad arguments.
 */

const help = `Usage: npm run faults -- --kills N --seed S [--server-restarts K] [--state-dir DIR]

Upgrades a simulated 3+7 node cluster from 1.32 to 1.34 (two hops) with the real worker and the
Temporal dev server as separate processes, SIGKILLs the worker N times (at random moments and in
the middle of a drain, kubeadm upgrade apply, apt-get install and a kubelet restart) and the
server K times, and checks that the upgrade still kept every promise.
  --kills N            worker kills (default 20)
  --seed S             the seed of every choice the run makes (default 1)
  --server-restarts K  Temporal dev server kills and restarts on the same file (default 0)
  --state-dir DIR      keep the run's state and logs here (default: a temporary folder, kept on failure)`;

function count(value: string | undefined, flag: string, fallback: number): number {
  if (value === undefined) return fallback;
  if (!/^\d{1,6}$/.test(value)) throw new Error(`${flag} must be a whole number, got ${JSON.stringify(value)}`);
  return Number(value);
}

function verdict(r: FaultRunReport): string {
  const hit = Object.entries(r.targetsHit)
    .map(([t, n]) => `${t} ${n}`)
    .join(', ');
  const what = `seed ${r.seed}: ${r.kills.length} worker kills (targets hit: ${hit}), ${r.serverRestarts.length} server restarts, ${r.hangups.length} commands lost their client, in ${(r.wallMs / 1000).toFixed(0)} s`;
  return r.ok ? `PASS ${what}: upgrade done, every check held` : `FAIL ${what}: ${r.problems.length} problem(s)`;
}

async function main(): Promise<number> {
  let values;
  try {
    ({ values } = parseArgs({
      options: {
        kills: { type: 'string' },
        seed: { type: 'string' },
        'server-restarts': { type: 'string' },
        'state-dir': { type: 'string' },
        help: { type: 'boolean', short: 'h' },
      },
    }));
    if (values.help) {
      console.log(help);
      return 0;
    }
    values = {
      ...values,
      killsN: count(values.kills, '--kills', 20),
      seedN: count(values.seed, '--seed', 1),
      restartsN: count(values['server-restarts'], '--server-restarts', 0),
    };
  } catch (err) {
    console.error(`faults: ${(err as Error).message.split('\n')[0]} (see --help)`);
    return 2;
  }
  const report = await runFaultHarness({
    seed: values.seedN,
    kills: values.killsN,
    serverRestarts: values.restartsN,
    ...(values['state-dir'] ? { stateDir: values['state-dir'] } : {}),
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
