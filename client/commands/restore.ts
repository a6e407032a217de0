import type { Client } from '@temporalio/client';
import { CONNECTION_HELP } from '../../worker/config.js';
import { restoreStatusQuery, type RestoreInput, type RestoreStatus } from '../../workflows/restore-messages.js';
import { restoreWorkflowId } from '../../contracts/workflow-ids.js';
import { limitReason, SETTING_LIMITS, type SettingName } from '../../contracts/time-limits.js';
import { restoreWorkflow } from '../../workflows/restore-workflow.js';
import { type CommandIo, EXIT, helpAsked, parseOptions, UsageError } from '../cli-support.js';
import { nodeName } from '../input-checks.js';
import { outputFormat, printRecord, type Output } from '../output.js';
import { clusterName, connectClient } from '../temporal-connection.js';
import { announceStart, eventPrinter, followRun, START_OPTIONS, startAndFollow } from '../start-and-follow.js';
import { reportRunEnding } from '../workflow-failure.js';

export const restoreHelp = `Usage: skewless restore --cluster NAME --hop VERSION [--snapshot PATH] [--control-plane NODE]...
       skewless restore --cluster NAME --snapshot PATH [--control-plane NODE]...
                        [--stop-timeout SECONDS] [--verify-timeout SECONDS] [--detach] [--watch]
                        [--task-queue QUEUE] [--output json|text] [connection options]

Restores the control plane of a stacked-etcd kubeadm cluster from an etcd snapshot (workflow id
restore/NAME): the one the upgrade took before --hop VERSION (skewless history NAME lists them; the
worker holds its verified copy and hash; with --snapshot too, that snapshot found at PATH on the control
planes, still checked against its record), or any snapshot file on the control planes (--snapshot alone,
an absolute path; hash and revision read from the first control plane). DESTRUCTIVE: everything written to the cluster after the snapshot is lost. Nothing
is touched before the approval gate "restore-VERSION" (skewless approve NAME --gate restore-VERSION):
the snapshot is checked on every control plane first (with --hop, the worker's copy is placed where
it is missing; sha256 against the record, etcdutl snapshot status), and the gate says from when the
data will be lost. Then, on each control plane in turn:
the static pods are stopped (their manifests moved out of /etc/kubernetes/manifests), etcd is
restored with etcdutl into a fresh data dir (each member under its own name and peer URL) and swapped
in (the old data dir is kept beside it), the manifests go back; last, etcd's revision and the
apiserver are verified. Control planes default to the nodes labelled node-role.kubernetes.io/control-plane.
Abort (skewless abort NAME --workflow restore) works until the first data dir is swapped; the control planes
stopped by then start again on their old data. External etcd: see docs/restore.md (not automated).
--watch re-attaches to a running restore.

--output json: one object per line (NDJSON): "started", then "event", "progress" and "gate" records,
last "result" or "failed".

${CONNECTION_HELP}

Exit status: 0 restored (or started, with --detach); 1 failed or aborted; 2 invalid input or a restore
of the cluster already running; 3 Temporal unreachable.`;

const HOP = /^v?\d+\.\d+\.\d+$/;
const PATH = /^(\/[A-Za-z0-9_][A-Za-z0-9._-]{0,127}){1,16}$/;

function seconds(value: string | undefined, flag: string, setting: SettingName): number | undefined {
  if (value === undefined) return undefined;
  const { max } = SETTING_LIMITS[setting];
  if (!/^\d{1,6}$/.test(value) || Number(value) < 1 || Number(value) > max)
    throw new UsageError(`${flag} must be whole seconds from 1 to ${max} (${limitReason(setting)}), got ${JSON.stringify(value)}`);
  return Number(value);
}

export async function restoreCommand(args: string[], io: CommandIo): Promise<number> {
  const { values } = parseOptions(args, {
    cluster: { type: 'string' },
    hop: { type: 'string' },
    snapshot: { type: 'string' },
    'control-plane': { type: 'string', multiple: true },
    'stop-timeout': { type: 'string' },
    'verify-timeout': { type: 'string' },
    watch: { type: 'boolean' },
    ...START_OPTIONS,
  });
  if (helpAsked(values, restoreHelp, io)) return EXIT.ok;
  const output = outputFormat(values.output);
  const cluster = clusterName(values.cluster, '--cluster');
  if (values.watch) {
    if (values.hop !== undefined || values.snapshot !== undefined)
      throw new UsageError('--watch re-attaches to a running restore: it takes no --hop or --snapshot');
    const { client, close } = await connectClient(values);
    try {
      return await watchRestore(client, cluster, io, output);
    } finally {
      await close();
    }
  }
  if (values.hop === undefined && values.snapshot === undefined)
    throw new UsageError('name the snapshot: --hop VERSION (the one the upgrade took before that hop), --snapshot PATH, or both');
  if (values.hop !== undefined && !HOP.test(values.hop))
    throw new UsageError(`--hop must be the version of an upgrade hop such as 1.33.7, got ${JSON.stringify(values.hop)}`);
  if (values.snapshot !== undefined && (!PATH.test(values.snapshot) || values.snapshot.split('/').includes('..'))) {
    throw new UsageError(
      `--snapshot must be an absolute path on the control planes (letters, digits, '.', '_', '-'), got ${JSON.stringify(values.snapshot)}`,
    );
  }
  const controlPlanes = values['control-plane']?.map((n) => nodeName(n, '--control-plane'));
  const input: RestoreInput = {
    cluster,
    ...(values.hop !== undefined ? { hop: values.hop.replace(/^v/, '') } : {}),
    ...(values.snapshot !== undefined ? { snapshotPath: values.snapshot } : {}),
    ...(controlPlanes ? { controlPlanes } : {}),
    ...(values['stop-timeout'] !== undefined
      ? { stopTimeoutSeconds: seconds(values['stop-timeout'], '--stop-timeout', 'restore.stopTimeoutSeconds') as number }
      : {}),
    ...(values['verify-timeout'] !== undefined
      ? { verifyTimeoutSeconds: seconds(values['verify-timeout'], '--verify-timeout', 'restore.verifyTimeoutSeconds') as number }
      : {}),
  };

  const from = input.hop ? `the snapshot before ${input.hop}` : input.snapshotPath;
  return await startAndFollow(values, restoreWorkflow, [input], {
    rollout: { cluster, kind: 'restore', verb: 'restore' },
    alreadyRunning: `a restore of ${cluster} is already running; follow it with "skewless restore --cluster ${cluster} --watch"`,
    announce: announceStart(
      io,
      output,
      cluster,
      (id) => `started ${id} from ${from}`,
      input.hop ? { hop: input.hop } : { snapshot: input.snapshotPath },
    ),
    follow: (client) => watchRestore(client, cluster, io, output),
  });
}

const progressOf = (s: RestoreStatus) => ({
  phase: s.phase,
  paused: s.paused,
  members: s.members.map((m) => ({ node: m.node, member: m.name, phase: m.phase })),
  revision: s.revision ?? null,
});

/** Follows `restore/<cluster>` until it closes, as `watch` follows an upgrade; returns the exit code. */
export async function watchRestore(client: Client, cluster: string, io: CommandIo, output: Output, pollMs = 1000): Promise<number> {
  const json = output === 'json';
  const record = (type: string, fields: Record<string, unknown>) => printRecord(io, type, cluster, fields);
  const handle = client.workflow.getHandle(restoreWorkflowId(cluster));
  const printEvents = eventPrinter(io, json ? record : undefined);
  let last = '';
  const gates = new Map<string, string>();
  return await followRun({
    io,
    handle,
    notFound: `no restore of ${cluster} found`,
    pollMs,
    status: () => handle.query(restoreStatusQuery).catch(() => undefined),
    ending: () => reportRunEnding(handle, cluster, 'restore', io, json),
    show: (s) => {
      printEvents(s.events);
      const progress = progressOf(s);
      const key = JSON.stringify(progress);
      if (key !== last) {
        if (json) record('progress', progress);
        else
          io.out(`${cluster}: ${s.phase}${s.paused ? ' (paused)' : ''}; ${progress.members.map((m) => `${m.node} ${m.phase}`).join(', ')}`);
      }
      last = key;
      for (const g of s.gates) {
        const state = g.approvedBy ? 'approved' : 'waiting';
        if (gates.get(g.name) === state) continue;
        gates.set(g.name, state);
        const command = `skewless approve ${cluster} --gate ${g.name}`;
        if (json) record('gate', { gate: g.name, state, ...(g.approvedBy ? { approvedBy: g.approvedBy } : { loses: s.loses, command }) });
        else if (state === 'waiting') {
          io.out(`  gate ${g.name} waits. Approving it loses ${s.loses ?? 'everything written since the snapshot'}.`);
          io.out(`    approve with: ${command}   (or: skewless abort ${cluster} --workflow restore)`);
        }
      }
      return `${cluster}: restore ${s.phase}`;
    },
  });
}
