/**
 * Where a run's host commands (each an SSH exec: a round trip, and a `sudo` on a real host) came
 * from: the commands the simulated hosts logged during the run, by kind, per node and hop. A kind is
 * each step's program and its subcommand (`apt-get install`, `systemctl restart`), `sudo` and
 * variable assignments aside; a chained line (`a && b`) is one command of the kind `a && b`.
 */

/** Programs whose first plain argument is a subcommand (`apt-get install`); for the rest it is an operand (a path, a package). */
const WITH_SUBCOMMANDS = new Set([
  'apt',
  'apt-get',
  'apt-mark',
  'apt-cache',
  'dnf',
  'yum',
  'systemctl',
  'kubeadm',
  'kubectl',
  'etcdctl',
  'crictl',
]);

/** The kind of one command line, e.g. `sudo apt-get install -y kubeadm=1.33.7-1.1` → `apt-get install`. */
export function commandKind(line: string): string {
  return line
    .split(/\s*(?:&&|\|\||;)\s*/)
    .map((step) => {
      const words = step.trim().split(/\s+/).filter(Boolean);
      // sudo and its options (`sudo -n`, `sudo -u root`), env, and variable assignments come before the program.
      for (;;) {
        const w = words[0] ?? '';
        if (w === 'sudo' || w === 'env' || /^[A-Za-z_][A-Za-z0-9_]*=/.test(w)) words.shift();
        else if (w === '-u' || w === '-g') words.splice(0, 2);
        else if (w.startsWith('-')) words.shift();
        else break;
      }
      const [path = '', ...args] = words;
      const program = path.split('/').pop() ?? '';
      // The subcommand: the first plain word (`-o Dir::Etc::SourceList=…` and `-y` are not).
      const sub = args.find((a) => /^[a-z][a-z-]*$/.test(a));
      return sub && WITH_SUBCOMMANDS.has(program) ? `${program} ${sub}` : program;
    })
    .filter(Boolean)
    .join(' && ');
}

export interface HostCommands {
  /** Per node and hop, in all. */
  perNodeHop: number;
  /** Per node and hop, by kind, most first. */
  byKind: Record<string, number>;
}

/** The commands of the run (each host's log entries since the run began) per node and hop, by kind. */
export function hostCommands(lines: readonly string[], nodeHops: number): HostCommands {
  const counts = new Map<string, number>();
  for (const line of lines) {
    const kind = commandKind(line);
    counts.set(kind, (counts.get(kind) ?? 0) + 1);
  }
  const per = (n: number) => Math.round((n / Math.max(1, nodeHops)) * 100) / 100;
  return {
    perNodeHop: Math.round((lines.length / Math.max(1, nodeHops)) * 10) / 10,
    byKind: Object.fromEntries([...counts].sort(([x, a], [y, b]) => b - a || x.localeCompare(y)).map(([k, n]) => [k, per(n)])),
  };
}
