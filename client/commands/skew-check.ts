import { checkSkew, type ControlPlaneTopology, type SkewInventory } from '../../rules/index.js';
import { type CommandIo, EXIT, helpAsked, outputFormat, parseOptions, readJsonFile, requireOption, UsageError } from '../cli-support.js';

export const skewCheckHelp = `Usage: skewless skew-check --inventory FILE [--topology any|kubeadm] [--output json|text]

Judges component versions against the Kubernetes version skew policy.
FILE is JSON: {"apiservers":[{"node":"cp1","version":"1.34.1"}], "controllerManagers":[…],
"schedulers":[…], "kubelets":[…], "kubeProxies":[…], "kubectl":[{"node":"laptop","version":"1.35.0"}]}.
Only "apiservers" is required.

--topology any      (default) controller-managers and schedulers may talk to any kube-apiserver
--topology kubeadm  they talk to the kube-apiserver on their own node, as kubeadm configures them

Exit status: 0 compliant, 1 not compliant, 2 invalid input.`;

export async function skewCheckCommand(args: string[], io: CommandIo): Promise<number> {
  const { values } = parseOptions(args, {
    inventory: { type: 'string' },
    topology: { type: 'string' },
    output: { type: 'string' },
  });
  if (helpAsked(values, skewCheckHelp, io)) return EXIT.ok;
  const output = outputFormat(values.output);
  const topology = values.topology ?? 'any';
  if (topology !== 'any' && topology !== 'kubeadm') {
    throw new UsageError(`--topology must be "any" or "kubeadm", got ${JSON.stringify(topology)}`);
  }
  const inventory = readJsonFile(requireOption(values.inventory, '--inventory'), 'inventory') as SkewInventory;
  const report = checkSkew(inventory, { topology: topology as ControlPlaneTopology });
  const violations = report.violations.map(({ component, node, version, rule }) => ({ component, node, version, rule }));
  if (output === 'json') {
    io.out(JSON.stringify({ compliant: report.compliant, violations }));
  } else if (report.compliant) {
    io.out('compliant: every component is within the version skew policy');
  } else {
    io.out(`not compliant: ${violations.length} violation${violations.length === 1 ? '' : 's'}`);
    for (const v of violations) io.out(`  ${v.component} on ${v.node} at ${v.version}: ${v.rule}`);
  }
  return report.compliant ? EXIT.ok : EXIT.notCompliant;
}
