import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { waitFor } from '../../sim/cluster/wait-for.js';
import { runCli, type CliResult } from '../helpers/run-cli.js';
import { startDevServer, temporalVars } from '../helpers/temporal-env.js';

/**
 * `skewless schedule` through the real executable against the real dev server. No worker runs
 * (nothing here fires: the times are days away), so the CLI may run synchronously.
 */
describe('skewless schedule: create, list, describe, pause, unpause, delete through the CLI', () => {
  let env: TestWorkflowEnvironment;
  const cli = (...args: string[]): CliResult & { detail: string } => {
    const saved = process.env;
    process.env = { ...saved, ...temporalVars(env), SKEWLESS_TASK_QUEUE: 'schedule-cli', USER: 'dana' };
    try {
      const r = runCli(args);
      return { ...r, detail: `skewless ${args.join(' ')}: exit ${r.code}\n--- stdout\n${r.stdout}--- stderr\n${r.stderr}` };
    } finally {
      process.env = saved;
    }
  };
  const listed = () => {
    const r = cli('schedule', 'list', '--output', 'json');
    assert.equal(r.code, 0, r.detail);
    return JSON.parse(r.stdout) as {
      scheduleId: string;
      cluster: string;
      to: string;
      paused: boolean;
      note?: string;
      when: string[];
      nextRun?: string;
    }[];
  };
  /** The list view is eventually consistent: wait until it shows what `check` wants. */
  const untilListed = async (what: string, check: (rows: ReturnType<typeof listed>) => boolean) => {
    let rows: ReturnType<typeof listed> = [];
    await waitFor(what, () => check((rows = listed())), 30_000, 300).catch((err: Error) =>
      assert.fail(`${err.message}\n${JSON.stringify(rows)}`),
    );
    return rows;
  };
  const refused = (r: CliResult & { detail: string }, line: RegExp) => {
    assert.equal(r.code, 2, r.detail);
    assert.match(r.stderr, /^skewless: [^\n]+\n$/, `one line: ${r.detail}`);
    assert.match(r.stderr.trimEnd(), line, r.detail);
    assert.equal(r.stdout, '', r.detail);
  };

  before(async () => {
    env = await startDevServer();
  });
  after(async () => {
    for await (const s of env.client.schedule.list())
      await env.client.schedule
        .getHandle(s.scheduleId)
        .delete()
        .catch(() => undefined);
    await env?.teardown();
  });

  it('creates schedules from a cron in a time zone and from a calendar line, and lists them with their next run', async () => {
    const cron = cli(
      'schedule',
      'create',
      '--cluster',
      'prod-eu',
      '--to',
      'latest-patch',
      '--cron',
      '0 3 * * SAT',
      '--time-zone',
      'Europe/Berlin',
      '--batch-size',
      '2',
      '--approve-workers',
      '--note',
      'patch Saturdays',
      '--output',
      'json',
    );
    assert.equal(cron.code, 0, cron.detail);
    const c = JSON.parse(cron.stdout);
    assert.equal(c.scheduleId, 'upgrade-schedule/prod-eu');
    assert.deepEqual(c.policy, { batchSize: 2, approveWorkers: true });
    assert.equal(c.overlap, 'SKIP');
    assert.equal(c.timeZone, 'Europe/Berlin');
    assert.equal(c.note, 'patch Saturdays');
    // The server computed the next time from the cron in Berlin's clock: a Saturday, 03:00 there.
    const next = new Date(c.nextRuns[0]);
    const berlin = new Intl.DateTimeFormat('en-GB', {
      timeZone: 'Europe/Berlin',
      weekday: 'short',
      hour: '2-digit',
      minute: '2-digit',
      hour12: false,
    }).format(next);
    assert.equal(berlin, 'Sat 03:00', c.nextRuns[0]);

    const cal = cli('schedule', 'create', 'nightly-staging', '--cluster', 'staging', '--to', 'next-minor', '--calendar', 'Mon-Fri 22:30');
    assert.equal(cal.code, 0, cal.detail);
    assert.match(
      cal.stdout,
      /^created schedule nightly-staging: upgrade staging to next-minor, calendar "Mon-Fri 22:30"; next run \d{4}-\d\d-\d\dT22:30:00\.000Z$/m,
    );
    const day = new Date(/next run (\S+)/.exec(cal.stdout)?.[1] ?? '').getUTCDay();
    assert.ok(day >= 1 && day <= 5, `a weekday: ${cal.stdout}`);

    const rows = await untilListed('both schedules listed', (r) => r.length === 2);
    assert.deepEqual(
      rows.map((r) => [r.scheduleId, r.cluster, r.to, r.paused, r.when]),
      [
        ['nightly-staging', 'staging', 'next-minor', false, ['calendar "Mon-Fri 22:30"']],
        ['upgrade-schedule/prod-eu', 'prod-eu', 'latest-patch', false, ['cron "0 3 * * SAT"', 'time zone Europe/Berlin']],
      ],
    );
    const text = cli('schedule', 'list');
    assert.equal(text.code, 0, text.detail);
    assert.match(
      text.stdout,
      /^upgrade-schedule\/prod-eu\s+prod-eu\s+latest-patch\s+active\s+cron "0 3 \* \* SAT"; time zone Europe\/Berlin\s+next \S+$/m,
    );

    const again = cli('schedule', 'create', '--cluster', 'prod-eu', '--to', '1.34', '--every', '1h');
    refused(again, /^skewless: schedule upgrade-schedule\/prod-eu already exists; delete it first or pick another NAME$/);
  });

  it('pauses and unpauses with a note, which describe and list show', async () => {
    const paused = cli('schedule', 'pause', '--cluster', 'prod-eu', '--note', 'change freeze until Monday');
    assert.equal(paused.code, 0, paused.detail);
    assert.equal(paused.stdout, 'schedule upgrade-schedule/prod-eu paused: change freeze until Monday\n');
    const d = JSON.parse(cli('schedule', 'describe', 'upgrade-schedule/prod-eu', '--output', 'json').stdout);
    assert.equal(d.paused, true);
    assert.equal(d.note, 'change freeze until Monday');
    const text = cli('schedule', 'describe', 'upgrade-schedule/prod-eu');
    assert.match(text.stdout, /state: paused \(change freeze until Monday\)/);
    assert.match(text.stdout, /overlap: SKIP: never two upgrades of one cluster.*upgrade\/prod-eu running/);
    await untilListed('paused in the list', (r) => r.find((s) => s.scheduleId === 'upgrade-schedule/prod-eu')?.paused === true);

    const unpaused = cli('schedule', 'unpause', 'upgrade-schedule/prod-eu', '--note', 'freeze over', '--output', 'json');
    assert.equal(unpaused.code, 0, unpaused.detail);
    assert.deepEqual(JSON.parse(unpaused.stdout), { scheduleId: 'upgrade-schedule/prod-eu', action: 'unpaused', note: 'freeze over' });
    const after = JSON.parse(cli('schedule', 'describe', '--cluster', 'prod-eu', '--output', 'json').stdout);
    assert.equal(after.paused, false);
    assert.equal(after.note, 'freeze over');
  });

  it('refuses bad input with one line, exit 2, and creates nothing', async () => {
    const create = (...more: string[]) => cli('schedule', 'create', '--cluster', 'qa', '--to', 'latest-patch', ...more);
    refused(create('--cron', '0 3 * *'), /^skewless: --cron takes five fields .*got "0 3 \* \*"$/);
    refused(create('--cron', '61 3 * * SAT'), /^skewless: --cron "61 3 \* \* SAT": the minute field "61" is not 0-59/);
    refused(create('--cron', '0 3 * * FUNDAY'), /the day of week field "FUNDAY" is not 0-6, SUN-SAT/);
    refused(create('--calendar', 'Caturday 02:00'), /^skewless: --calendar takes "\[DAYS\] HH:MM" .*got "Caturday 02:00"$/);
    refused(create('--calendar', 'Sat 25:00'), /--calendar takes/);
    refused(create('--every', '5 minutes'), /^skewless: --every takes a duration such as 30s, 10m, 6h or 7d, got "5 minutes"$/);
    refused(
      create('--cron', '0 3 * * SAT', '--time-zone', 'Mars/Olympus'),
      /^skewless: --time-zone must be an IANA time zone .*got "Mars\/Olympus"$/,
    );
    refused(create(), /^skewless: a schedule needs --cron "EXPR", --calendar "Sat 02:00" or --every DURATION$/);
    refused(
      cli('schedule', 'create', '--cluster', 'qa', '--to', 'newest', '--every', '1h'),
      /^skewless: invalid target "newest": expected a version such as 1\.34\.2, a minor such as 1\.34, latest-patch or next-minor$/,
    );
    refused(cli('schedule', 'create', '--cluster', 'QA!', '--to', '1.34', '--every', '1h'), /^skewless: invalid cluster name "QA!"/);
    refused(create('--every', '1h', '--canary', '0', '--soak', '60'), /--canary 0 means no canary: --soak would never apply/);
    refused(cli('schedule', 'frobnicate'), /^skewless: unknown schedule command "frobnicate"/);
    refused(cli('schedule', 'pause'), /^skewless: name the schedule \(NAME\) or its cluster \(--cluster NAME\)$/);
    refused(cli('schedule', 'delete', 'upgrade-schedule/prod-eu', '--note', 'x'), /^skewless: --note does not go with schedule delete$/);
    refused(cli('schedule', 'describe', 'no-such-schedule'), /^skewless: no schedule no-such-schedule$/);
    refused(cli('schedule', 'trigger', '--cluster', 'ghost'), /^skewless: no schedule upgrade-schedule\/ghost$/);
    // Nothing was created by any of them.
    const none = cli('schedule', 'describe', '--cluster', 'qa');
    refused(none, /^skewless: no schedule upgrade-schedule\/qa$/);
    assert.equal(listed().length, 2);
  });

  it('deletes a schedule: gone from list and describe', async () => {
    const r = cli('schedule', 'delete', 'nightly-staging');
    assert.equal(r.code, 0, r.detail);
    assert.equal(r.stdout, 'schedule nightly-staging deleted\n');
    refused(cli('schedule', 'describe', 'nightly-staging'), /^skewless: no schedule nightly-staging$/);
    refused(cli('schedule', 'delete', 'nightly-staging'), /^skewless: no schedule nightly-staging$/);
    const rows = await untilListed('only prod-eu left', (rs) => rs.length === 1);
    assert.equal(rows[0]?.scheduleId, 'upgrade-schedule/prod-eu');
  });
});
