import { planUpgrade, type ClusterInventory, type RolloutPolicy } from '../../rules/index.js';
import { EXIT, intOption, outputFormat, parseOptions, readJsonFile, requireOption, type CommandIo } from '../cli-support.js';
import { planToJson, planToText } from '../render-plan.js';

export const planHelp = `Usage: skewless plan --inventory FILE --to VERSION_OR_MINOR --available FILE
                     [--canary N] [--batch-size N] [--max-unavailable N|N%] [--first-control-plane NODE]
                     [--output json|text]

Prints the whole upgrade runbook without touching anything: per hop, the etcd backup, the
control planes one at a time, the canary, the batches, and uncordon last on every node; and
checks the skew policy on the state after every step.

The inventory is the skew-check format plus optional "nodes":
  {"apiservers":[{"node":"cp1","version":"1.32.4"}], "kubelets":[{"node":"w1","version":"1.32.4"}], …,
   "nodes":[{"name":"cp1","role":"control-plane","labels":{}}, {"name":"w1","role":"worker"}]}
Without "nodes", apiserver nodes are control planes and other kubelet nodes are workers.
--available is a JSON array of the versions the package repository offers.

Exit status: 0 plan is skew-safe, 1 some step would break the skew policy (named), 2 invalid input.`;

export async function planCommand(args: string[], io: CommandIo): Promise<number> {
  const { values } = parseOptions(args, {
    inventory: { type: 'string' },
    to: { type: 'string' },
    available: { type: 'string' },
    canary: { type: 'string' },
    'batch-size': { type: 'string' },
    'max-unavailable': { type: 'string' },
    'first-control-plane': { type: 'string' },
    output: { type: 'string' },
  });
  if (values.help) {
    io.out(planHelp);
    return EXIT.ok;
  }
  const output = outputFormat(values.output);
  const to = requireOption(values.to, '--to');
  const inventory = readJsonFile(requireOption(values.inventory, '--inventory'), 'inventory') as ClusterInventory;
  const available = readJsonFile(requireOption(values.available, '--available'), 'available versions') as string[];
  const policy: RolloutPolicy = {};
  const canary = intOption(values.canary, '--canary', 0);
  const batchSize = intOption(values['batch-size'], '--batch-size', 1);
  if (canary !== undefined) policy.canary = canary;
  if (batchSize !== undefined) policy.batchSize = batchSize;
  if (values['max-unavailable'] !== undefined) policy.maxUnavailable = values['max-unavailable'];
  if (values['first-control-plane'] !== undefined) policy.firstControlPlane = values['first-control-plane'];

  const plan = planUpgrade({ inventory, to, available, policy });
  io.out(output === 'json' ? JSON.stringify(planToJson(plan, to), null, 2) : planToText(plan, to));
  return plan.skew.compliant ? EXIT.ok : EXIT.notCompliant;
}
