import { randomUUID } from 'node:crypto';
import type { KubeApi } from '../../activities/kube-api.js';
import { writesIn, type AuditEvent } from '../../sim/cluster/audit-log.js';
import { WORKER_USER } from '../../sim/cluster/pki.js';
import { waitFor } from '../../sim/cluster/wait-for.js';
import type { CommandLogEntry } from '../../sim/hosts/host-state.js';
import type { Simulation } from '../../sim/simulation.js';

/**
 * The host commands that only read, by exact shape: what the planner and the idempotence checks run,
 * as the unprivileged SSH user except the readiness report's reads of root's own files (listed below).
 * Otherwise skewless takes root (`sudo -n`) only to change something, so every other command counts
 * as a change: package installs and holds, kubeadm (even `upgrade plan`, which never runs before the
 * kubeadm package is installed), etcdctl snapshot (writes a file on the
 * node), systemctl, reboot, mkdir. The look at the next minors' repositories (package-repository.ts)
 * works in a directory of its own under /tmp, as the SSH user, and leaves nothing: a read.
 */
const PROBE_DIR = '/tmp/skewless-apt-probe-[0-9a-f-]{36}';
const PROBE_APT = `-o Dir::Etc::SourceList=${PROBE_DIR}/sources\\.list -o Dir::Etc::SourceParts=- -o Dir::State::Lists=${PROBE_DIR}/lists -o Dir::Cache::pkgcache= -o Dir::Cache::srcpkgcache=`;
const SOURCES_DIR = '/tmp/skewless-sources-probe-[0-9a-f-]{36}';
export const READ_ONLY_HOST_COMMANDS: readonly RegExp[] = [
  /^apt-cache (madison|policy)( (kubeadm|kubelet|kubectl))+$/,
  /^apt-mark showhold$/,
  /^kubelet --version$/,
  /^cat \/etc\/apt\/sources\.list\.d\/kubernetes\.list$/,
  new RegExp(`^mkdir -p ${PROBE_DIR}/lists$`),
  new RegExp(`^DEBIAN_FRONTEND=noninteractive apt-get update -q ${PROBE_APT}$`),
  new RegExp(`^apt-cache ${PROBE_APT} madison kubeadm$`),
  new RegExp(`^rm -rf ${PROBE_DIR}$`),
  // The readiness report's look at a node's other package sources (activities/readiness/other-sources.ts):
  // a full refresh as the SSH user into a directory of its own under /tmp, removed; the source files read.
  new RegExp(`^mkdir -p ${SOURCES_DIR}/lists$`),
  new RegExp(
    `^DEBIAN_FRONTEND=noninteractive apt-get update -q -o Dir::State::Lists=${SOURCES_DIR}/lists -o Dir::Cache::pkgcache= -o Dir::Cache::srcpkgcache=$`,
  ),
  new RegExp(`^dnf makecache -q --setopt=cachedir=${SOURCES_DIR} '--setopt=\\*\\.skip_if_unavailable=True'$`),
  new RegExp(`^rm -rf ${SOURCES_DIR}$`),
  /^ls -1 \/etc\/(apt\/sources\.list\.d|yum\.repos\.d)$/,
  /^cat \/etc\/(apt\/sources\.list(\.d\/[\w.-]+\.list)?|yum\.repos\.d\/[\w.-]+\.repo)$/,
  // The readiness report (issue 21): reads that need root, because what they read is root's alone
  // (the PKI under /etc/kubernetes/pki, the apiserver's audit log, written 0600).
  /^stat -fc %T \/sys\/fs\/cgroup\/$/,
  /^sudo -n kubeadm certs check-expiration -o json$/,
  /^sudo -n grep -F -m \d+ '"k8s\.io\/deprecated":"true"' \/[\w./-]+$/,
];

export const isReadOnlyHostCommand = (command: string): boolean => READ_ONLY_HOST_COMMANDS.some((re) => re.test(command));

/** How far the audit log and every host's command log went, at one moment. */
export interface WritesMark {
  auditEvents: number;
  hostCommands: Record<string, number>;
}

/** What changed the cluster after a mark: the worker identity's API writes and the hosts' non-read-only commands. */
export interface ClusterChanges {
  apiWrites: AuditEvent[];
  hostCommands: { host: string; command: string }[];
  /** Read-only host commands run meanwhile (allowed; for the failure message). */
  reads: number;
}

export interface ClusterWrites {
  /** Marks the logs now (after a fence, so nothing earlier is still on its way to the audit log). */
  mark(): Promise<WritesMark>;
  /** Everything the worker's identity and the hosts changed since `mark` (after a fence). */
  since(mark: WritesMark): Promise<ClusterChanges>;
  /** Throws, listing them, if anything changed since `mark`. */
  assertNoneSince(mark: WritesMark, what: string): Promise<void>;
}

/**
 * Counts writes to a simulated cluster: API writes by the worker's own user (the apiserver audits
 * every request of it, and nothing else) and commands on the simulated hosts. Before reading, a
 * fence: a read of a namespace that does not exist, by the worker's user, waited for in the audit
 * log. The apiserver writes audit events in order (blocking mode), so once the fence is there,
 * every request that finished before it is too. Callers mark after the command under test has
 * ended (the CLI exited; for an upgrade, its workflow closed), so nothing is still in flight.
 */
export function clusterWrites(sim: Simulation, workerKube: KubeApi): ClusterWrites {
  const hosts = sim.endpoints.ssh.hosts.map((h) => h.name);
  const fence = async (): Promise<AuditEvent[]> => {
    const name = `skewless-fence-${randomUUID().slice(0, 8)}`;
    await workerKube.core.readNamespace({ name }).catch(() => undefined); // 404, audited all the same
    let events: AuditEvent[] = [];
    await waitFor(
      `the fence ${name} in the audit log`,
      () => (events = sim.auditEvents()).some((e) => e.name === name && e.verb === 'get'),
      15_000,
      50,
    );
    return events;
  };
  const logs = (): Record<string, CommandLogEntry[]> => Object.fromEntries(hosts.map((h) => [h, sim.hosts.commandLog(h)]));

  async function mark(): Promise<WritesMark> {
    const events = await fence();
    const all = logs();
    return { auditEvents: events.length, hostCommands: Object.fromEntries(hosts.map((h) => [h, all[h]?.length ?? 0])) };
  }

  async function since(m: WritesMark): Promise<ClusterChanges> {
    const events = await fence();
    const all = logs();
    const commands = hosts.flatMap((host) => (all[host] ?? []).slice(m.hostCommands[host] ?? 0).map((e) => ({ host, command: e.command })));
    return {
      apiWrites: writesIn(events.slice(m.auditEvents), WORKER_USER),
      hostCommands: commands.filter((c) => !isReadOnlyHostCommand(c.command)),
      reads: commands.filter((c) => isReadOnlyHostCommand(c.command)).length,
    };
  }

  return {
    mark,
    since,
    async assertNoneSince(m, what) {
      const changes = await since(m);
      if (changes.apiWrites.length === 0 && changes.hostCommands.length === 0) return;
      throw new Error(
        `${what} changed the cluster:\n${[
          ...changes.apiWrites.map(
            (e) => `  API ${e.verb} ${e.resource} ${e.namespace ? `${e.namespace}/` : ''}${e.name ?? ''} → ${e.code ?? '?'}`,
          ),
          ...changes.hostCommands.map((c) => `  ${c.host}$ ${c.command}`),
        ].join('\n')}`,
      );
    },
  };
}
