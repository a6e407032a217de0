/**
 * Prerequisites of a hop that are not skew rules (issue 21): what a node or the cluster must have
 * before a kubeadm minor hop, each row citing its source, the first minor it applies to and how its
 * facts are probed. Facts in (gathered by activities/readiness/hop-prerequisites.ts), findings out;
 * no I/O and no clock: `now` and the run's expected length are arguments.
 * Research and sources: docs/research/readiness-sources.md §4.
 */
import { RuleError } from '../rule-error.js';
import type { NodeRole } from '../rollout-plan.js';
import type { ReadinessCheck, ReadinessFinding } from './finding.js';

/** How a row's facts are read: over SSH on each node, or from the Kubernetes API. */
export type ProbeKind = 'ssh' | 'api';

/** One certificate as `kubeadm certs check-expiration -o json` reports it (output.kubeadm.k8s.io/v1alpha3). */
export interface CertificateFacts {
  name: string;
  /** RFC 3339 UTC. */
  expirationDate: string;
  externallyManaged?: boolean;
  missing?: boolean;
  /** A certificate authority (certificateAuthorities[]) rather than a leaf. */
  authority?: boolean;
}

/** What was learned about one node; a fact left out was not probed (its row says nothing). */
export interface NodePrerequisiteFacts {
  name: string;
  role: NodeRole;
  /** From `stat -fc %T /sys/fs/cgroup/`: `cgroup2fs` → v2, `tmpfs` → v1, anything else unknown (with the text). */
  cgroup?: { version: 'v1' | 'v2' | 'unknown'; raw: string };
  /** Node.status.nodeInfo.containerRuntimeVersion, e.g. `containerd://1.7.24`. */
  containerRuntimeVersion?: string;
  /** Control planes with a local etcd: the tag of the etcd static pod's image (`3.5.24-0`). */
  etcdImageTag?: string;
  /** Control planes: kubeadm's certificates, or why they could not be read. */
  certificates?: CertificateFacts[] | { error: string };
  /**
   * Per probed minor (`1.34`): does the node's package repository answer for it? `detail`: why not.
   * `notRewritten`: the minor is missing because the file is one skewless will not switch (its path, why).
   */
  repositories?: Record<string, { reachable: boolean; detail?: string; unknown?: boolean; notRewritten?: { file: string; why: string } }>;
}

export interface PrerequisiteFacts {
  nodes: NodePrerequisiteFacts[];
  /** The apiVersion of kube-system/kubeadm-config's ClusterConfiguration (`kubeadm.k8s.io/v1beta4`). */
  kubeadmConfigApiVersion?: string;
  /** The moment the facts are judged at (ISO 8601), and how long the run is expected to take. */
  now: string;
  runSeconds: number;
}

export interface HopPrerequisite {
  check: ReadinessCheck;
  /** One line: what must hold. */
  title: string;
  /** The first hop target minor the row applies to; undefined: every hop. */
  from?: string;
  probe: ProbeKind;
  source: string;
  /** The findings of this row for `hop` (a target minor at or past `from`). */
  findings(facts: PrerequisiteFacts, hop: string): ReadinessFinding[];
}

/** `1.34`, `v1.34.4`, `1.34.0-rc.1` → [1, 34]; undefined when it is none of these. */
function minorParts(text: string): [number, number] | undefined {
  const m = /^v?(\d{1,4})\.(\d{1,4})(?:\.\d+.*)?$/.exec(text);
  return m ? [Number(m[1]), Number(m[2])] : undefined;
}

/** The minor of a hop's target (`1.34.4` → `1.34`). */
export function hopMinor(hop: string): string {
  const p = minorParts(hop);
  if (!p)
    throw new RuleError('InvalidVersion', `invalid hop ${JSON.stringify(hop)}: expected a minor such as 1.34 or a version such as 1.34.4`);
  return `${p[0]}.${p[1]}`;
}

const minorAtLeast = (hop: string, from: string): boolean => {
  const [a, b] = [minorParts(hop), minorParts(from)];
  return !!a && !!b && (a[0] !== b[0] ? a[0] > b[0] : a[1] >= b[1]);
};

/** `3.5.24-0`, `v3.5.26` → [3, 5, 24]. */
function tripleOf(text: string | undefined): [number, number, number] | undefined {
  const m = /^v?(\d+)\.(\d+)\.(\d+)(?:[-+].*)?$/.exec(text ?? '');
  return m ? [Number(m[1]), Number(m[2]), Number(m[3])] : undefined;
}

const below = (a: [number, number, number], b: [number, number, number]): boolean =>
  a[0] !== b[0] ? a[0] < b[0] : a[1] !== b[1] ? a[1] < b[1] : a[2] < b[2];

const ETCD_MINIMUM: [number, number, number] = [3, 5, 26];
const ETCD_SOURCE = 'https://etcd.io/docs/latest/upgrades/upgrade_3_6/';
const CGROUP_SOURCE = 'kubernetes/enhancements:keps/sig-node/5573-remove-cgroup-v1/README.md';
const CONTAINERD_SOURCE = 'kubernetes/website:content/en/blog/_posts/2025/kubernetes-v1-34-release/index.md';
const KUBEADM_API_SOURCE = 'https://github.com/kubernetes/kubernetes/pull/136016';
const CERTS_SOURCE = 'kubernetes/kubernetes@v1.34.4:cmd/kubeadm/app/cmd/certs.go';
const REPOSITORY_SOURCE = 'https://kubernetes.io/docs/tasks/administer-cluster/kubeadm/change-package-repository/';

/** The prerequisites, newest source last. Each row's `findings` assumes the hop is one it applies to. */
export const HOP_PREREQUISITES: readonly HopPrerequisite[] = [
  {
    check: 'etcd-version',
    title: 'etcd 3.5.26 or newer on every member before the hop whose kubeadm brings etcd 3.6',
    // kubeadm v1.34 pins etcd 3.6.5-0 for 1.34 (cmd/kubeadm/app/constants/constants.go); 1.33 still 3.5.24-0.
    from: '1.34',
    probe: 'api',
    source: ETCD_SOURCE,
    findings: (facts, hop) =>
      facts.nodes.flatMap((n): ReadinessFinding[] => {
        if (n.role !== 'control-plane' || n.etcdImageTag === undefined) return [];
        const v = tripleOf(n.etcdImageTag);
        const base = { check: 'etcd-version' as const, hop, node: n.name, source: ETCD_SOURCE, ack: `etcd-version:${n.name}` };
        if (!v) {
          return [
            {
              ...base,
              severity: 'warn',
              what: `etcd on ${n.name} runs image tag ${JSON.stringify(n.etcdImageTag)}, not a version: cannot tell whether it is 3.5.26 or newer`,
              todo: `check etcd's version on ${n.name} (etcdctl version) before the ${hop} hop moves it to 3.6`,
            },
          ];
        }
        if (!below(v, ETCD_MINIMUM)) return [];
        // A 3.5 member is patched by the runbook's etcd step (rules/etcd-patch.ts); an older minor is not.
        const patchable = v[0] === 3 && v[1] === 5;
        return [
          {
            ...base,
            severity: 'hold',
            what: `etcd on ${n.name} is ${v.join('.')}; kubeadm ${hop} moves it to 3.6, which etcd supports only from 3.5.26`,
            todo: patchable
              ? `let skewless patch it (--fix-prerequisites: an etcd snapshot, then each member below 3.5.26 to the newest 3.5 image, one at a time, before the ${hop} hop), or upgrade etcd on every member to 3.5.26 or newer yourself (the member's /etc/kubernetes/manifests/etcd.yaml image) and acknowledge`
              : `upgrade etcd on ${n.name} to 3.5.26 or newer first (3.4 → 3.5 is a minor step skewless does not take)`,
            ...(patchable
              ? {
                  fix: {
                    step: 'etcd-patch' as const,
                    how: `etcd snapshot, then ${n.name}'s member patched to the newest 3.5 image (followers first, the leader last), etcd's health and quorum checked after each member`,
                  },
                }
              : {}),
          },
        ];
      }),
  },
  {
    check: 'cgroup-v1',
    title: 'cgroup v2 on every node before 1.35 (its kubelet refuses cgroup v1 by default: failCgroupV1)',
    from: '1.35',
    probe: 'ssh',
    source: CGROUP_SOURCE,
    findings: (facts, hop) =>
      facts.nodes.flatMap((n): ReadinessFinding[] => {
        if (!n.cgroup || n.cgroup.version === 'v2') return [];
        const base = { check: 'cgroup-v1' as const, hop, node: n.name, source: CGROUP_SOURCE, ack: `cgroup-v1:${n.name}` };
        if (n.cgroup.version === 'unknown') {
          return [
            {
              ...base,
              severity: 'warn',
              what: `stat -fc %T /sys/fs/cgroup/ on ${n.name} printed ${JSON.stringify(n.cgroup.raw)}, neither cgroup2fs nor tmpfs`,
              todo: `check the cgroup version of ${n.name} before the ${hop} hop: its kubelet refuses cgroup v1`,
            },
          ];
        }
        return [
          {
            ...base,
            severity: 'hold',
            what: `${n.name} runs cgroup v1; the kubelet of ${hop} refuses to start on it (failCgroupV1 defaults to true from 1.35)`,
            todo: `move ${n.name} to cgroup v2 (systemd.unified_cgroup_hierarchy=1, reboot) or set failCgroupV1: false in its kubelet configuration`,
          },
        ];
      }),
  },
  {
    check: 'containerd-1',
    title: 'containerd 2.x before 1.36 (1.35 is the last minor that supports containerd 1.x)',
    from: '1.36',
    probe: 'api',
    source: CONTAINERD_SOURCE,
    findings: (facts, hop) =>
      facts.nodes.flatMap((n): ReadinessFinding[] => {
        const runtime = n.containerRuntimeVersion;
        if (runtime === undefined || !runtime.startsWith('containerd://')) return [];
        const v = tripleOf(runtime.slice('containerd://'.length));
        const base = { check: 'containerd-1' as const, hop, node: n.name, source: CONTAINERD_SOURCE, ack: `containerd-1:${n.name}` };
        if (!v) {
          return [
            {
              ...base,
              severity: 'warn',
              what: `${n.name} reports container runtime ${JSON.stringify(runtime)}: cannot tell its containerd version`,
              todo: `check that ${n.name} runs containerd 2.x before the ${hop} hop`,
            },
          ];
        }
        if (v[0] >= 2) return [];
        return [
          {
            ...base,
            severity: 'hold',
            what: `${n.name} runs containerd ${v.join('.')}; Kubernetes ${hop} no longer supports containerd 1.x (1.35 was the last)`,
            todo: `upgrade containerd on ${n.name} to 2.x (and its config to version 3) before the ${hop} hop`,
          },
        ];
      }),
  },
  {
    check: 'kubeadm-config-api',
    title: 'the stored ClusterConfiguration migrated off kubeadm.k8s.io/v1beta3 before kubeadm 1.36, which removes it',
    from: '1.36',
    probe: 'api',
    source: KUBEADM_API_SOURCE,
    findings: (facts, hop) =>
      facts.kubeadmConfigApiVersion === 'kubeadm.k8s.io/v1beta3'
        ? [
            {
              check: 'kubeadm-config-api',
              severity: 'hold',
              hop,
              what: `kube-system/kubeadm-config holds a kubeadm.k8s.io/v1beta3 ClusterConfiguration, which kubeadm ${hop} no longer reads`,
              todo: 'migrate it with kubeadm 1.35 or older (kubeadm config migrate, or any kubeadm upgrade apply, which stores v1beta4)',
              source: KUBEADM_API_SOURCE,
              ack: 'kubeadm-config-api:kube-system/kubeadm-config',
            },
          ]
        : [],
  },
  {
    check: 'cert-expiry',
    title: 'no kubeadm certificate expires before the run could end',
    probe: 'ssh',
    source: CERTS_SOURCE,
    findings: (facts, hop) => {
      const now = Date.parse(facts.now);
      const end = now + facts.runSeconds * 1000;
      return facts.nodes.flatMap((n): ReadinessFinding[] => {
        const certs = n.certificates;
        if (certs === undefined) return [];
        const base = { check: 'cert-expiry' as const, hop, node: n.name, source: CERTS_SOURCE };
        if (!Array.isArray(certs)) {
          return [
            {
              ...base,
              severity: 'warn',
              what: `kubeadm certs check-expiration on ${n.name} failed: ${certs.error}`,
              todo: `run kubeadm certs check-expiration on ${n.name} and renew what expires before the upgrade`,
              ack: `cert-expiry:${n.name}`,
            },
          ];
        }
        return certs.flatMap((c): ReadinessFinding[] => {
          const at = Date.parse(c.expirationDate);
          if (c.externallyManaged || (!c.missing && Number.isFinite(at) && at > end)) return [];
          const kind = c.authority ? 'certificate authority' : 'certificate';
          const what = c.missing
            ? `${kind} ${c.name} on ${n.name} is missing`
            : !Number.isFinite(at)
              ? `${kind} ${c.name} on ${n.name} has an unreadable expiration date ${JSON.stringify(c.expirationDate)}`
              : at <= now
                ? `${kind} ${c.name} on ${n.name} expired at ${c.expirationDate}`
                : `${kind} ${c.name} on ${n.name} expires at ${c.expirationDate}, before the run could end (${facts.runSeconds} s from ${facts.now})`;
          return [
            {
              ...base,
              severity: 'hold',
              what,
              todo: c.authority
                ? `rotate the ${c.name} CA on ${n.name} (kubeadm does not renew CAs) before the upgrade`
                : `renew it before the upgrade: kubeadm certs renew ${c.name} on ${n.name}, then restart the static pods that use it`,
              ack: `cert-expiry:${n.name}/${c.name}`,
            },
          ];
        });
      });
    },
  },
  {
    check: 'repository',
    title: "the hop's package repository (pkgs.k8s.io/core:/stable:/v<minor>) reachable from every node",
    probe: 'ssh',
    source: REPOSITORY_SOURCE,
    findings: (facts, hop) => {
      const minor = hopMinor(hop);
      return facts.nodes.flatMap((n): ReadinessFinding[] => {
        const r = n.repositories?.[minor];
        if (!r || r.reachable) return [];
        // `unknown`: the node itself did not answer, so nothing was learnt of its repository (its step will wait for the operator).
        const kept = r.notRewritten;
        return [
          {
            check: 'repository',
            severity: r.unknown ? 'warn' : 'hold',
            hop,
            node: n.name,
            what: r.unknown
              ? `could not ask ${n.name} for the package repository of ${minor}: ${r.detail ?? 'no answer'}`
              : kept
                ? `${kept.file} on ${n.name} offers no ${minor}.x and skewless will not rewrite it: ${kept.why}`
                : `the package repository of ${minor} does not answer ${n.name}${r.detail ? `: ${r.detail}` : ''}`,
            todo: r.unknown
              ? `bring ${n.name} back (SSH, its host key) before its turn, or skip it when its step waits`
              : kept
                ? `point ${kept.file} on ${n.name} at v${minor} yourself (kubernetes.io: "Changing the package repository"), or skip the node`
                : `make the ${minor} repository (or its mirror) reachable from ${n.name}, or skip the node`,
            source: REPOSITORY_SOURCE,
            ack: `repository:${n.name}/${minor}`,
          },
        ];
      });
    },
  },
];

/**
 * Every prerequisite's findings for a run of `hops` (target minors or versions, in order). A row
 * with a `from` reports against the first hop it applies to (the one it blocks; a later hop cannot
 * start before it anyway); cert-expiry against the first hop (the run); repository against each hop
 * whose minor is unreachable.
 */
export function checkHopPrerequisites(hops: readonly string[], facts: PrerequisiteFacts): ReadinessFinding[] {
  for (const hop of hops) hopMinor(hop);
  if (!Number.isFinite(Date.parse(facts.now)))
    throw new RuleError('InvalidPolicy', `invalid now ${JSON.stringify(facts.now)}: expected an ISO 8601 time`);
  if (!Number.isFinite(facts.runSeconds) || facts.runSeconds < 0)
    throw new RuleError('InvalidPolicy', `invalid runSeconds ${JSON.stringify(facts.runSeconds)}: expected seconds ≥ 0`);
  const out: ReadinessFinding[] = [];
  for (const row of HOP_PREREQUISITES) {
    if (row.check === 'repository') {
      for (const hop of hops) out.push(...row.findings(facts, hop));
      continue;
    }
    const hop = row.from === undefined ? hops[0] : hops.find((h) => minorAtLeast(h, row.from as string));
    if (hop !== undefined) out.push(...row.findings(facts, hop));
  }
  return out;
}

/** The minors (`1.34`) of the hops, for the repository probes. */
export const hopMinors = (hops: readonly string[]): string[] => [...new Set(hops.map(hopMinor))];

/** The checks a run of `hops` needs facts for: the activity probes only these. */
export function neededChecks(hops: readonly string[]): Set<ReadinessCheck> {
  if (hops.length === 0) return new Set();
  return new Set(
    HOP_PREREQUISITES.filter((r) => r.from === undefined || hops.some((h) => minorAtLeast(h, r.from as string))).map((r) => r.check),
  );
}

/** What `stat -fc %T /sys/fs/cgroup/` printed, read as a cgroup version (kubernetes.io/docs/concepts/architecture/cgroups/). */
export function cgroupOfStat(output: string): NonNullable<NodePrerequisiteFacts['cgroup']> {
  const raw = output.trim();
  return { version: raw === 'cgroup2fs' ? 'v2' : raw === 'tmpfs' ? 'v1' : 'unknown', raw };
}
