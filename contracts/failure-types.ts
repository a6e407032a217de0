/**
 * Every failure type that crosses a layer: what activities throw (`ACTIVITY_FAILURE`, the one map from
 * the outside world, activities/errors.ts), what the rules refuse with (`RULE_FAILURE`, RuleError's
 * codes) and what the workflows refuse to start or go on with (`WORKFLOW_FAILURE`). Retry policies
 * (workflows/activity-options.ts), the CLI's exit codes (client/workflow-failure.ts) and the tests
 * branch on these names, so they are API: add, never rename.
 */
/** Activity failures: the one map from the outside world to ApplicationFailure types. */
export const ACTIVITY_FAILURE = {
  /** The object is gone: success for delete/evict, an error for reads that need it. */
  NotFound: 'NotFound',
  /** Optimistic-concurrency conflict: retry with a fresh read. */
  Conflict: 'Conflict',
  /** The Eviction API said 429: a PDB (or its unobserved status) refuses for now. */
  EvictionBlocked: 'EvictionBlocked',
  /** Credentials or RBAC refuse: retrying cannot help. */
  Forbidden: 'Forbidden',
  /** The request is malformed for the API (422) or for us: retrying cannot help. */
  Invalid: 'Invalid',
  /** The cluster configuration on the worker is missing or wrong. */
  ClusterConfigInvalid: 'ClusterConfigInvalid',
  /** Connection refused, reset or timed out: the host may be rebooting; retry. */
  HostUnreachable: 'HostUnreachable',
  /** The host presented a key that known_hosts does not have: never retried silently. */
  HostKeyMismatch: 'HostKeyMismatch',
  /** A host command exited non-zero; details carry the exit code and a tail of stderr. */
  HostCommandFailed: 'HostCommandFailed',
  /**
   * A host command exited non-zero for a reason that passes (a mirror unreachable, the dpkg lock held,
   * an API timeout inside kubeadm; activities/host-transient.ts): retried by the profile, unlike HostCommandFailed.
   */
  HostCommandTransient: 'HostCommandTransient',
  /** A host command ran past its timeout and was abandoned. */
  HostCommandTimedOut: 'HostCommandTimedOut',
  /** The package repository does not offer the version asked for (nor, for a next minor, does its mirror). */
  VersionNotAvailable: 'VersionNotAvailable',
  /**
   * A minor the target needs has no repository on the node's mirror (its probe answered 404): the
   * rules' own type for a release that is missing, so the CLI answers it as an invalid request.
   */
  MissingRelease: 'MissingRelease',
  /** A node's package repository file is not the install guide's layout, and does not offer what the hop needs: the operator's to change. */
  RepositoryLayoutUnknown: 'RepositoryLayoutUnknown',
  /** The SSH user may not read a node's package repository file. */
  RepositoryUnreadable: 'RepositoryUnreadable',
  /** A drain could not finish before its timeout; details list pods and PDBs in the way. */
  DrainBlocked: 'DrainBlocked',
  /** A drain would delete something that cannot come back (unmanaged pod, emptyDir data) without consent. */
  DrainRefused: 'DrainRefused',
  /** The node did not become Ready at the expected version in time. */
  NodeNotReady: 'NodeNotReady',
  /** A health check failed: Ready is not working. */
  Unhealthy: 'Unhealthy',
  /** A verification failed (snapshot status, hash): the artefact cannot be trusted. */
  VerificationFailed: 'VerificationFailed',
  /** The etcd snapshot to restore is not where it should be (the worker's record, or the file on a control plane). */
  SnapshotMissing: 'SnapshotMissing',
  /** A restore step found etcd still running where it must be stopped first. */
  StaticPodsRunning: 'StaticPodsRunning',
  /**
   * A blue/green run that cannot go ahead as asked (unknown pool, empty blue pool, green pool already
   * populated, version above the control plane's, no provisioning; a node to remove that is not
   * cordoned and drained): the operator's to change, never retried.
   */
  BlueGreenInvalid: 'BlueGreenInvalid',
  /** The machine provider refused or failed to create or tear down a machine (details carry the output's tail). */
  ProvisionFailed: 'ProvisionFailed',
  /**
   * The alert gate's Prometheus (`alerts.prometheusUrl`) did not answer, or answered 5xx: the gate
   * cannot be judged, which never counts as "no alert". Retried briefly (the prometheusQuery profile);
   * past that the workflow holds the phase for the operator. A refusal of the query itself (HTTP 400,
   * 404, not Prometheus's API) is ClusterConfigInvalid; 401/403 is Forbidden.
   */
  PrometheusUnreachable: 'PrometheusUnreachable',
  /** A notification sink did not answer, or answered 408, 429 or 5xx: retried by the notification profile, never the run's failure. */
  NotificationUndelivered: 'NotificationUndelivered',
  /** A notification sink refused the event (another 4xx): retrying the same body cannot help. */
  NotificationRefused: 'NotificationRefused',
  /** A change hook said no (a command's non-zero exit, a webhook's non-2xx, no answer in its timeout): the operator's, never retried. */
  HookRefused: 'HookRefused',
} as const;

/** The pure rules' refusals (RuleError's code; a workflow fails with it as the type through applyRule). */
export const RULE_FAILURE = {
  InvalidVersion: 'InvalidVersion',
  InvalidInventory: 'InvalidInventory',
  InvalidPolicy: 'InvalidPolicy',
  Downgrade: 'Downgrade',
  MissingRelease: 'MissingRelease',
  UnsupportedMajor: 'UnsupportedMajor',
  InvalidFleet: 'InvalidFleet',
} as const;

/** The workflows' own refusals. */
export const WORKFLOW_FAILURE = {
  /** A state of the cluster, now or after a step, breaks the version-skew policy. */
  SkewViolation: 'SkewViolation',
  /** Another rollout of the cluster (upgrade, maintain, restore, bluegreen) runs. */
  RolloutRunning: 'RolloutRunning',
  /** The pre-flight refuses the cluster as it is (blocking PDB, NotReady node, nothing to upgrade, ...). */
  PreflightBlocked: 'PreflightBlocked',
  /** A node named by the operator is not in the cluster. */
  UnknownNode: 'UnknownNode',
  /** OS maintenance: pods no controller manages on the nodes, not let go with --force-pod. */
  UnmanagedPods: 'UnmanagedPods',
} as const;

export type ActivityFailureType = (typeof ACTIVITY_FAILURE)[keyof typeof ACTIVITY_FAILURE];
export type RuleFailureType = (typeof RULE_FAILURE)[keyof typeof RULE_FAILURE];
export type FailureType = ActivityFailureType | RuleFailureType | (typeof WORKFLOW_FAILURE)[keyof typeof WORKFLOW_FAILURE];

/** Failure types no retry can fix, for every activity profile. */
export const NEVER_RETRY: readonly FailureType[] = [
  'Forbidden',
  'Invalid',
  'ClusterConfigInvalid',
  'HostKeyMismatch',
  'VersionNotAvailable',
  'DrainRefused',
  'VerificationFailed',
  'SnapshotMissing',
  'StaticPodsRunning',
  'RepositoryLayoutUnknown',
  'RepositoryUnreadable',
];

/**
 * Failure types that say the request itself is wrong (the rules' codes, the worker's lookup of the
 * cluster and its configuration, a node that is not there): the CLI exits 2, as for a bad flag.
 */
export const INVALID_REQUEST: ReadonlySet<FailureType> = new Set<FailureType>([
  ...Object.values(RULE_FAILURE).filter((t) => t !== 'InvalidFleet'),
  'ClusterConfigInvalid',
  'UnknownNode',
  'BlueGreenInvalid',
]);
