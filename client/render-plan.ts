import { describeTarget, STAGE_LABEL, type HopMoves, type RunbookStep, type UpgradePlan } from '../rules/index.js';

/** The plan as JSON: the canary rollout plan (stage labels, phases) plus the runbook per hop. */
export function planToJson(plan: UpgradePlan, to: string) {
  return {
    from: plan.from,
    to,
    target: plan.target,
    hops: plan.hops,
    stageLabel: STAGE_LABEL,
    policy: plan.rollout.policy,
    controlPlanes: plan.rollout.controlPlanes,
    stageLabels: plan.rollout.stageLabels,
    phases: plan.rollout.phases,
    workerHops: plan.workerHops,
    runbook: plan.hops.map((version, h) => ({
      version,
      moves: plan.moves[h],
      steps: plan.steps
        .filter((s) => s.hop === version)
        .map(({ stage, action, node, command, detail }) => ({ stage, action, node, command, detail })),
    })),
    skew: {
      compliant: plan.skew.compliant,
      checkedSteps: plan.skew.checkedSteps,
      ...(plan.skew.failure
        ? {
            failure: {
              step: plan.skew.failure.stepIndex < 0 ? 'current state' : describeStep(plan.skew.failure.step),
              violations: plan.skew.failure.violations.map(({ component, node, version, rule }) => ({ component, node, version, rule })),
            },
          }
        : {}),
    },
  };
}

/** The nodes a hop moves: a kubelet or a control plane's components. */
function movingIn(plan: UpgradePlan, hop: string): string[] {
  const moves = plan.steps.filter((s) => s.hop === hop && (s.action === 'upgrade-kubelet' || s.action === 'upgrade-control-plane'));
  return [...new Set(moves.map((s) => s.node as string))];
}

function describeStep(step: RunbookStep | undefined): string {
  return step ? `${step.hop}: ${step.detail}` : '';
}

/** The plan as a runbook an operator can read and follow. */
export function planToText(plan: UpgradePlan, to: string): string {
  const lines: string[] = [];
  const { policy, phases } = plan.rollout;
  if (plan.hops.length === 0 && plan.target.nothingToDo) return `Nothing to do: ${describeTarget(plan.target)}.`;
  if (plan.hops.length === 0) return `Already at ${to} (cluster is at ${plan.from}): nothing to do.`;
  const finishing = plan.hops[0] === plan.from;
  lines.push(
    finishing && plan.hops.length === 1
      ? `Finish at ${plan.from}: the control plane is there, ${movingIn(plan, plan.from).join(', ')} below it (left behind by an earlier run)`
      : `Upgrade ${plan.from} → ${plan.target.to === to ? to : describeTarget(plan.target)}: ${plan.hops.length} hop${plan.hops.length === 1 ? '' : 's'} (${plan.hops.join(' → ')})`,
  );
  lines.push(
    `Rollout: canary ${policy.canary}, batches of ${policy.batchSize}${policy.batchBy ? ` within one value of ${policy.batchBy}` : ''}, at most ${policy.maxUnavailable} worker(s) out at once${capped(policy)}; nodes labelled ${STAGE_LABEL}=<stage>`,
  );
  for (const phase of phases) {
    const [node] = phase.nodes;
    const role =
      phase.kind !== 'control-plane'
        ? ''
        : plan.steps.some((s) => s.node === node && s.apply)
          ? ' (kubeadm upgrade apply)'
          : plan.steps.some((s) => s.node === node && (s.action === 'upgrade-control-plane' || s.action === 'upgrade-kubelet'))
            ? ''
            : ` (already at ${plan.hops.at(-1) ?? plan.from})`;
    const domain = phase.domain === undefined ? '' : ` (${policy.batchBy}=${phase.domain || '<none>'})`;
    lines.push(`  ${phase.stage.padEnd(14)} ${phase.nodes.join(' ')}${role}${domain}`);
  }
  if (plan.skew.compliant) {
    lines.push(`Skew policy: holds after every one of the ${plan.skew.checkedSteps} version changes below.`);
  } else {
    const f = plan.skew.failure;
    lines.push(`Skew policy: BROKEN at ${f && f.stepIndex >= 0 ? `step "${describeStep(f.step)}"` : 'the current state'}:`);
    for (const v of f?.violations ?? []) lines.push(`  ${v.component} on ${v.node} at ${v.version}: ${v.rule}`);
  }
  let from = plan.from;
  plan.hops.forEach((hop, h) => {
    lines.push(
      '',
      from === hop
        ? `Hop ${h + 1}/${plan.hops.length}: ${hop}, only what is below it (${movingIn(plan, hop).join(', ')})`
        : `Hop ${h + 1}/${plan.hops.length}: ${from} → ${hop}`,
    );
    const moves = plan.moves[h];
    if (moves) lines.push(`  moves: ${describeMoves(moves)}`);
    let n = 0;
    for (const step of plan.steps.filter((s) => s.hop === hop)) {
      n++;
      lines.push(`  ${String(n).padStart(3)}. [${step.stage}] ${step.detail}`);
      if (step.command) lines.push(`       $ ${step.command}`);
    }
    from = hop;
  });
  return lines.join('\n');
}

/** `control planes cp1, cp2; workers stay at 1.32.4` or `…; workers to 1.34.2: w1, w2`: what one hop moves. */
export function describeMoves(m: HopMoves): string {
  const names = (nodes: readonly string[]) =>
    nodes.length <= 8 ? nodes.join(', ') : `${nodes.slice(0, 3).join(', ')} and ${nodes.length - 3} more`;
  const parts = [`control planes ${m.controlPlanes.length > 0 ? names(m.controlPlanes) : 'none'}`];
  if (m.workers.length > 0) parts.push(`workers to ${m.hop}: ${names(m.workers)}`);
  for (const { version, nodes } of m.workersStay)
    parts.push(
      m.workers.length === 0 && m.workersStay.length === 1
        ? `workers stay at ${version}`
        : `${names(nodes)} stay${nodes.length === 1 ? 's' : ''} at ${version}`,
    );
  return parts.join('; ');
}

/**
 * `plan --cluster`'s warning about drains that will block: pods no controller manages, by node. Not a
 * refusal: the upgrade stops at each such node and waits for the operator, as the line says.
 */
export function barePodLines(
  cluster: string,
  barePods: readonly { namespace: string; name: string; node: string }[],
  count: number,
): string[] {
  if (count === 0) return [];
  const byNode = new Map<string, string[]>();
  for (const p of barePods) byNode.set(p.node, [...(byNode.get(p.node) ?? []), `${p.namespace}/${p.name}`]);
  return [
    `Drains that will block (${count} pod${count === 1 ? '' : 's'} no controller manages, lost for good if deleted): the upgrade waits at each node for` +
      ` "skewless resolve ${cluster} --node NODE --action skip" (the node keeps its version) or "--action force --pod NS/NAME":`,
    ...[...byNode].map(([node, pods]) => `  ${node}: ${pods.join(', ')}`),
    ...(count > barePods.length ? [`  and ${count - barePods.length} more`] : []),
  ];
}

/** Said once, on the rollout line: maxUnavailable came to more than one run keeps open (rules/open-children.ts). */
function capped(policy: UpgradePlan['rollout']['policy']): string {
  if (policy.cappedFrom === undefined) return '';
  return ` (maxUnavailable came to ${policy.cappedFrom}: capped at ${policy.maxUnavailable}, the most node workflows one run keeps open; a larger batch runs in waves of ${policy.maxUnavailable})`;
}
