import { runStackUpgrade } from './stack-upgrade.js';

/**
 * `node dist/test/stack/measure-upgrade.js stack|dev`: the stack test's upgrade without faults, on the
 * stack or on the dev server, for a side-by-side timing of the two; one JSON line on stdout.
 */
const temporal = process.argv[2];
if (temporal !== 'stack' && temporal !== 'dev') {
  console.error('usage: measure-upgrade.js stack|dev');
  process.exit(2);
}
const report = await runStackUpgrade({ temporal, faults: false });
console.log(
  JSON.stringify({
    temporal,
    ok: report.problems.length === 0,
    temporalStartMs: report.temporalStartMs,
    upgradeMs: report.upgradeMs,
    wallMs: report.wallMs,
    memory: report.memory,
    problems: report.problems,
  }),
);
process.exit(report.problems.length === 0 ? 0 : 1);
