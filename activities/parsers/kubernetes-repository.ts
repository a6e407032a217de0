// A node's Kubernetes package repository file, as kubernetes.io's "Installing kubeadm" writes it:
// one minor per file, switched by the first step of every minor upgrade ("Changing the package
// repository"). apt: /etc/apt/sources.list.d/kubernetes.list with the single line
//   deb [signed-by=/etc/apt/keyrings/kubernetes-apt-keyring.gpg] https://pkgs.k8s.io/core:/stable:/v1.32/deb/ /
// Another base URL (a site's proxy of pkgs.k8s.io) is recognised as long as the path keeps
// `core:/stable:/v1.XX/deb/` and the flat suite `/`. dnf (the RHEL family):
// /etc/yum.repos.d/kubernetes.repo, one `[kubernetes]` section whose baseurl (and gpgkey) name
// `core:/stable:/v1.XX/rpm/`, with `exclude=kubelet kubeadm kubectl …` as the guide's hold.
// Anything else is not ours to rewrite.

export const APT_KUBERNETES_LIST = '/etc/apt/sources.list.d/kubernetes.list';
export const DNF_KUBERNETES_REPO = '/etc/yum.repos.d/kubernetes.repo';
/** The repository id of the guide's kubernetes.repo: what `--disableexcludes=` names. */
export const DNF_REPO_ID = 'kubernetes';

/**
 * apt options that make an `apt-get update` read kubernetes.list alone (apt.conf(5): Dir::Etc::SourceList
 * is the one file, `Dir::Etc::SourceParts=-` no directory), so that another source's 404 cannot stop
 * it; `APT::Get::List-Cleanup=0` keeps the lists of the sources it did not read, which apt would
 * otherwise delete as obsolete (apt.conf(5): "ensure that obsolete files are erased").
 */
export const APT_KUBERNETES_ONLY = [
  '-o',
  `Dir::Etc::SourceList=${APT_KUBERNETES_LIST}`,
  '-o',
  'Dir::Etc::SourceParts=-',
  '-o',
  'APT::Get::List-Cleanup=0',
] as const;

/** The path segment of one minor's repository on pkgs.k8s.io and its proxies. */
const MINOR_PATH = /\/core:\/stable:\/v(\d+)\.(\d+)\/(deb|rpm)\//;

export type RepositoryFile =
  | { layout: 'per-minor'; minor: string; /** The `deb …` or `baseurl=…` line (credentials in its URL masked). */ line: string }
  | { layout: 'unrecognised'; why: string };

/** `https://user:secret@host/…` → `https://***@host/…`: a URL may carry a mirror's credentials, history must not. */
export const maskUrlCredentials = (text: string): string => text.replace(/(\b[a-z+]+:\/\/)[^/@\s]+@/gi, '$1***@');

const meaningful = (text: string): string[] =>
  text
    .split('\n')
    .map((l) => l.replace(/#.*/, '').trim())
    .filter((l) => l !== '');

/** Reads kubernetes.list: the guide's layout and its minor, or why it is not that layout. */
export function parseAptKubernetesList(text: string): RepositoryFile {
  const lines = meaningful(text);
  const debs = lines.filter((l) => /^deb\s/.test(l));
  if (lines.length !== 1 || debs.length !== 1) {
    return { layout: 'unrecognised', why: `it has ${lines.length} source line(s); the install guide's has exactly one deb line` };
  }
  const line = debs[0] as string;
  const m = /^deb\s+(?:\[[^\]]*\]\s+)?(\S+)\s+(\S+)(\s+\S.*)?$/.exec(line);
  if (!m) return { layout: 'unrecognised', why: `its line is not a one-line apt source: ${maskUrlCredentials(line)}` };
  const [, url = '', suite, components] = m;
  const minor = MINOR_PATH.exec(url.endsWith('/') ? url : `${url}/`);
  if (!minor || minor[3] !== 'deb')
    return { layout: 'unrecognised', why: `its URL names no core:/stable:/v1.XX/deb/ repository: ${maskUrlCredentials(url)}` };
  if (suite !== '/' || components)
    return { layout: 'unrecognised', why: `its source is not the flat suite "/" of pkgs.k8s.io: ${maskUrlCredentials(line)}` };
  return { layout: 'per-minor', minor: `${minor[1]}.${minor[2]}`, line: maskUrlCredentials(line) };
}

/** Reads kubernetes.repo: the guide's layout (one section, its baseurl at one minor) and that minor, or why not. */
export function parseDnfKubernetesRepo(text: string): RepositoryFile {
  const lines = text
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '' && !l.startsWith('#') && !l.startsWith(';'));
  const sections = lines.filter((l) => /^\[.*\]$/.test(l));
  if (sections.length !== 1 || sections[0] !== `[${DNF_REPO_ID}]`) {
    return {
      layout: 'unrecognised',
      why: `it has the section(s) ${sections.join(' ') || '(none)'}; the install guide's has exactly one, [${DNF_REPO_ID}]`,
    };
  }
  const values = (key: string): string[] => lines.filter((l) => new RegExp(`^${key}\\s*=`).test(l)).map((l) => l.replace(/^[^=]*=\s*/, ''));
  const [baseurl, ...more] = values('baseurl');
  if (baseurl === undefined || more.length || /[\s,]/.test(baseurl))
    return { layout: 'unrecognised', why: 'it does not name exactly one baseurl' };
  const minor = MINOR_PATH.exec(baseurl.endsWith('/') ? baseurl : `${baseurl}/`);
  if (!minor || minor[3] !== 'rpm')
    return { layout: 'unrecognised', why: `its baseurl names no core:/stable:/v1.XX/rpm/ repository: ${maskUrlCredentials(baseurl)}` };
  const at = `${minor[1]}.${minor[2]}`;
  for (const key of ['gpgkey', 'mirrorlist', 'metalink']) {
    for (const value of values(key)) {
      const other = MINOR_PATH.exec(value);
      if (key !== 'gpgkey' || (other && `${other[1]}.${other[2]}` !== at))
        return { layout: 'unrecognised', why: `its ${key} does not follow the baseurl's minor: ${maskUrlCredentials(value)}` };
    }
  }
  return { layout: 'per-minor', minor: at, line: maskUrlCredentials(`baseurl=${baseurl}`) };
}

/** The file pointed at another minor: every `core:/stable:/v1.XX/` segment replaced, nothing else. */
export function withMinor(text: string, minor: string): string {
  return text.replace(new RegExp(MINOR_PATH.source, 'g'), (_, _major, _minor, kind: string) => `/core:/stable:/v${minor}/${kind}/`);
}

/**
 * The `sed -i` expression that does what withMinor does, as kubernetes.io's guide tells operators
 * to edit the file. `,` as the delimiter (URLs are full of `/`) and the dot left unescaped keep the
 * word plain (no shell or sed metacharacter); `.` matching any one character cannot widen the match
 * in a URL segment of this shape.
 */
export function sedMinorExpression(from: string, to: string): string {
  return `s,/core:/stable:/v${from}/,/core:/stable:/v${to}/,g`;
}

/** `1.33.7` → `1.33`. */
export const minorOfVersion = (version: string): string => version.replace(/^v/, '').split('.').slice(0, 2).join('.');

/** `1.33` → `1.34`. */
export function nextMinor(minor: string): string {
  const [major, m] = minor.split('.').map(Number);
  return `${major}.${(m ?? 0) + 1}`;
}
