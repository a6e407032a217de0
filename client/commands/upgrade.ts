import { parseTarget, reversibleRunInput } from '../../rules/index.js';
import { limitReason, SETTING_LIMITS } from '../../contracts/time-limits.js';
import { CONNECTION_HELP } from '../../worker/config.js';
import { clusterUpgradeWorkflow } from '../../workflows/cluster-upgrade-workflow.js';
import { type CommandIo, EXIT, helpAsked, parseOptions, requireOption, UsageError } from '../cli-support.js';
import { REVERSIBLE_FLAGS, splitReversibleAcks } from '../reversible-flag.js';
import { POLICY_OPTIONS, policyFromFlags, TARGET_HELP } from '../policy-flags.js';
import { outputFormat } from '../output.js';
import { parseAcknowledgementReasons, parseAcknowledgements } from '../acknowledge-flags.js';
import { clusterName, operatorIdentity } from '../temporal-connection.js';
import { announceStart, START_OPTIONS, startAndFollow } from '../start-and-follow.js';
import { watchRollout } from './watch.js';

export const upgradeHelp = `Usage: skewless upgrade --cluster NAME --to TARGET [--canary N] [--batch-size N]
                        [--max-unavailable N|N%] [--first-control-plane NODE] [--workers-every-hop]
                        [--batch-by LABEL [--batch-order VALUE,...]] [--rebalance]
                        [--approve-workers] [--approve-canary] [--soak SECONDS] [--soak-after-phase SECONDS]
                        [--drain-timeout SECONDS] [--on-drain-timeout wait|quarantine] [--host-retry SECONDS]
                        [--fix-prerequisites] [--acknowledge NAMESPACE/PDB|CHECK:SUBJECT]...
                        [--reversible [--auto-commit] [--acknowledge reversible:HOP]...]
                        [--acknowledge-removed-api GROUP/VERSION/RESOURCE]... [--by NAME] [--reason [NAME=]TEXT]... [--detach]
                        [--task-queue QUEUE] [--output json|text] [connection options]

Starts the durable upgrade of a cluster (workflow id upgrade/NAME) on Temporal and watches it;
with --detach it returns at once (re-attach with "skewless watch NAME"). One upgrade per cluster:
a second one is refused while the first runs. --first-control-plane names the control plane that
runs "kubeadm upgrade apply" (default: the first by name); a node that is not a control plane of the
cluster is refused before anything is touched. Across several hops the control planes move at every
hop and each worker as seldom as the skew policy allows (a kubelet may be three minors behind a 1.28+
kube-apiserver): 1.32 → 1.34 drains each worker once, straight to 1.34; --workers-every-hop moves
every worker at every hop instead. --batch-by LABEL (a node label, such as topology.kubernetes.io/zone)
keeps every batch inside one value of the label and takes the canary from the first value; --batch-order
a,b,c says which values go first (the others follow by name). Before each phase the pods its nodes would
evict are fitted onto the nodes that stay schedulable (their requests against what is left allocatable,
taints and node selectors as the API shows them): a phase that would not fit runs fewer nodes at once, and
one whose single node would not fit halts before any eviction, naming the pods that would stay Pending.
After each hop the Deployments left with every replica on one node are named; --rebalance restarts
them (their own rollout, one at a time, only while their PodDisruptionBudgets allow a disruption). A drain that has not finished after
--drain-timeout (default: the cluster configuration's drain.timeoutSeconds; at most ${SETTING_LIMITS.drainTimeoutSeconds.max}: ${limitReason('drainTimeoutSeconds')}) waits for "skewless resolve"
(--on-drain-timeout wait, the default); with --on-drain-timeout quarantine a worker's drain that timed out
does not wait: the node is labelled skewless.io/quarantined=HOP, a SkewlessQuarantined Event names the pods
that stayed, and the node stays cordoned at its old version (pods evicted so far stay evicted) while the run
goes on without it; a later hop that would leave it outside the skew policy halts for "skewless resolve".
A node whose step keeps failing waits too: a host unreachable is retried for --host-retry seconds of backoff
(default about 7 minutes), a changed host key or a node not Ready after the kubelet restart not at all. The worker on QUEUE (SKEWLESS_TASK_QUEUE, default
"skewless") resolves NAME to the cluster's credentials.

${TARGET_HELP}

Readiness (as "skewless plan --cluster" shows it): a removed API still in use, a hop prerequisite
(etcd, cgroup, containerd, kubeadm configuration API, certificates, repositories) holds the upgrade
before anything is touched, naming what to acknowledge; --acknowledge CHECK:SUBJECT (or
--acknowledge-removed-api GROUP/VERSION/RESOURCE) lets it go, recorded in the run's input and events
with --by (default user@host) and --reason TEXT (every acknowledgement's), or --reason NAME=TEXT once per
acknowledgement NAME for reasons of their own. Drains predicted to block are shown, never held.
--fix-prerequisites lets the runbook fix what it can instead (docs/real-cluster.md, "etcd before 3.6"):
before the hop whose kubeadm brings etcd 3.6, an etcd snapshot, then each stacked member below 3.5.26
patched to the newest 3.5 image, followers first and the leader last, etcd's health and quorum checked
after each; the flag is the operator's approval of that step, and its etcd-version holds need no acknowledgement.

--reversible (docs/reversible-hops.md): each hop whose binaries can emulate the minor below runs as a
trial first: every control plane moves to the hop's kube-apiserver, controller-manager and scheduler
emulating the old minor (etcd, kubelets, addons and kubeadm-config stay), then the run waits at gate
commit-HOP. "skewless approve NAME --gate commit-HOP" commits it (the emulation removed control plane by
control plane, etcd and addons moved, then the kubelets as in any hop; from then on the way back is the
etcd snapshot); "skewless rollback NAME" (or an abort at the gate) takes every control plane and its
kubeadm package back to the old version with no etcd restore, and the run ends. A hop that cannot be
reversible refuses the start unless acknowledged with --acknowledge reversible:HOP ("skewless plan" says why).
--auto-commit commits a trial without the approval once its soak passes: the trial soaks the longer of
--soak and --soak-after-phase (one of them is required), the alert gate finds nothing firing and the
probes pass again; "skewless status" and the history say it was committed automatically and after what
soak. An alert that held the trial leaves the commit to the operator at the gate.

The operator's signals (the cluster configuration's probes[] and alerts:): the probes run after the
control plane and after every phase, and one failing halts the run; an alert the alerts: matchers
select, firing in the operator's Prometheus, holds a phase before it starts (gate alerts-before-PHASE-HOP,
until it clears) and halts the run after a phase (gate alerts-after-PHASE-HOP); "skewless approve NAME
--gate GATE" goes on while it fires, --acknowledge alert:NAME does from the start. A Prometheus that
cannot be asked refuses the start and holds a phase. --soak-after-phase SECONDS waits after the control
plane and every phase (after the canary, the longer of it and --soak).

Following the run, it prints "checking upgrade/NAME to TARGET" first and "started upgrade/NAME to TARGET"
only once the run is past its inventory and pre-flight: a refused upgrade never says started. Ctrl-C
stops following (exit 130); the upgrade goes on in Temporal ("skewless watch NAME" re-attaches).

--output json: with --detach, one object {"type":"started","cluster","workflowId","runId","to","at"} (the
workflow started; its pre-flight runs on the worker); following the run, that object once the pre-flight
passed (none for a refused upgrade), then one per line (NDJSON) for each change, as "skewless watch --output json".

${CONNECTION_HELP}

A cluster an earlier run left half-way (aborted after the control plane, a node skipped) is finished by
the same command: with the control plane at the target, only the nodes below it move (see "skewless plan").

Exit status: 0 upgraded (or started, with --detach); 4 upgraded but nodes left behind (skipped by the
operator, quarantined, or cordoned by someone else and left so), each named in the last line; 1 failed, aborted, or refused by the cluster
as it is (skew, NotReady node, blocking PDB, nothing to upgrade); 2 invalid input (flags, version,
unknown cluster or configuration, a target the repository does not offer or a downgrade) or an
upgrade or OS maintenance (skewless maintain) of the cluster already running; 3 Temporal unreachable;
130 interrupted (the upgrade goes on).`;

export async function upgradeCommand(args: string[], io: CommandIo): Promise<number> {
  const { values } = parseOptions(args, {
    cluster: { type: 'string' },
    to: { type: 'string' },
    ...POLICY_OPTIONS,
    reversible: { type: 'boolean' },
    'auto-commit': { type: 'boolean' },
    'acknowledge-removed-api': { type: 'string', multiple: true },
    by: { type: 'string' },
    reason: { type: 'string', multiple: true },
    ...START_OPTIONS,
  });
  if (helpAsked(values, upgradeHelp, io)) return EXIT.ok;
  const output = outputFormat(values.output);
  const cluster = clusterName(values.cluster, '--cluster');
  const to = requireOption(values.to, '--to');
  parseTarget(to); // a bad version is refused here, before Temporal is contacted
  const removedApis = parseAcknowledgements([], values['acknowledge-removed-api']).readiness;
  // `reversible:<hop>` acknowledges a hop that cannot be reversible (issue 36): the run's input, not a policy key.
  const acks = splitReversibleAcks(values.acknowledge);
  if (acks.reversible.length > 0 && values.reversible !== true) throw new UsageError('--acknowledge reversible:HOP goes with --reversible');
  const policy = policyFromFlags({ ...values, acknowledge: [...(acks.rest ?? []), ...removedApis] });
  const asked = { reversible: values.reversible, autoCommit: values['auto-commit'], acknowledged: acks.reversible };
  const reversibleInput = reversibleRunInput(asked, policy, REVERSIBLE_FLAGS);
  const reversible = reversibleInput ? { reversible: reversibleInput } : {};
  const acknowledgedBy = { by: operatorIdentity(values.by), ...parseAcknowledgementReasons(values.reason ?? [], policy.acknowledge ?? []) };

  let started: () => void = () => undefined;
  return await startAndFollow(
    values,
    clusterUpgradeWorkflow,
    [{ cluster, to, policy, ...(policy.acknowledge?.length ? { acknowledgedBy } : {}), ...reversible }],
    {
      rollout: { cluster, kind: 'upgrade', verb: 'upgrade' },
      alreadyRunning: `an upgrade of ${cluster} is already running; watch it with "skewless watch ${cluster}"`,
      announce: (runId, workflowId) => {
        started = announceStart(io, output, cluster, (id) => `started ${id} to ${to}`, { to }).bind(undefined, runId, workflowId);
        // Detached, the workflow's start is all there is to report: its pre-flight runs later, on the worker.
        if (values.detach && output === 'json') started();
        else if (values.detach)
          io.out(
            `started ${workflowId} to ${to} (detached: the worker checks it before it touches anything; "skewless watch ${cluster}" says whether it passed)`,
          );
        // Following: "started" only once the run is past its inventory and pre-flight, so a refusal never reads as a start.
        else if (output === 'text') io.out(`checking ${workflowId} to ${to}: inventory, skew and pre-flight on the worker`);
      },
      follow: (client) => watchRollout(client, cluster, io, { output, onStarted: () => started() }),
    },
  );
}
