import { INVENTORY_KEYS, checkSkew, type SkewInventory } from '../../rules/skew-policy.js';
import { isHostCommandForm } from '../../rules/host-command-forms.js';
import { compareVersions, parseVersion } from '../../rules/version.js';
import type { KubeApi } from '../../activities/kube-api.js';
import { readVersionHistory, type VersionRecord } from '../../sim/cluster/version-recorder.js';
import { parseCommandLine } from '../../sim/hosts/command-line.js';
import type { Simulation } from '../../sim/simulation.js';

/** What the simulation's version history says about an upgrade: problems found, and what each component went through. */
export interface HistoryVerdict {
  states: number;
  /** Skew violations, downgrades and unreadable states, each naming the state's cause. */
  problems: string[];
  /** `kubelets worker-1` → the versions it reported, in order, without repeats. */
  versionsSeen: Record<string, string[]>;
}

/** Judges every recorded state with the skew policy (kubeadm topology) and checks that no version ever went back. */
export function judgeVersionHistory(history: VersionRecord[]): HistoryVerdict {
  const problems: string[] = [];
  const versionsSeen: Record<string, string[]> = {};
  const last = new Map<string, string>();
  history.forEach((state, i) => {
    const where = `state ${i} (${state.cause})`;
    if (state.error) {
      problems.push(`${where}: unreadable: ${state.error}`);
      return;
    }
    const report = checkSkew(state.inventory, { topology: 'kubeadm' });
    for (const v of report.violations) problems.push(`${where}: ${v.component} on ${v.node} at ${v.version}: ${v.rule}`);
    for (const key of Object.values(INVENTORY_KEYS) as (keyof SkewInventory)[]) {
      for (const { node, version } of state.inventory[key] ?? []) {
        const id = `${key} ${node}`;
        const before = last.get(id);
        if (before !== undefined && compareVersions(parseVersion(version), parseVersion(before)) < 0)
          problems.push(`${where}: ${id} went back from ${before} to ${version}`);
        last.set(id, version);
        const seen = (versionsSeen[id] ??= []);
        if (seen.at(-1) !== version) seen.push(version);
      }
    }
  });
  if (history[0]?.cause !== 'initial') problems.push(`the history does not start with the initial state (${history[0]?.cause ?? 'empty'})`);
  return { states: history.length, problems, versionsSeen };
}

/** An error and its causes, one per line (WorkflowFailedError → ChildWorkflowFailure → ActivityFailure → ApplicationFailure), for a failure message. */
export function failureChain(err: unknown): string {
  const lines: string[] = [];
  for (let e: unknown = err; e instanceof Error && lines.length < 8; e = e.cause) {
    const type = (e as { type?: string }).type;
    lines.push(`${e.name}${type ? `(${type})` : ''}: ${e.message}`);
  }
  return lines.join('\n  caused by ');
}

/** Every node as `name kubeletVersion cordoned|schedulable`, sorted: where an upgrade left them. */
export async function nodeLines(kube: KubeApi): Promise<string[]> {
  return (await kube.core.listNode()).items
    .map((n) => `${n.metadata?.name} ${n.status?.nodeInfo?.kubeletVersion} ${n.spec?.unschedulable ? 'cordoned' : 'schedulable'}`)
    .sort();
}

/** The verdict on every state the simulation recorded, once its last writes have settled. */
export async function judgeSimulation(sim: Simulation): Promise<HistoryVerdict> {
  await sim.versionHistorySettled();
  return judgeVersionHistory(readVersionHistory(sim.stateDir));
}

/**
 * Every command a host ran (commands.log, read as the host reads it: after sudo -n and VAR=value) that
 * is no form of rules/host-command-forms.ts, `node: command`: the table `sim fault` refuses by must know
 * every command the product sends on a real run, not only those the command fuzz builds.
 */
export function commandsOutsideForms(sim: Simulation): string[] {
  return sim.hosts.hosts.flatMap(({ name }) =>
    sim.hosts.commandLog(name).flatMap(({ command }) => {
      const parsed = parseCommandLine(command);
      const steps = parsed.ok ? parsed.steps.map((s) => s.command.argv) : [command.split(' ')];
      return steps.filter((argv) => !isHostCommandForm(argv)).map(() => `${name}: ${command}`);
    }),
  );
}
