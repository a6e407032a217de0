import { existsSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import type { Client } from '@temporalio/client';
import { WorkflowExecutionAlreadyStartedError } from '@temporalio/common';
import { isClientError } from '../temporal-sdk.js';
import { parse as parseYaml } from 'yaml';
import { auditPdbs, parseTarget, parseVersion, planUpgrade, type ClusterInventory } from '../../rules/index.js';
import { CONNECTION_HELP, workerConfig } from '../../worker/config.js';
import { rehearseReadWorkflow, type RehearseReadResult } from '../../workflows/rehearse-workflow.js';
import { rehearseWorkflowId } from '../../contracts/workflow-ids.js';
import { CommandFailed, type CommandIo, EXIT, helpAsked, intOption, parseOptions, UsageError } from '../cli-support.js';
import { OUTPUT_OPTION, outputFormat, printJson } from '../output.js';
import { POLICY_OPTIONS, policyFromFlags, TARGET_HELP } from '../policy-flags.js';
import { rehearseUpgrade } from '../rehearse/auto-operator.js';
import { readinessView } from '../render-readiness.js';
import { planThroughWorker } from './plan.js';
import { blocksOf, finalVersions, reportText, skewOfHistory, type RehearsalReport } from '../rehearse/report.js';
import { twinTimings } from '../rehearse/timings.js';
import type { Latencies, SimDescription, Twin } from '../rehearse/twin.js';
import type * as TwinModuleNs from '../rehearse/twin.js';
import {
  DEFAULT_LATENCIES,
  descriptionYaml,
  LATENCY_KEYS,
  twinDescription,
  TwinInputError,
  type TwinDescription,
} from '../rehearse/twin-description.js';
import { clusterName, connectClient, refuseWhileAnotherRolloutRuns, TEMPORAL_OPTIONS } from '../temporal-connection.js';
import { untilAWorkerPolls } from '../run-state.js';
import { summarizeWorkflowFailure } from '../workflow-failure.js';

/** The twin's drain timeout when --drain-timeout is not given: a blocked drain is reported after this long. */
export const TWIN_DRAIN_TIMEOUT_SECONDS = 60;

export const rehearseHelp = `Usage: skewless rehearse --cluster NAME --to TARGET [--canary N] [--batch-size N]
                         [--max-unavailable N|N%] [--first-control-plane NODE] [--workers-every-hop]
                         [--approve-workers] [--approve-canary] [--soak SECONDS] [--soak-after-phase SECONDS]
                         [--drain-timeout SECONDS] [--host-retry SECONDS] [--acknowledge NAMESPACE/PDB]...
                         [--latencies FILE] [--repository VERSION,...] [--ssh-user USER] [--reboot-seconds N]
                         [--save-description FILE] [--task-queue QUEUE] [--output json|text] [connection options]

Rehearses the upgrade of a cluster on a simulated twin, before touching it. The worker on QUEUE
reads the cluster (workflow rehearse/NAME, read-only: nodes, roles, versions and labels;
Deployments, StatefulSets and DaemonSets with their replicas; PDBs and what they cover; bare pods;
the versions the first control plane's package repository offers, unless --repository names them).
Only names, counts, labels and versions leave the cluster (docs/rehearse.md). From them this command
starts a twin in this process: a simulated cluster, a Temporal dev server and a worker of its own,
and runs "skewless upgrade" on it with the same policy flags and target. Gates are approved at once;
a drain that blocks (a PDB) or is refused (a bare pod) is recorded and its node skipped, so the
rollout goes on. Everything is stopped and removed at the end, and on Ctrl-C.

The report: how long each phase and each node took on the twin with these latencies, every drain
that blocked (node, PDB, pods), nodes refused, pre-flight findings the real upgrade would stop on,
the live cluster's readiness as "skewless plan --cluster" shows it (removed APIs in use, hop
prerequisites, drains predicted to block, alerts firing: read through the worker, not the twin),
whether any version state the twin went through broke the skew policy, and the final versions.

${TARGET_HELP}

--latencies FILE    YAML of milliseconds per simulated host command, any of
                    ${LATENCY_KEYS.join(', ')}; defaults
                    ${Object.entries(DEFAULT_LATENCIES)
                      .map(([k, v]) => `${k} ${v}`)
                      .join(', ')}
--repository LIST   the versions the package repository offers (comma-separated), instead of asking
                    the first control plane over SSH
--drain-timeout     on the twin, default ${TWIN_DRAIN_TIMEOUT_SECONDS} s (a blocked drain is reported after it)
--save-description  write the twin's description (sim/description.ts YAML) to FILE
--ssh-user, --reboot-seconds   the twin hosts' SSH user (default skewless) and reboot downtime (default 3)
--approve-workers and --approve-canary make the twin's gates as the upgrade's (the rehearsal approves
them at once); --soak waits its time on the twin.

${CONNECTION_HELP}

Exit status: 0 the rehearsal ran (even with blocked drains or refused nodes); 1 the twin's upgrade
failed, or the cluster could not be read; 2 invalid input, or a rollout of the cluster running (an
upgrade, OS maintenance, restore or blue/green run: the cluster is half moved); 3 Temporal unreachable; 130 interrupted (the twin stopped and removed).`;

function latenciesFile(path: string | undefined): Latencies | undefined {
  if (path === undefined) return undefined;
  let raw: unknown;
  try {
    raw = parseYaml(readFileSync(path, 'utf8'));
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    throw new UsageError(
      code ? `cannot read --latencies ${path}: ${code}` : `--latencies ${path} is not valid YAML: ${(err as Error).message.split('\n')[0]}`,
    );
  }
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw))
    throw new UsageError(`--latencies ${path} must be a mapping of ${LATENCY_KEYS.join(', ')} to milliseconds`);
  const out: Latencies = {};
  for (const [k, v] of Object.entries(raw)) {
    if (!(LATENCY_KEYS as string[]).includes(k))
      throw new UsageError(`--latencies ${path}: ${k} is not a latency (${LATENCY_KEYS.join(', ')})`);
    if (typeof v !== 'number' || !Number.isInteger(v) || v < 0 || v > 3_600_000)
      throw new UsageError(`--latencies ${path}: ${k} must be milliseconds, an integer from 0 to 3600000, got ${JSON.stringify(v)}`);
    out[k as keyof Latencies] = v;
  }
  return out;
}

function repositoryList(value: string | undefined): string[] | undefined {
  if (value === undefined) return undefined;
  const versions = value
    .split(',')
    .map((v) => v.trim())
    .filter((v) => v !== '');
  if (versions.length === 0) throw new UsageError('--repository needs at least one version, e.g. 1.33.7,1.34.2');
  return versions.map((v) => {
    try {
      return parseVersion(v).text;
    } catch {
      throw new UsageError(`--repository: ${JSON.stringify(v)} is not a version such as 1.34.2`);
    }
  });
}

const nameOfNode = (nodes: Record<string, string>, twin: string) => nodes[twin] ?? twin;

/** The twin's versions as the rules read an inventory (what planUpgrade takes). */
function inventoryOf(d: SimDescription): ClusterInventory {
  const cps = d.nodes.filter((n) => n.components);
  return {
    apiservers: cps.map((n) => ({ node: n.name, version: n.components?.apiserver ?? d.version })),
    controllerManagers: cps.map((n) => ({ node: n.name, version: n.components?.controllerManager ?? d.version })),
    schedulers: cps.map((n) => ({ node: n.name, version: n.components?.scheduler ?? d.version })),
    kubelets: d.nodes.map((n) => ({ node: n.name, version: n.kubelet })),
    nodes: d.nodes.map((n) => ({ name: n.name, role: n.role, labels: n.labels })),
  };
}

async function readThroughWorker(
  client: Client,
  io: CommandIo,
  taskQueue: string,
  cluster: string,
  askRepository: boolean,
): Promise<RehearseReadResult> {
  await untilAWorkerPolls(client, taskQueue, () => io.transient?.(`waiting for a worker on task queue ${taskQueue}`));
  io.transient?.(`reading cluster ${cluster} through the worker on ${taskQueue} (workflow ${rehearseWorkflowId(cluster)})`);
  try {
    return await client.workflow.execute(rehearseReadWorkflow, {
      taskQueue,
      workflowId: rehearseWorkflowId(cluster),
      workflowIdConflictPolicy: 'FAIL',
      workflowExecutionTimeout: '15m',
      args: [{ cluster, askRepository }],
    });
  } catch (err) {
    if (err instanceof WorkflowExecutionAlreadyStartedError)
      throw new UsageError(`a rehearsal of ${cluster} is already reading it (${rehearseWorkflowId(cluster)})`);
    if (!isClientError(err, 'WorkflowFailedError')) throw err;
    const failure = summarizeWorkflowFailure(err);
    const message = `reading ${cluster} for the rehearsal failed: ${failure.message}`;
    if (failure.exit === EXIT.invalid) throw new UsageError(message);
    throw new CommandFailed(message);
  } finally {
    io.transient?.('');
  }
}

/**
 * The readiness report of the live cluster (issue 21), as `plan --cluster` reads it through the
 * worker: the twin cannot have the cluster's apiserver metrics, audit log, certificates or alerts.
 * Best effort: a read that fails is said in the report, and the rehearsal goes on.
 */
async function readinessOfLiveCluster(
  client: Client,
  io: CommandIo,
  taskQueue: string,
  input: { cluster: string; to: string; policy: ReturnType<typeof policyFromFlags> },
): Promise<RehearsalReport['readiness']> {
  try {
    const live = await planThroughWorker(client, io, taskQueue, input);
    return readinessView(
      live.readiness,
      live.plan.hops,
      (input.policy.acknowledge ?? []).filter((a) => a.includes(':')),
    );
  } catch (err) {
    return { notChecked: (err as Error).message.split('\n')[0] ?? 'unknown' };
  }
}

const REHEARSE_OPTIONS = {
  cluster: { type: 'string' },
  to: { type: 'string' },
  ...POLICY_OPTIONS,
  latencies: { type: 'string' },
  repository: { type: 'string' },
  'ssh-user': { type: 'string' },
  'reboot-seconds': { type: 'string' },
  'save-description': { type: 'string' },
  'task-queue': { type: 'string' },
  ...TEMPORAL_OPTIONS,
  ...OUTPUT_OPTION,
} as const;

type RehearseValues = ReturnType<typeof parseOptions<typeof REHEARSE_OPTIONS>>['values'];

/** Every check of the input, before Temporal is contacted. */
function rehearseInput(values: RehearseValues) {
  const output = outputFormat(values.output);
  const cluster = clusterName(values.cluster, '--cluster');
  if (!values.to) throw new UsageError('--to is required');
  const to = values.to;
  parseTarget(to);
  const policy = policyFromFlags(values);
  const latencies = latenciesFile(values.latencies);
  const repository = repositoryList(values.repository);
  const sshUser = values['ssh-user'];
  if (sshUser !== undefined && !/^[a-z_][a-z0-9_-]{0,31}$/.test(sshUser))
    throw new UsageError(`--ssh-user must be a user name such as skewless, got ${JSON.stringify(sshUser)}`);
  const rebootSeconds = intOption(values['reboot-seconds'], '--reboot-seconds', 0);
  if (rebootSeconds !== undefined && rebootSeconds > 600)
    throw new UsageError(`--reboot-seconds must be at most 600, got ${rebootSeconds}`);
  const savePath = values['save-description'] === undefined ? undefined : resolve(values['save-description']);
  if (savePath !== undefined && (!existsSync(dirname(savePath)) || !statSync(dirname(savePath)).isDirectory()))
    throw new UsageError(`--save-description: no folder ${dirname(savePath)}`);
  return { output, cluster, to, policy, latencies, repository, sshUser, rebootSeconds, savePath };
}
type RehearseInput = ReturnType<typeof rehearseInput>;

/** The live cluster's facts and readiness, read through the worker (refused while another rollout of it runs). */
async function readLiveCluster(values: RehearseValues, input: RehearseInput, io: CommandIo) {
  const { cluster, to, policy, repository } = input;
  const taskQueue = workerConfig(values).taskQueue;
  const { client, close } = await connectClient(values);
  try {
    // Mid-rollout the cluster is half moved: its twin would rehearse a state no plan starts from.
    await refuseWhileAnotherRolloutRuns(client, cluster, undefined, 'rehearse');
    const read = await readThroughWorker(client, io, taskQueue, cluster, repository === undefined);
    // --repository promises no command on the cluster's hosts; the readiness report probes them over SSH.
    const readiness: RehearsalReport['readiness'] =
      repository === undefined
        ? await readinessOfLiveCluster(client, io, taskQueue, { cluster, to, policy })
        : { notChecked: 'with --repository nothing runs on the hosts: "skewless plan --cluster" reads it' };
    return { read, readiness };
  } finally {
    await close();
  }
}

/** The twin's description from what was read, checked as the simulation would (and saved when asked). */
async function checkedTwinDescription(input: RehearseInput, read: RehearseReadResult) {
  const { cluster, latencies, sshUser, rebootSeconds, repository, savePath } = input;
  try {
    const twinDesc = twinDescription(cluster, read, {
      ...(latencies ? { latencies } : {}),
      ...(sshUser ? { sshUser } : {}),
      ...(rebootSeconds === undefined ? {} : { rebootSeconds }),
      ...(repository ? { repository } : {}),
    });
    const yaml = descriptionYaml(twinDesc.description);
    // What the simulation would refuse, refused here (the twin's module loads the simulation: 1.5 s, needed next anyway).
    (await loadTwin()).checkTwinDescription(yaml);
    if (savePath) writeFileSync(savePath, yaml);
    return twinDesc;
  } catch (err) {
    if (err instanceof TwinInputError || (err as Error).name === 'DescriptionError')
      throw new CommandFailed(`cannot model ${cluster}: ${(err as Error).message}`);
    throw err;
  }
}

/**
 * The rollout policy in the twin's names, planned here first, as the upgrade will plan: a target the
 * repository does not offer is invalid input (exit 2), nothing to do or a plan that breaks the skew
 * policy is the cluster's answer (1), and neither needs a twin to find out.
 */
function plannedTwinRollout(input: RehearseInput, twinDesc: TwinDescription) {
  const { cluster, to, policy } = input;
  const { description, names } = twinDesc;
  // The twin knows a node by its own name (a DNS label), which the policy's first control plane must use.
  const twinFirst = Object.entries(names.nodes).find(([, original]) => original === policy.firstControlPlane)?.[0];
  const twinRollout = twinFirst === undefined ? policy : { ...policy, firstControlPlane: twinFirst };
  const plan = planUpgrade({
    inventory: inventoryOf(description),
    to,
    available: description.nodes[0]?.repository ?? [],
    policy: twinRollout,
  });
  if (plan.hops.length === 0) throw new CommandFailed(`nothing to rehearse: ${cluster} is already at ${plan.from} (target ${to})`);
  if (!plan.skew.compliant) {
    const f = plan.skew.failure;
    const where = f?.step ? `step "${f.step.detail}" of ${f.step.hop}` : 'the cluster as it is';
    throw new CommandFailed(
      `the upgrade of ${cluster} would refuse to start: ${where} breaks the skew policy: ${f?.violations.map((v) => `${v.component} on ${nameOfNode(names.nodes, v.node)} at ${v.version}: ${v.rule}`).join('; ')}`,
    );
  }
  return twinRollout;
}

/**
 * The real upgrade's pre-flight refuses budgets that allow no eviction unless acknowledged; the
 * twin acknowledges them all (mapped to its names) so that the rehearsal shows where drains block.
 * It acknowledges the capacity check too (`capacity:*`): nodes the rehearsal skips stay cordoned
 * to the end, which would halt the next batch before its drains; `plan --cluster` shows each batch's
 * headroom on the cluster itself. `preflight`: what the real upgrade would refuse.
 */
function twinPolicyOf(input: RehearseInput, read: RehearseReadResult, twinDesc: TwinDescription, twinRollout: RehearseInput['policy']) {
  const { policy } = input;
  const twinPdbOf = Object.fromEntries(Object.entries(twinDesc.names.pdbs).map(([twin, original]) => [original, twin]));
  const findings = auditPdbs(read.facts.pdbs.map((p) => ({ ...p, coveredPods: p.pods }))).filter((f) => f.severity === 'error');
  const preflight = findings.filter((f) => !(policy.acknowledge ?? []).includes(`${f.namespace}/${f.name}`)).map((f) => f.message);
  const acknowledge = [
    ...new Set(
      [...findings.map((f) => `${f.namespace}/${f.name}`), ...(policy.acknowledge ?? []), 'capacity:*'].map((a) => twinPdbOf[a] ?? a),
    ),
  ];
  const drainTimeoutSeconds = policy.drainTimeoutSeconds ?? TWIN_DRAIN_TIMEOUT_SECONDS;
  const twinPolicy = { ...twinRollout, drainTimeoutSeconds, ...(acknowledge.length ? { acknowledge } : {}) };
  return { twinPolicy, preflight, drainTimeoutSeconds };
}

export async function rehearseCommand(args: string[], io: CommandIo): Promise<number> {
  const { values } = parseOptions(args, REHEARSE_OPTIONS);
  if (helpAsked(values, rehearseHelp, io)) return EXIT.ok;
  const input = rehearseInput(values);
  const { read, readiness } = await readLiveCluster(values, input, io);
  const twinDesc = await checkedTwinDescription(input, read);
  const twinRollout = plannedTwinRollout(input, twinDesc);
  const { twinPolicy, preflight, drainTimeoutSeconds } = twinPolicyOf(input, read, twinDesc, twinRollout);
  return rehearseOnTwin(io, input, twinDesc, twinPolicy, (outcome, recorded, history, seconds) =>
    rehearsalReport({ input, twinDesc, outcome, recorded, history, preflight, readiness, drainTimeoutSeconds, seconds }),
  );
}

type RehearseOutcome = Awaited<ReturnType<typeof rehearseUpgrade>>;
type TwinVersions = Awaited<ReturnType<Twin['versions']>>;
type TwinHistory = Awaited<ReturnType<ReturnType<Twin['client']['workflow']['getHandle']>['fetchHistory']>>;

/** The report of the twin's upgrade, in the cluster's names. */
function rehearsalReport(r: {
  input: RehearseInput;
  twinDesc: TwinDescription;
  outcome: RehearseOutcome;
  recorded: TwinVersions;
  history: TwinHistory;
  preflight: string[];
  readiness: RehearsalReport['readiness'];
  drainTimeoutSeconds: number;
  seconds: number;
}): RehearsalReport {
  const { outcome } = r;
  const { description, names, notModelled } = r.twinDesc;
  const nameOf = (twin: string) => names.nodes[twin] ?? twin;
  const timings = twinTimings(r.history.events ?? [], outcome.status);
  const blocks = blocksOf(outcome, names);
  const leftBehind = outcome.status.skipped.length > 0 || blocks.blockedDrains.length + blocks.refusedNodes.length > 0;
  return {
    cluster: r.input.cluster,
    target: outcome.status.to,
    from: outcome.status.from,
    hops: outcome.status.hops,
    outcome: outcome.failure ? 'failed' : leftBehind ? 'partial' : 'upgraded',
    ...(outcome.failure ? { failure: outcome.failure } : {}),
    preflight: r.preflight,
    readiness: r.readiness,
    phases: timings.phases.map((p) => ({ ...p, nodes: p.nodes.map(nameOf) })),
    nodes: timings.nodes.map((n) => ({ ...n, node: nameOf(n.node) })),
    ...blocks,
    skew: skewOfHistory(r.recorded.history, nameOf),
    finalVersions: finalVersions(r.recorded.final, nameOf),
    twin: {
      nodes: description.nodes.length,
      workloads: description.workloads.length,
      drainTimeoutSeconds: r.drainTimeoutSeconds,
      latenciesMs: { ...(description.nodes[0]?.latencies ?? {}) },
      notModelled,
    },
    seconds: r.seconds,
  };
}

/**
 * Starts the twin, upgrades it with `twinPolicy`, prints the report `report` makes and stops the twin.
 * Ctrl-C (and SIGTERM, SIGHUP) stop the twin and everything it started before the process exits.
 */
async function rehearseOnTwin(
  io: CommandIo,
  input: RehearseInput,
  twinDesc: TwinDescription,
  twinPolicy: RehearseInput['policy'],
  report: (outcome: RehearseOutcome, recorded: TwinVersions, history: TwinHistory, seconds: number) => RehearsalReport,
): Promise<number> {
  const { cluster, to, output } = input;
  const interrupted = new AbortController();
  const onSignal = (signal: NodeJS.Signals) => interrupted.abort(new Error(`interrupted (${signal})`));
  const signals = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const;
  for (const s of signals) process.on(s, onSignal);
  const say = (line: string) => io.transient?.(`rehearse ${cluster}: ${line}`);
  const t0 = Date.now();
  let twin: Twin | undefined;
  let starting: Promise<Twin> | undefined;
  try {
    const aborted = new Promise<never>((_, reject) =>
      interrupted.signal.addEventListener('abort', () => reject(interrupted.signal.reason as Error), { once: true }),
    );
    aborted.catch(() => undefined);
    // Loaded here: the twin brings the simulation and a worker, 1.5 s of imports every other command skips.
    starting = loadTwin().then(({ startTwin }) => startTwin(twinDesc.description, { signal: interrupted.signal, say }));
    starting.catch(() => undefined); // awaited here, or on interruption below
    twin = await Promise.race([starting, aborted]);
    say(`upgrading the twin to ${to}`);
    const outcome = await Promise.race([
      rehearseUpgrade(twin.client, twin.taskQueue, { cluster, to, policy: twinPolicy }, { signal: interrupted.signal, say }),
      aborted,
    ]);
    const recorded = await twin.versions();
    const history = await twin.client.workflow.getHandle(outcome.workflowId).fetchHistory();
    const rehearsal = report(outcome, recorded, history, Math.round((Date.now() - t0) / 100) / 10);
    await twin.stop();
    twin = undefined;
    if (output === 'json') printJson(io, rehearsal, true);
    else io.out(reportText(rehearsal));
    if (rehearsal.outcome !== 'failed') return EXIT.ok;
    io.err(`skewless: the twin's upgrade of ${cluster} failed: ${rehearsal.failure ?? 'see the report'}`);
    return EXIT.notCompliant;
  } catch (err) {
    if (interrupted.signal.aborted) {
      io.err(`skewless: rehearsal of ${cluster} interrupted: the twin was stopped and removed`);
      // A twin still starting stops itself once it sees the signal; wait for that.
      await (twin ?? (await starting?.catch(() => undefined)))?.stop();
      return EXIT.interrupted;
    }
    throw new CommandFailed(`the rehearsal of ${cluster} could not run: ${(err as Error).message.split('\n')[0]}`);
  } finally {
    await twin?.stop();
    for (const s of signals) process.off(s, onSignal);
  }
}

type TwinModule = typeof TwinModuleNs;

/**
 * The twin's module, which loads the simulation (sim/): part of a checkout, not of the npm package,
 * whose `files` leave the test world out (its Go builds are the repository's). There, one line says so.
 */
async function loadTwin(): Promise<TwinModule> {
  try {
    return await import('../rehearse/twin.js');
  } catch (err) {
    const e = err as NodeJS.ErrnoException;
    if (e.code === 'ERR_MODULE_NOT_FOUND' && /[\\/]dist[\\/]sim[\\/]/.test(e.message))
      throw new CommandFailed('rehearse runs a simulated twin, which comes with a clone of the repository, not with the npm package');
    throw err;
  }
}
