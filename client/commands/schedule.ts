import type { Client, ScheduleDescription, ScheduleSummary } from '@temporalio/client';
import { isClientError } from '../temporal-sdk.js';
import { describeExclusion, parseExclusionFlag, parseTarget, reversibleRunInput, type Exclusion } from '../../rules/index.js';
import { CONNECTION_HELP, workerConfig } from '../../worker/config.js';
import { scheduledUpgradeWorkflow, type ScheduledUpgradeResult } from '../../workflows/scheduled-upgrade-workflow.js';
import { type CommandIo, EXIT, helpAsked, type Output, outputFormat, parseOptions, requireOption, UsageError } from '../cli-support.js';
import { POLICY_OPTIONS, POLICY_USAGE, policyFromFlags, TARGET_HELP } from '../policy-flags.js';
import { REVERSIBLE_FLAGS, splitReversibleAcks } from '../reversible-flag.js';
import { scheduleSpec } from '../schedule-spec.js';
import { clusterName, connectClient, TEMPORAL_OPTIONS } from '../temporal-connection.js';
import { scheduledUpgradeWorkflowId, upgradeScheduleId as scheduleIdOf } from '../../contracts/workflow-ids.js';

const VERBS = ['create', 'list', 'describe', 'pause', 'unpause', 'delete', 'trigger'] as const;
type Verb = (typeof VERBS)[number];

/**
 * Missed runs (the server was down at 03:00) are still taken this long after their time, and not
 * later: an upgrade that starts hours late may fall outside the window people expect it in.
 */
const CATCHUP_WINDOW = '10 minutes';
const OVERLAP_WORDS =
  "SKIP: never two upgrades of one cluster. A time that comes while the schedule's last run still goes on is skipped, and a run that finds upgrade/CLUSTER running (started by hand) ends as skipped, starting nothing.";

export const scheduleHelp = `Usage: skewless schedule create [NAME] --cluster NAME --to TARGET (--cron "EXPR" | --calendar "DAYS HH:MM" | --every DURATION)...
                                [--time-zone ZONE] [--exclusion FROM..TO[:all|minor]]... [policy flags] [--note TEXT] [--paused] [--task-queue QUEUE]
                                [--reversible [--auto-commit] [--acknowledge reversible:HOP]...]
       skewless schedule list
       skewless schedule describe|trigger|delete (NAME | --cluster NAME)
       skewless schedule pause|unpause (NAME | --cluster NAME) [--note TEXT]
Every subcommand takes [--output json|text] and the connection options.

Upgrades started by a Temporal Schedule. Each time the schedule fires it starts a run
(scheduled-upgrade/CLUSTER-<time>) that resolves TARGET on the cluster as it is then, and starts the
upgrade upgrade/CLUSTER (status, watch, approve and abort work as for any upgrade) and waits for it.
Nothing to do (already at the target) and an upgrade of the cluster already running are clean
outcomes of the run, not failures. The schedule's NAME defaults to upgrade-schedule/CLUSTER.

When (one or more, their times are combined):
  --cron "EXPR"         five fields, minute hour day-of-month month day-of-week: "0 3 * * SAT"; or @daily, @weekly
  --calendar "DAYS HH:MM"  "Sat 02:00", "Mon-Fri 22:30", "Sat,Sun 02:00", "daily 03:00"
  --every DURATION      30s, 10m, 6h, 7d (from the schedule's creation)
  --time-zone ZONE      IANA zone for --cron and --calendar (default UTC)
  --exclusion FROM..TO[:all|minor]  a blackout period (dates or date-times in --time-zone: 2026-12-20..2027-01-05,
                        2026-12-24T18:00..2026-12-27:minor); a firing inside one is skipped and says so in describe
                        (minor: only runs that change the minor), as are firings inside the cluster configuration's exclusions
Overlap policy: ${OVERLAP_WORDS.replace('. A time', '.\n  A time').replace(', and a run', ',\n  and a run')}
Missed runs are caught up for ${CATCHUP_WINDOW}. "trigger" fires now, with the same overlap policy.

${TARGET_HELP}

Policy flags, as for "skewless upgrade":
${POLICY_USAGE}
--reversible, --auto-commit and --acknowledge reversible:HOP as for "skewless upgrade" (docs/reversible-hops.md):
each run's upgrade runs its hops as trials; with --auto-commit a trial whose soak passes commits by itself.

${CONNECTION_HELP}

Exit status: 0 done; 2 invalid input (a bad cron, calendar, interval, zone or target, an unknown or
existing schedule); 3 Temporal unreachable.`;

/** upgrade-schedule/prod, or a name the operator picks: letters, digits and - _ . / only. */
const SCHEDULE_ID = /^[A-Za-z0-9]([A-Za-z0-9._/-]{0,198}[A-Za-z0-9])?$/;

/** NAME if given (create names the schedule of --cluster with it), else upgrade-schedule/CLUSTER. */
function scheduleName(positional: string | undefined, cluster: string | undefined): string {
  if (positional !== undefined) return checkedId(positional);
  if (cluster !== undefined) return scheduleIdOf(clusterName(cluster, '--cluster'));
  throw new UsageError('name the schedule (NAME) or its cluster (--cluster NAME)');
}

function checkedId(value: string): string {
  if (!SCHEDULE_ID.test(value) || value.includes('//'))
    throw new UsageError(`invalid schedule name ${JSON.stringify(value)}: letters, digits, '-', '_', '.' and '/'`);
  return value;
}

interface ScheduleMemo {
  cluster?: string;
  to?: string;
  when?: string[];
  note?: string;
}

const SCHEDULE_OPTIONS = {
  cluster: { type: 'string' },
  to: { type: 'string' },
  cron: { type: 'string', multiple: true },
  calendar: { type: 'string', multiple: true },
  every: { type: 'string', multiple: true },
  'time-zone': { type: 'string' },
  exclusion: { type: 'string', multiple: true },
  note: { type: 'string' },
  paused: { type: 'boolean' },
  output: { type: 'string' },
  'task-queue': { type: 'string' },
  ...POLICY_OPTIONS,
  reversible: { type: 'boolean' },
  'auto-commit': { type: 'boolean' },
  ...TEMPORAL_OPTIONS,
} as const;

type ScheduleValues = ReturnType<typeof parseOptions<typeof SCHEDULE_OPTIONS>>['values'];

export async function scheduleCommand(args: string[], io: CommandIo): Promise<number> {
  const { values, positionals } = parseOptions(args, SCHEDULE_OPTIONS, true);
  const [verbText, name, ...extra] = positionals;
  if (helpAsked(values, scheduleHelp, io)) return EXIT.ok;
  const output = outputFormat(values.output);
  if (verbText === undefined) throw new UsageError(`schedule needs a command: ${VERBS.join(', ')} (skewless schedule --help)`);
  if (!(VERBS as readonly string[]).includes(verbText)) throw new UsageError(`unknown schedule command "${verbText}": ${VERBS.join(', ')}`);
  const verb = verbText as Verb;
  if (extra.length > 0) throw new UsageError(`unexpected argument ${JSON.stringify(extra[0])}: schedule ${verb} takes one NAME`);
  const only = (allowed: string[]) => {
    const given = Object.entries(values).filter(
      ([k, v]) => v !== undefined && !allowed.includes(k) && !(k in TEMPORAL_OPTIONS) && k !== 'output',
    );
    if (given.length > 0) throw new UsageError(`--${given[0]?.[0]} does not go with schedule ${verb}`);
  };
  if (verb === 'create') return createSchedule(values, name, output, io);
  if (verb === 'list') {
    only([]);
    if (name !== undefined) throw new UsageError(`unexpected argument ${JSON.stringify(name)}: schedule list takes none`);
    return listSchedules(values, output, io);
  }
  only(verb === 'pause' || verb === 'unpause' ? ['cluster', 'note'] : ['cluster']);
  return operateSchedule(verb, values, scheduleName(name, values.cluster), output, io);
}

async function createSchedule(values: ScheduleValues, name: string | undefined, output: Output, io: CommandIo): Promise<number> {
  const cluster = clusterName(values.cluster, '--cluster');
  const id = scheduleName(name, cluster);
  const to = requireOption(values.to, '--to');
  parseTarget(to); // an unknown expression or a bad version is refused here, before Temporal is contacted
  const { spec, words } = scheduleSpec(values);
  // `reversible:<hop>` acknowledges a hop that cannot be reversible (issue 36): the run's input, not a policy key.
  const acks = splitReversibleAcks(values.acknowledge);
  if (acks.reversible.length > 0 && values.reversible !== true) throw new UsageError('--acknowledge reversible:HOP goes with --reversible');
  const policy = policyFromFlags({ ...values, acknowledge: acks.rest });
  const asked = { reversible: values.reversible, autoCommit: values['auto-commit'], acknowledged: acks.reversible };
  const reversible = reversibleRunInput(asked, policy, REVERSIBLE_FLAGS);
  const exclusions = (values.exclusion ?? []).map((e) => parseExclusionFlag(e, values['time-zone'] ?? 'UTC'));
  const taskQueue = workerConfig(values).taskQueue;
  const memo: ScheduleMemo = { cluster, to, when: words, ...(values.note ? { note: values.note } : {}) };
  return withClient(values, async (client) => {
    try {
      await client.schedule.create({
        scheduleId: id,
        spec,
        action: {
          type: 'startWorkflow',
          workflowType: scheduledUpgradeWorkflow,
          taskQueue,
          workflowId: scheduledUpgradeWorkflowId(cluster), // Temporal appends the time of each run
          args: [
            { cluster, to, policy, schedule: id, ...(exclusions.length ? { exclusions } : {}), ...(reversible ? { reversible } : {}) },
          ],
          staticSummary: `scheduled upgrade of ${cluster} to ${to}`,
        },
        policies: { overlap: 'SKIP', catchupWindow: CATCHUP_WINDOW, pauseOnFailure: false },
        state: { paused: values.paused ?? false, note: values.note ?? `created by ${who()}` },
        memo: memo as Record<string, unknown>,
      });
    } catch (err) {
      if (isClientError(err, 'ScheduleAlreadyRunning'))
        throw new UsageError(`schedule ${id} already exists; delete it first or pick another NAME`);
      throw refused(err);
    }
    const d = await client.schedule.getHandle(id).describe();
    if (output === 'json') io.out(JSON.stringify(describeJson(d), null, 2));
    else
      io.out(
        `created schedule ${id}: upgrade ${cluster} to ${to}, ${words.join('; ')}${d.state.paused ? ' (paused)' : ''}; next run ${d.info.nextActionTimes[0]?.toISOString() ?? 'none'}`,
      );
    return EXIT.ok;
  });
}

function listSchedules(values: ScheduleValues, output: Output, io: CommandIo): Promise<number> {
  return withClient(values, async (client) => {
    const rows: ReturnType<typeof summaryJson>[] = [];
    for await (const s of client.schedule.list()) if (s.action?.workflowType === 'scheduledUpgradeWorkflow') rows.push(summaryJson(s));
    rows.sort((a, b) => a.scheduleId.localeCompare(b.scheduleId));
    if (output === 'json') io.out(JSON.stringify(rows, null, 2));
    else if (rows.length === 0) io.out('no upgrade schedules');
    else
      for (const r of rows)
        io.out(
          `${r.scheduleId.padEnd(32)} ${(r.cluster ?? '?').padEnd(16)} ${(r.to ?? '?').padEnd(13)} ${r.paused ? 'paused' : 'active'.padEnd(6)}  ${(r.when ?? []).join('; ')}  next ${r.nextRun ?? '-'}`,
        );
    return EXIT.ok;
  });
}

/** describe, pause, unpause, delete and trigger of one schedule. */
function operateSchedule(verb: Exclude<Verb, 'create' | 'list'>, values: ScheduleValues, id: string, output: Output, io: CommandIo) {
  return withClient(values, async (client) => {
    const handle = client.schedule.getHandle(id);
    try {
      if (verb === 'describe') {
        const d = await handle.describe();
        const runs = await recentRuns(client, d);
        if (output === 'json') io.out(JSON.stringify({ ...describeJson(d), recentRuns: runs }, null, 2));
        else for (const line of describeText(d, runs)) io.out(line);
        return EXIT.ok;
      }
      const note = values.note ?? `${verb}d by ${who()}`;
      if (verb === 'pause') await handle.pause(note);
      else if (verb === 'unpause') await handle.unpause(note);
      else if (verb === 'delete') await handle.delete();
      // The override defaults to ALLOW_ALL: a trigger obeys the same rule as the schedule's own times.
      else await handle.trigger('SKIP');
      const done = { pause: 'paused', unpause: 'unpaused', delete: 'deleted', trigger: 'triggered' }[verb];
      if (output === 'json')
        io.out(JSON.stringify({ scheduleId: id, action: done, ...(verb === 'pause' || verb === 'unpause' ? { note } : {}) }));
      else io.out(`schedule ${id} ${done}${verb === 'pause' || verb === 'unpause' ? `: ${note}` : ''}`);
      return EXIT.ok;
    } catch (err) {
      if (isClientError(err, 'ScheduleNotFoundError')) throw new UsageError(`no schedule ${id}`);
      throw refused(err);
    }
  });
}

const who = () => process.env.USER ?? 'operator';

async function withClient(values: Parameters<typeof connectClient>[0], body: (client: Client) => Promise<number>): Promise<number> {
  const { client, close } = await connectClient(values);
  try {
    return await body(client);
  } finally {
    await close();
  }
}

/** The server's own refusal of a schedule (INVALID_ARGUMENT): bad input, one line. */
function refused(err: unknown): unknown {
  const e = err as { code?: number; details?: string; message?: string };
  if (e?.code === 3) return new UsageError(`Temporal refused the schedule: ${(e.details ?? e.message ?? '').split('\n')[0]}`);
  return err;
}

function summaryJson(s: ScheduleSummary) {
  const memo = (s.memo ?? {}) as ScheduleMemo;
  return {
    scheduleId: s.scheduleId,
    cluster: memo.cluster,
    to: memo.to,
    when: memo.when,
    paused: s.state.paused,
    ...(s.state.note ? { note: s.state.note } : {}),
    nextRun: s.info.nextActionTimes[0]?.toISOString(),
    lastRun: s.info.recentActions.at(-1)?.action.workflow.workflowId,
  };
}

function describeJson(d: ScheduleDescription) {
  const memo = (d.memo ?? {}) as ScheduleMemo;
  const args = (d.action.args?.[0] ?? {}) as { policy?: unknown; exclusions?: Exclusion[] };
  return {
    scheduleId: d.scheduleId,
    cluster: memo.cluster,
    to: memo.to,
    when: memo.when,
    timeZone: d.spec.timezone ?? 'UTC',
    policy: args.policy ?? {},
    exclusions: (args.exclusions ?? []).map(describeExclusion),
    taskQueue: d.action.taskQueue,
    overlap: d.policies.overlap,
    overlapMeans: OVERLAP_WORDS.replace('CLUSTER', memo.cluster ?? 'CLUSTER'),
    catchupWindowSeconds: d.policies.catchupWindow / 1000,
    paused: d.state.paused,
    ...(d.state.note ? { note: d.state.note } : {}),
    nextRuns: d.info.nextActionTimes.map((t) => t.toISOString()),
    actionsTaken: d.info.numActionsTaken,
    skippedOverlap: d.info.numActionsSkippedOverlap,
    missedCatchupWindow: d.info.numActionsMissedCatchupWindow,
    running: d.info.runningActions.map((a) => a.workflow.workflowId),
  };
}

interface RecentRun {
  scheduledAt: string;
  workflowId: string;
  runId: string;
  status: string;
  outcome?: string;
  message?: string;
}

/** The schedule's recent runs, newest last, each with what it did (its result once it has ended). */
async function recentRuns(client: Client, d: ScheduleDescription): Promise<RecentRun[]> {
  return Promise.all(
    d.info.recentActions.slice(-10).map(async (a) => {
      const { workflowId, firstExecutionRunId: runId } = a.action.workflow;
      const run: RecentRun = { scheduledAt: a.scheduledAt.toISOString(), workflowId, runId, status: 'unknown' };
      try {
        const handle = client.workflow.getHandle(workflowId, runId);
        run.status = (await handle.describe()).status.name;
        if (run.status === 'COMPLETED') {
          const result = (await handle.result()) as ScheduledUpgradeResult;
          Object.assign(run, { outcome: result.outcome, message: result.message });
        }
      } catch (err) {
        if (!isClientError(err, 'WorkflowNotFoundError')) run.message = (err as Error).message.split('\n')[0] ?? '';
      }
      return run;
    }),
  );
}

function describeText(d: ScheduleDescription, runs: RecentRun[]): string[] {
  const j = describeJson(d);
  return [
    `${j.scheduleId}: upgrade ${j.cluster ?? '?'} to ${j.to ?? '?'} (task queue ${j.taskQueue})`,
    `  when: ${(j.when ?? []).join('; ')}${j.when?.some((w) => w.startsWith('time zone')) ? '' : ' (UTC)'}`,
    `  overlap: ${j.overlapMeans}`,
    `  catch-up window: ${j.catchupWindowSeconds} s`,
    `  policy: ${JSON.stringify(j.policy)}`,
    ...(j.exclusions.length ? [`  exclusions: ${j.exclusions.join('; ')} (a firing inside one is skipped)`] : []),
    `  state: ${j.paused ? 'paused' : 'active'}${j.note ? ` (${j.note})` : ''}`,
    `  next runs: ${j.nextRuns.slice(0, 3).join(', ') || 'none'}`,
    `  runs: ${j.actionsTaken} taken, ${j.skippedOverlap} skipped for overlap, ${j.missedCatchupWindow} missed${j.running.length ? `; running now: ${j.running.join(', ')}` : ''}`,
    ...(runs.length ? ['  recent runs:'] : []),
    ...runs.map((r) => `    ${r.scheduledAt} ${r.workflowId}: ${r.status.toLowerCase()}${r.message ? `: ${r.message}` : ''}`),
  ];
}
