// `apt-cache policy <pkg>...`: the installed version of each package
// (`kubeadm:` / `  Installed: 1.33.7-1.1` / `  Candidate: ...`; `(none)` when not installed).

export interface PolicyEntry {
  installed: string | null;
  candidate: string | null;
}

export function parseAptPolicy(text: string): Record<string, PolicyEntry> {
  const out: Record<string, PolicyEntry> = {};
  let current: PolicyEntry | undefined;
  for (const line of text.split('\n')) {
    const head = /^([a-z0-9][a-z0-9+.-]*)(?::[a-z0-9]+)?:\s*$/.exec(line);
    if (head) {
      current = { installed: null, candidate: null };
      out[head[1]!] = current;
      continue;
    }
    const field = /^\s+(Installed|Candidate):\s*(\S+)\s*$/.exec(line);
    if (!field || !current) continue;
    const value = field[2] === '(none)' ? null : field[2]!;
    if (field[1] === 'Installed') current.installed = value;
    else current.candidate = value;
  }
  return out;
}
