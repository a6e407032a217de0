import { ApplicationFailure } from '@temporalio/activity';

/**
 * The one map from the outside world to ApplicationFailure types. Workflows and retry policies
 * branch on these type names, so they are API: add, never rename.
 */
export const ErrorType = {
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
} as const;

export type ErrorTypeName = (typeof ErrorType)[keyof typeof ErrorType];

/** The HTTP status of a @kubernetes/client-node ApiException, if it is one. */
export function httpStatus(err: unknown): number | undefined {
  const code = (err as { code?: unknown })?.code;
  return typeof code === 'number' && code >= 100 && code < 600 ? code : undefined;
}

/** Short, secret-free text of an API error body (the Status message when there is one). */
function apiMessage(err: unknown): string {
  const body = (err as { body?: unknown })?.body;
  if (typeof body === 'string') {
    try {
      const status = JSON.parse(body) as { message?: string };
      if (status.message) return status.message;
    } catch {
      // not JSON: fall through to the error's own message
    }
    return body.slice(0, 300);
  }
  return (err as Error)?.message?.split('\n')[0] ?? String(err);
}

/**
 * Maps an error from the Kubernetes API to a typed failure; `what` says what was being done
 * ("cordon worker-3"). Errors that are not API errors pass through unchanged (network errors
 * stay retryable plain errors).
 */
export function kubeFailure(err: unknown, what: string): unknown {
  const status = httpStatus(err);
  if (status === undefined) return err;
  const message = `${what}: HTTP ${status}: ${apiMessage(err)}`;
  switch (status) {
    case 404:
      return ApplicationFailure.create({ type: ErrorType.NotFound, message, nonRetryable: true });
    case 409:
      return ApplicationFailure.create({ type: ErrorType.Conflict, message });
    case 429:
      return ApplicationFailure.create({ type: ErrorType.EvictionBlocked, message });
    case 401:
    case 403:
      return ApplicationFailure.create({ type: ErrorType.Forbidden, message, nonRetryable: true });
    case 400:
    case 422:
      return ApplicationFailure.create({ type: ErrorType.Invalid, message, nonRetryable: true });
    default:
      return err;
  }
}

/** Runs an API call and rethrows its failure typed. */
export async function kubeCall<T>(what: string, call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (err) {
    throw kubeFailure(err, what);
  }
}
