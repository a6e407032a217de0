/**
 * What the readiness checks find before a hop (issue 21): one shape for every check, so `plan`,
 * `rehearse`, the pre-flight and history print them alike, and one way to acknowledge them.
 */

/** Every kind of check; the first part of an acknowledgement name. */
export const READINESS_CHECKS = [
  'removed-api', // an API the hop's target removes was requested, or is stored
  'etcd-version', // etcd below what the hop's etcd upgrade needs
  'cgroup-v1', // a node on cgroup v1 before the minor that refuses it
  'containerd-1', // containerd 1.x before the minor that drops it
  'kubeadm-config-api', // a kubeadm configuration API the hop's kubeadm drops
  'cert-expiry', // a certificate that expires before the run could end
  'repository', // the next minor's package repository unreachable from a node
  'other-source', // another package source of a node (Docker's, a mirror) failing to refresh: never the hop's, said ahead
  'drain-block', // a drain that will block (PDB, single replica, grace period, local storage, bare pod, …)
  'alert', // an operator alert firing
  'probe', // an operator probe failing
  'capacity', // a node whose evicted pods would fit nowhere else (issue 40): acknowledged, it is drained and they wait Pending
] as const;
export type ReadinessCheck = (typeof READINESS_CHECKS)[number];

/**
 * `hold`: the hop does not start until acknowledged. `warn`: shown, never holds (e.g. a drain that
 * will wait for the operator anyway).
 */
export type FindingSeverity = 'hold' | 'warn';

export interface ReadinessFinding {
  check: ReadinessCheck;
  severity: FindingSeverity;
  /** The hop's target minor or version this finding blocks, e.g. `1.33`. */
  hop: string;
  /** The node it is about, when it is about one. */
  node?: string;
  /** The pod it is about (`namespace/name`), when it is about one (drain-block). */
  pod?: string;
  /** The rollout phase it would block (its stage: `control-plane`, `canary`, `batch-2`), when it is about one. */
  phase?: string;
  /** What was found, one line, e.g. `authentication.k8s.io/v1beta1/selfsubjectreviews requested 3 times since the apiservers started, …`. */
  what: string;
  /** What the operator should do, one line. */
  todo: string;
  /** Where the rule comes from (a URL of the upstream documentation or source). */
  source: string;
  /**
   * The name that acknowledges it: `<check>:<subject>`, e.g. `removed-api:authentication.k8s.io/v1beta1/selfsubjectreviews`,
   * `cgroup-v1:worker-3`. Several findings may share one name (one API used by several clients).
   */
  ack: string;
  /**
   * How skewless itself can fix it, when it can (issue 35): the runbook step that does, and the policy
   * key that lets it run (`fixPrerequisites`). With that key the finding holds nothing: the step runs
   * before the hop instead.
   */
  fix?: { step: 'etcd-patch'; how: string };
}

/** An operator's acknowledgement, recorded in history with who and why. */
export interface Acknowledgement {
  name: string;
  by: string;
  reason: string;
}

/** The findings that still hold a hop once the acknowledgements are applied, and the ones acknowledged. */
export function gateFindings(
  findings: readonly ReadinessFinding[],
  acknowledged: readonly string[],
  fixing = false,
): { held: ReadinessFinding[]; acknowledged: ReadinessFinding[]; warnings: ReadinessFinding[]; fixed: ReadinessFinding[] } {
  const acks = new Set(acknowledged);
  const holds = findings.filter((f) => f.severity === 'hold');
  // A hold the runbook fixes (fixPrerequisites) needs no acknowledgement; an acknowledged one is not fixed.
  const fixed = fixing ? holds.filter((f) => f.fix !== undefined && !acks.has(f.ack)) : [];
  return {
    held: holds.filter((f) => !acks.has(f.ack) && !fixed.includes(f)),
    acknowledged: holds.filter((f) => acks.has(f.ack)),
    warnings: findings.filter((f) => f.severity === 'warn'),
    fixed,
  };
}

/**
 * The one-line refusal of an acknowledgement name that is not `<check>:<subject>` with a known check.
 * Undefined when it is well-formed (whether it matches a finding is the gate's business: an
 * acknowledgement given ahead of a finding is kept, and named in history as unused).
 */
export function acknowledgementNameProblem(name: string): string | undefined {
  const colon = name.indexOf(':');
  const check = colon > 0 ? name.slice(0, colon) : '';
  if (!(READINESS_CHECKS as readonly string[]).includes(check) || colon === name.length - 1 || /\s/.test(name)) {
    return `unknown acknowledgement ${JSON.stringify(name)}: expected <check>:<subject> with check one of ${READINESS_CHECKS.join(', ')}`;
  }
  return undefined;
}
