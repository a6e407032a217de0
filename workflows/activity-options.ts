import { msToNumber } from '@temporalio/common/lib/time.js';
import type { ActivityOptions } from '@temporalio/workflow';
import type { Activities } from '../activities/index.js';
import { NEVER_RETRY } from '../contracts/failure-types.js';
import { PROFILE_SECONDS, type ProfileName } from '../contracts/time-limits.js';

/**
 * The one place that declares activity timeouts and retry policies, with the reason for each.
 * Every profile sets startToCloseTimeout, a finite maximumInterval, a bounded attempt count and the
 * failure types that retrying cannot fix (activities/errors.ts), so nothing relies on the SDK's
 * infinite-retry default by accident. Anything that can run past a minute heartbeats.
 */

/**
 * How long Temporal waits for a heartbeat before it takes the worker for dead and retries the
 * activity elsewhere: what a worker crash costs the upgrade. Every heartbeating activity beats at
 * least every 5 s while it runs (host commands, drains, waits) and the worker sends them that often.
 */
const WORKER_LOST = '20 seconds';

/** A profile's start-to-close, from the one table of time limits (the settings that run inside it are capped there). */
const startToClose = (profile: ProfileName) => `${PROFILE_SECONDS[profile]} seconds`;

/** Short, read-only calls that answer in seconds. */
export const quickRead: ActivityOptions = {
  startToCloseTimeout: startToClose('quickRead'),
  retry: {
    initialInterval: '1 second',
    backoffCoefficient: 2,
    maximumInterval: '30 seconds',
    maximumAttempts: 10,
    nonRetryableErrorTypes: [],
  },
};

/** Reads of the API (inventory, health): cheap and idempotent, so retried often but briefly. */
export const kubeRead: ActivityOptions = {
  startToCloseTimeout: startToClose('kubeRead'),
  retry: {
    initialInterval: '1 second',
    backoffCoefficient: 2,
    maximumInterval: '30 seconds',
    maximumAttempts: 10,
    nonRetryableErrorTypes: [...NEVER_RETRY, 'NotFound'],
  },
};

/** Writes to the API (cordon, labels): idempotent by construction; Conflict is retried with a fresh read. */
export const kubeWrite: ActivityOptions = {
  startToCloseTimeout: startToClose('kubeWrite'),
  retry: {
    initialInterval: '1 second',
    backoffCoefficient: 2,
    maximumInterval: '30 seconds',
    maximumAttempts: 10,
    nonRetryableErrorTypes: [...NEVER_RETRY, 'NotFound'],
  },
};

/**
 * The readiness report reads the API and, over SSH, every node (cgroup, certificates, the next minors'
 * repositories, the audit logs), eight hosts at a time, each read within 30 s: longer than a kube read.
 */
export const readinessRead: ActivityOptions = { ...kubeRead, startToCloseTimeout: startToClose('readinessRead') };

/**
 * One command on a host (available versions, kubeadm upgrade plan/node, packages). A host that
 * reboots or refuses SSH (HostUnreachable) is retried for about 7 minutes of backoff (12 attempts),
 * then the node is reported blocked; the policy's hostRetrySeconds changes that budget.
 */
export const hostCommand: ActivityOptions = {
  startToCloseTimeout: startToClose('hostCommand'),
  heartbeatTimeout: WORKER_LOST,
  retry: {
    initialInterval: '2 seconds',
    backoffCoefficient: 2,
    maximumInterval: '1 minute',
    maximumAttempts: 12,
    nonRetryableErrorTypes: [...NEVER_RETRY, 'HostCommandFailed'],
  },
};

/** `kubeadm upgrade apply` pulls images and restarts static pods: minutes, heartbeated. */
export const kubeadmApply: ActivityOptions = {
  startToCloseTimeout: startToClose('kubeadmApply'),
  heartbeatTimeout: WORKER_LOST,
  retry: {
    initialInterval: '5 seconds',
    backoffCoefficient: 2,
    maximumInterval: '2 minutes',
    maximumAttempts: 5,
    nonRetryableErrorTypes: [...NEVER_RETRY, 'HostCommandFailed'],
  },
};

/** kubelet restart and the wait for Ready at the target version. */
export const kubeletRestart: ActivityOptions = {
  startToCloseTimeout: startToClose('kubeletRestart'),
  heartbeatTimeout: WORKER_LOST,
  retry: {
    initialInterval: '5 seconds',
    backoffCoefficient: 2,
    maximumInterval: '1 minute',
    maximumAttempts: 5,
    nonRetryableErrorTypes: [...NEVER_RETRY, 'HostCommandFailed', 'NodeNotReady'],
  },
};

/**
 * Drain: runs up to the cluster's drain timeout, heartbeating which pods are left. DrainBlocked is
 * not retried: the workflow turns it into a wait for the operator.
 */
export const drain: ActivityOptions = {
  startToCloseTimeout: startToClose('drain'),
  heartbeatTimeout: WORKER_LOST,
  retry: {
    initialInterval: '5 seconds',
    backoffCoefficient: 2,
    maximumInterval: '1 minute',
    maximumAttempts: 5,
    nonRetryableErrorTypes: [...NEVER_RETRY, 'DrainBlocked'],
  },
};

/** etcd snapshot save + status + copy off the node: size-bound, heartbeated while copying. */
export const etcdSnapshot: ActivityOptions = {
  startToCloseTimeout: startToClose('etcdSnapshot'),
  heartbeatTimeout: WORKER_LOST,
  retry: {
    initialInterval: '5 seconds',
    backoffCoefficient: 2,
    maximumInterval: '1 minute',
    maximumAttempts: 5,
    nonRetryableErrorTypes: [...NEVER_RETRY, 'HostCommandFailed'],
  },
};

/**
 * The etcd patch step's member edit (activities/etcd-patch.ts): a `sed -i` of one manifest line and
 * two reads, idempotent. A host that refuses SSH is retried as any host command; a manifest not of
 * kubeadm's shape or a failed edit (VerificationFailed, HostCommandFailed) is the operator's to look at.
 */
export const etcdMemberPatch: ActivityOptions = {
  startToCloseTimeout: '5 minutes',
  heartbeatTimeout: WORKER_LOST,
  retry: {
    initialInterval: '2 seconds',
    backoffCoefficient: 2,
    maximumInterval: '1 minute',
    maximumAttempts: 12,
    nonRetryableErrorTypes: [...NEVER_RETRY, 'HostCommandFailed', 'VerificationFailed'],
  },
};

/**
 * etcd whole again between two members: the activity polls etcd's own API for up to 4 minutes itself
 * (heartbeating), so an Unhealthy verdict is final for the step; one retry covers a lost worker.
 */
export const etcdHealth: ActivityOptions = {
  startToCloseTimeout: '5 minutes',
  heartbeatTimeout: WORKER_LOST,
  retry: {
    initialInterval: '5 seconds',
    backoffCoefficient: 2,
    maximumInterval: '30 seconds',
    maximumAttempts: 2,
    nonRetryableErrorTypes: [...NEVER_RETRY, 'Unhealthy', 'HostCommandFailed'],
  },
};

/** Health checks: a failing check is information for the workflow, not something to retry blindly. */
export const healthCheck: ActivityOptions = {
  startToCloseTimeout: startToClose('healthCheck'),
  heartbeatTimeout: WORKER_LOST,
  retry: {
    initialInterval: '2 seconds',
    backoffCoefficient: 2,
    maximumInterval: '30 seconds',
    maximumAttempts: 3,
    nonRetryableErrorTypes: [...NEVER_RETRY, 'Unhealthy', 'NotFound', 'NodeNotReady'],
  },
};

/**
 * The alert gate's query of the operator's Prometheus (activities/alerts.ts): one HTTP request of at
 * most alerts.timeoutSeconds (30 at the most). An unreachable Prometheus is retried for about 15 s of backoff (a
 * restart, a blip), then reaches the workflow, which holds the phase for the operator: the gate never
 * reads "cannot ask" as "nothing fires".
 */
export const prometheusQuery: ActivityOptions = {
  startToCloseTimeout: startToClose('prometheusQuery'),
  retry: {
    initialInterval: '1 second',
    backoffCoefficient: 2,
    maximumInterval: '8 seconds',
    maximumAttempts: 5,
    nonRetryableErrorTypes: [...NEVER_RETRY],
  },
};

/** Reboot and wait for SSH and Ready to come back. */
export const reboot: ActivityOptions = {
  startToCloseTimeout: startToClose('reboot'),
  heartbeatTimeout: WORKER_LOST,
  retry: {
    initialInterval: '10 seconds',
    backoffCoefficient: 2,
    maximumInterval: '2 minutes',
    maximumAttempts: 3,
    nonRetryableErrorTypes: [...NEVER_RETRY, 'HostCommandFailed', 'NodeNotReady'],
  },
};

/**
 * The operator's OS upgrade command (maintenance.command): up to maintenance.timeoutSeconds (capped
 * under this limit in contracts/time-limits.ts), heartbeated. A failing command is the operator's to look at
 * (HostCommandFailed: the node waits); a host that refuses SSH is retried as for any host command.
 */
export const maintenanceCommand: ActivityOptions = {
  startToCloseTimeout: startToClose('maintenanceCommand'),
  heartbeatTimeout: WORKER_LOST,
  retry: {
    initialInterval: '5 seconds',
    backoffCoefficient: 2,
    maximumInterval: '1 minute',
    maximumAttempts: 5,
    nonRetryableErrorTypes: [...NEVER_RETRY, 'HostCommandFailed'],
  },
};

/** Blue/green planning: a read of the API whose refusals (BlueGreenInvalid) are the operator's to change. */
export const poolRead: ActivityOptions = {
  ...kubeRead,
  retry: { ...kubeRead.retry, nonRetryableErrorTypes: [...NEVER_RETRY, 'NotFound', 'BlueGreenInvalid'] },
};

/**
 * Blue/green machines created (and their Nodes awaited up to provisioning.joinTimeoutSeconds, capped
 * in contracts/time-limits.ts) or removed through the cluster's provider, heartbeated. ProvisionFailed carries its own
 * verdict: a provider's refusal or a failed command is not retried, a machine API that did not answer is.
 */
export const provisionMachines: ActivityOptions = {
  startToCloseTimeout: startToClose('provisionMachines'),
  heartbeatTimeout: WORKER_LOST,
  retry: {
    initialInterval: '5 seconds',
    backoffCoefficient: 2,
    maximumInterval: '1 minute',
    maximumAttempts: 5,
    nonRetryableErrorTypes: [...NEVER_RETRY, 'BlueGreenInvalid', 'NodeNotReady'],
  },
};

/**
 * One notification to one sink (activities/notify-delivery.ts), in its own workflow that the run never
 * waits for: a sink that is down is retried for about 4 minutes of backoff (8 attempts), then the
 * delivery's failure is recorded (history) and the run knows nothing of it. A 4xx refusal
 * (NotificationRefused) or a sink missing from the configuration is final at once.
 */
export const notification: ActivityOptions = {
  startToCloseTimeout: startToClose('notification'),
  retry: {
    initialInterval: '2 seconds',
    backoffCoefficient: 2,
    maximumInterval: '1 minute',
    maximumAttempts: 8,
    nonRetryableErrorTypes: [...NEVER_RETRY, 'NotificationRefused'],
  },
};

/**
 * A change hook (activities/change-hooks.ts): the operator's command or webhook, up to its
 * timeoutSeconds (capped under this limit). Its "no" (HookRefused) is final: the run refuses to start
 * or halts for the operator, whose retry runs it again. A lost worker is covered by a second attempt.
 */
export const changeHook: ActivityOptions = {
  startToCloseTimeout: startToClose('changeHook'),
  retry: {
    initialInterval: '2 seconds',
    backoffCoefficient: 2,
    maximumInterval: '10 seconds',
    maximumAttempts: 2,
    nonRetryableErrorTypes: [...NEVER_RETRY, 'HookRefused'],
  },
};

/** `skewless notify test`: one attempt per sink, so the operator reads each sink's own answer at once. */
export const notificationOnce: ActivityOptions = { ...notification, retry: { ...notification.retry, maximumAttempts: 1 } };

/**
 * Which profile each activity runs under. Typed against the activity set, so a new activity
 * does not compile until someone decides its timeouts and retries here.
 */
export const PROFILE_OF = {
  describeWorker: quickRead,
  findRunningUpgrade: quickRead,
  findRunningRollout: quickRead,
  takeInventory: kubeRead,
  planDrain: kubeRead,
  // Before each phase of nodes (issue 40): one paged list of nodes and of pods, read-only.
  checkBatchCapacity: kubeRead,
  // After each hop (issue 40): Deployments left on one node, and --rebalance's restart that waits for its rollout.
  findConcentratedWorkloads: kubeRead,
  rebalanceWorkload: healthCheck,
  availableVersions: hostCommand,
  pointPackageRepository: hostCommand,
  kubeadmUpgradePlan: hostCommand,
  checkApiserver: healthCheck,
  checkControlPlane: healthCheck,
  checkNodeReady: healthCheck,
  checkWorkloads: healthCheck,
  checkPodsOnNode: healthCheck,
  runProbes: healthCheck,
  checkAlerts: prometheusQuery,
  cordonNode: kubeWrite,
  uncordonNode: kubeWrite,
  quarantineNode: kubeWrite,
  setStageLabels: kubeWrite,
  clearStageLabels: kubeWrite,
  drainNode: drain,
  installPackages: hostCommand,
  downloadPackages: hostCommand,
  readPackageHolds: hostCommand,
  restorePackageHolds: hostCommand,
  kubeadmUpgradeApply: kubeadmApply,
  kubeadmUpgradeNode: hostCommand,
  restartKubelet: kubeletRestart,
  rebootNode: reboot,
  snapshotEtcd: etcdSnapshot,
  // The etcd patch step before the hop that brings etcd 3.6 (--fix-prerequisites, activities/etcd-patch.ts).
  readEtcdMembers: hostCommand,
  patchEtcdMember: etcdMemberPatch,
  checkEtcdHealth: etcdHealth,
  // A reversible hop (issue 36, activities/control-plane-trial.ts): kubeadm apply with patches, its rollback, its commit.
  trialControlPlane: kubeadmApply,
  rollbackControlPlane: hostCommand,
  commitControlPlane: kubeadmApply,
  downgradePackages: hostCommand,
  planMaintenance: kubeRead,
  runMaintenanceCommand: maintenanceCommand,
  // The restore (workflows/restore-workflow.ts): reads and moves on hosts, etcdutl bounded like a snapshot.
  planRestore: hostCommand,
  placeSnapshot: etcdSnapshot,
  checkRestoreSnapshot: hostCommand,
  stopStaticPods: hostCommand,
  restoreEtcdMember: etcdSnapshot,
  startStaticPods: hostCommand,
  verifyEtcdRestore: hostCommand,
  verifyRestoredApiserver: hostCommand,
  // `skewless rehearse`: one paged list per resource type, read-only.
  describeClusterForRehearsal: kubeRead,
  // Blue/green node pools (activities/pool-provisioning.ts).
  planBlueGreen: poolRead,
  createPoolMachines: provisionMachines,
  deletePoolMachines: provisionMachines,
  // Readiness before each hop (issue 21): reads of the API and greps of logs on the control planes.
  readinessReport: readinessRead,
  // Readiness before a hop (issue 21, activities/readiness/): read-only probes over SSH, and API reads.
  probeHopPrerequisites: hostCommand,
  predictBlockingDrains: kubeRead,
  // Notifications (issue 39): delivered by notifyWorkflow, never on the run's path.
  notifySinks: quickRead,
  deliverNotification: notification,
  runChangeHook: changeHook,
} satisfies Record<keyof Activities, ActivityOptions>;

/** Profiles of steps that run on a host: the ones the policy's host retry budget applies to. */
const HOST_PROFILES: readonly ActivityOptions[] = [
  hostCommand,
  kubeadmApply,
  kubeletRestart,
  etcdSnapshot,
  etcdMemberPatch,
  reboot,
  maintenanceCommand,
];
/** Whatever the operator asks, a host step is not retried more often than this. */
const MAX_HOST_ATTEMPTS = 1_000;

/**
 * How many attempts fit in `seconds` of the profile's backoff (the waits between attempts: the
 * initial interval, growing by the coefficient up to the maximum interval). The attempts' own time
 * comes on top: a refused connection fails at once, an unanswered one after ssh.connectTimeoutSeconds.
 */
export function attemptsWithin(profile: ActivityOptions, seconds: number): number {
  const retry = profile.retry ?? {};
  const budgetMs = Number.isFinite(seconds) ? Math.max(0, seconds) * 1000 : 0; // the cluster workflow refuses a non-number first
  const maxMs = msToNumber(retry.maximumInterval ?? '1 minute');
  let next = msToNumber(retry.initialInterval ?? '1 second');
  let waited = 0;
  let attempts = 1;
  while (attempts < MAX_HOST_ATTEMPTS) {
    const wait = Math.min(next, maxMs);
    if (waited + wait > budgetMs) break;
    waited += wait;
    attempts++;
    next *= retry.backoffCoefficient ?? 2;
  }
  return attempts;
}

/**
 * The profile with the operator's host retry budget (`hostRetrySeconds`): how long a step on a host
 * keeps retrying (a host refusing SSH or rebooting, a command timing out) before the node is
 * reported blocked and the operator asked. It becomes the attempt count, never a deadline, so a
 * running attempt (a slow package install) is not cut short. Profiles of non-host steps are unchanged.
 */
export function withHostRetryBudget(profile: ActivityOptions, hostRetrySeconds: number | undefined): ActivityOptions {
  if (hostRetrySeconds === undefined || !HOST_PROFILES.includes(profile)) return profile;
  return { ...profile, retry: { ...profile.retry, maximumAttempts: attemptsWithin(profile, hostRetrySeconds) } };
}
