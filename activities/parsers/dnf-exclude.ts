// What a .repo file's section excludes (dnf.conf(5): `exclude=` / `excludepkgs=`, package name globs
// separated by spaces or commas, the lines adding up): kubernetes.io's guide holds the Kubernetes
// packages this way (`exclude=kubelet kubeadm kubectl cri-tools kubernetes-cni` in kubernetes.repo).

/** fnmatch as dnf applies it to package names: `*` any run, `?` one character, `[…]` a class. */
function globMatches(glob: string, name: string): boolean {
  const body = glob
    .replace(/[.+^${}()|\\]/g, '\\$&')
    .replace(/\*/g, '.*')
    .replace(/\?/g, '.');
  try {
    return new RegExp(`^${body}$`).test(name);
  } catch {
    return glob === name; // an unbalanced class: dnf would match it literally at most
  }
}

/** The `names` that section `[repoId]` of `text` excludes, in the order given. */
export function excludedBy(text: string, repoId: string, names: readonly string[]): string[] {
  const globs: string[] = [];
  let inSection = false;
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (line === '' || line.startsWith('#') || line.startsWith(';')) continue;
    const head = /^\[([^\]]+)\]$/.exec(line);
    if (head) {
      inSection = head[1]?.trim() === repoId;
      continue;
    }
    const kv = /^(exclude|excludepkgs)\s*=\s*(.*)$/.exec(line);
    if (inSection && kv) globs.push(...(kv[2] ?? '').split(/[\s,]+/).filter(Boolean));
  }
  return names.filter((n) => globs.some((g) => globMatches(g, n)));
}
