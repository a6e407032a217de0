// A node's Kubernetes package repository, one minor at a time as kubernetes.io's guide sets it up:
// what the next minors offer, learned without changing the node (apt with a temporary source list
// and lists directory; dnf with a temporary repository directory; both as the SSH user), and the
// switch of the file to a hop's minor (`sed -i`, as the upgrade guide does), then a refresh of that
// source's metadata alone (`apt-get update` reading kubernetes.list only, `dnf makecache --repo=kubernetes`):
// another source's failure is not the hop's. A file of another layout is never rewritten.
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ApplicationFailure } from '@temporalio/activity';
import { compareVersions, minorOf, parseTarget, parseVersion } from '../rules/index.js';
import type { ClusterAccess, ExecResult } from './cluster-access.js';
import type { PackageManager } from './cluster-config.js';
import { ErrorType } from './errors.js';
import { hostActivityScope } from './host-activity-context.js';
import { checkNode, checkVersion, commandFailed, run, stderrTail } from './host-commands.js';
import { packageTimeouts } from './kube-packages.js';
import { APT_ENV, aptStateIn, LOCK_WAIT } from './package-install-apt.js';
import { dnfOffered } from './package-install-dnf.js';
import { parseDnfList } from './parsers/dnf-list.js';
import { parseMadison } from './parsers/madison.js';
import { parseAptUpdateFailures, parseDnfMetadataFailures, type RefreshFailure } from './parsers/refresh-failures.js';
import {
  APT_KUBERNETES_LIST,
  APT_KUBERNETES_ONLY,
  DNF_KUBERNETES_REPO,
  DNF_REPO_ID,
  maskUrlCredentials,
  minorOfVersion,
  nextMinor,
  parseAptKubernetesList,
  parseDnfKubernetesRepo,
  sedMinorExpression,
  withMinor,
  type RepositoryFile,
} from './parsers/kubernetes-repository.js';

/** How many minors past the configured one a look ahead probes at most (pkgs.k8s.io adds one every four months). */
const MINORS_AHEAD = 4;

const failure = (type: string, message: string): ApplicationFailure => ApplicationFailure.create({ type, message, nonRetryable: true });

const readMs = (access: ClusterAccess) => packageTimeouts(access).readMs;
const installMs = (access: ClusterAccess) => packageTimeouts(access).installMs;

export interface RepositoryState {
  file: string;
  /** The file's text; undefined: there is no such file. */
  text?: string;
  parsed?: RepositoryFile;
}

/** The package tools of one family, as far as the repository file is concerned. */
interface RepositoryTool {
  /** The file kubernetes.io's install guide writes. */
  file: string;
  parse(text: string): RepositoryFile;
  /** What the node's repository offers for kubeadm, as its configuration and metadata stand. */
  offeredHere(access: ClusterAccess, node: string, signal?: AbortSignal): Promise<string[]>;
  /** What the repository file `text` offers at `minor`, asked without touching the node's own state; undefined: 404. */
  probe(access: ClusterAccess, node: string, text: string, minor: string, signal?: AbortSignal): Promise<string[] | undefined>;
  /** Fetches the repository's metadata after the file changed (root), the Kubernetes source alone. */
  refresh: { argv: string[]; env?: Record<string, string> };
  /** The sources a refresh's output says failed. */
  failures(output: string): RefreshFailure[];
}

/** Package versions of a listing that offers kubeadm, as Kubernetes versions. */
const kubeadmVersions = (entries: readonly { package: string; version: string }[]): string[] => [
  ...new Set(entries.filter((e) => e.package === 'kubeadm').map((e) => e.version)),
];

const TOOLS: Record<PackageManager, RepositoryTool> = {
  apt: {
    file: APT_KUBERNETES_LIST,
    parse: parseAptKubernetesList,
    offeredHere: async (access, node, signal) =>
      kubeadmVersions(
        parseMadison((await run(access, node, ['apt-cache', 'madison', 'kubeadm'], { timeoutMs: readMs(access), signal })).stdout),
      ),
    probe: probeAptMinor,
    refresh: { argv: ['apt-get', 'update', '-q', ...APT_KUBERNETES_ONLY, ...LOCK_WAIT], env: APT_ENV },
    failures: parseAptUpdateFailures,
  },
  dnf: {
    file: DNF_KUBERNETES_REPO,
    parse: parseDnfKubernetesRepo,
    offeredHere: async (access, node, signal) => kubeadmVersions(await dnfOffered(access, node, ['kubeadm'], { signal })),
    probe: probeDnfMinor,
    refresh: { argv: ['dnf', 'makecache', '-q', `--repo=${DNF_REPO_ID}`] },
    failures: parseDnfMetadataFailures,
  },
};

const toolOf = (access: ClusterAccess): RepositoryTool => TOOLS[access.config.packageManager];

/** Reads the node's repository file as the SSH user; a file that user may not read stops here with its path. */
export async function readRepository(access: ClusterAccess, node: string, signal?: AbortSignal): Promise<RepositoryState> {
  const tool = toolOf(access);
  const file = tool.file;
  const argv = ['cat', file];
  const r = await access.shell.exec(node, argv, { timeoutMs: readMs(access), signal });
  if (r.exitCode === 0) return { file, text: r.stdout, parsed: tool.parse(r.stdout) };
  if (/No such file or directory/.test(r.stderr)) return { file };
  if (/Permission denied/.test(r.stderr)) {
    throw failure(
      ErrorType.RepositoryUnreadable,
      `cannot read ${file} on ${node} as ${access.config.ssh.user}: Permission denied (skewless reads it to learn and switch the node's Kubernetes minor; the install guide leaves it mode 0644)`,
    );
  }
  throw commandFailed(node, argv, r);
}

/** apt's update or dnf's metadata download met a 404 for the repository: the mirror has no such minor. */
const isNotFound = (r: ExecResult): boolean =>
  /404\s+Not Found|does not have a Release file|Status code: 404 for/.test(`${r.stdout}\n${r.stderr}`);

/**
 * Runs a probe in a directory of its own under /tmp on the node, holding `name` (the repository
 * file at the probed minor, uploaded over SFTP: a URL's credentials never go into a command line),
 * and removes it afterwards. undefined: the node cannot take uploads, so nothing is probed.
 */
async function inProbeDir<T>(
  access: ClusterAccess,
  node: string,
  kind: string,
  name: string,
  text: string,
  probe: (dir: string) => Promise<T>,
  signal?: AbortSignal,
  subdir?: string,
): Promise<T | undefined> {
  const upload = access.shell.upload?.bind(access.shell);
  if (!upload) return undefined;
  const dir = `/tmp/skewless-${kind}-probe-${randomUUID()}`;
  const local = mkdtempSync(join(tmpdir(), `skewless-${kind}-probe-`));
  try {
    await run(access, node, ['mkdir', '-p', subdir ? `${dir}/${subdir}` : dir], { timeoutMs: readMs(access), signal });
    writeFileSync(join(local, name), text);
    await upload(node, join(local, name), `${dir}/${name}`, { timeoutMs: readMs(access), ...(signal ? { signal } : {}) });
    return await probe(dir);
  } finally {
    rmSync(local, { recursive: true, force: true });
    await access.shell.exec(node, ['rm', '-rf', dir], { timeoutMs: readMs(access), signal }).catch(() => undefined);
  }
}

/**
 * apt: a source list of the one line (the node's, at `minor`) and a lists directory of the probe's
 * own, for an `apt-get update` and `apt-cache madison` run as the SSH user.
 */
function probeAptMinor(
  access: ClusterAccess,
  node: string,
  text: string,
  minor: string,
  signal?: AbortSignal,
): Promise<string[] | undefined> {
  return inProbeDir(
    access,
    node,
    'apt',
    'sources.list',
    withMinor(text, minor),
    async (dir) => {
      const apt = ['-o', `Dir::Etc::SourceList=${dir}/sources.list`, '-o', 'Dir::Etc::SourceParts=-', ...aptStateIn(dir)];
      const update = ['apt-get', 'update', '-q', ...apt];
      const r = await access.shell.exec(node, update, { timeoutMs: installMs(access), env: APT_ENV, signal });
      if (r.exitCode !== 0) {
        // The mirror answers 404 for a minor it does not have (yet): the look ahead ends there.
        if (isNotFound(r)) return undefined;
        throw commandFailed(node, update, r);
      }
      return kubeadmVersions(
        parseMadison((await run(access, node, ['apt-cache', ...apt, 'madison', 'kubeadm'], { timeoutMs: readMs(access), signal })).stdout),
      );
    },
    signal,
    'lists',
  );
}

/**
 * dnf: kubernetes.repo at `minor` alone in a repository directory of the probe's own
 * (`--setopt=reposdir=`), its exclusions lifted, listed by `dnf list --showduplicates` as the SSH
 * user (dnf keeps a user's metadata cache apart from root's).
 */
function probeDnfMinor(
  access: ClusterAccess,
  node: string,
  text: string,
  minor: string,
  signal?: AbortSignal,
): Promise<string[] | undefined> {
  return inProbeDir(
    access,
    node,
    'dnf',
    'kubernetes.repo',
    withMinor(text, minor),
    async (dir) => {
      const list = ['dnf', 'list', '--showduplicates', '-q', '--disableexcludes=all', `--setopt=reposdir=${dir}`, 'kubeadm'];
      const r = await access.shell.exec(node, list, { timeoutMs: installMs(access), signal });
      if (r.exitCode !== 0) {
        if (isNotFound(r)) return undefined;
        throw commandFailed(node, list, r);
      }
      return kubeadmVersions(parseDnfList(r.stdout));
    },
    signal,
  );
}

/**
 * Kubernetes versions the node can install, newest first: what its configured repository offers,
 * and for the install guide's layout what each next minor's repository offers, until the mirror has
 * no more. `to` (the target asked, when known): a file of another layout that cannot offer it fails
 * here, naming the file, instead of as "the repository offers no 1.33" later.
 */
export async function availableVersions(access: ClusterAccess, input: { node: string; to?: string }): Promise<string[]> {
  const node = checkNode(input.node);
  const { signal } = hostActivityScope();
  const tool = toolOf(access);
  const repo = await readRepository(access, node, signal);
  const offered = await tool.offeredHere(access, node, signal);
  if (repo.parsed?.layout === 'per-minor' && repo.text !== undefined) {
    let minor = repo.parsed.minor;
    for (let i = 0; i < MINORS_AHEAD; i++) {
      minor = nextMinor(minor);
      const more = await tool.probe(access, node, repo.text, minor, signal);
      if (!more?.length) {
        if (input.to !== undefined) refuseMissingMinor(node, repo.file, repo.parsed.minor, minor, input.to);
        break;
      }
      offered.push(...more.filter((v) => !offered.includes(v)));
    }
  } else if (input.to !== undefined) {
    const wanted = targetMinor(input.to, offered);
    if (wanted && !offered.some((v) => minorOfVersion(v) === wanted)) throw layoutRefusal(node, repo, wanted);
  }
  return offered.sort(compareNewestFirst);
}

/**
 * A target of an exact version or a minor at or past `missing`, the minor whose repository the
 * mirror does not have (its probe's 404), cannot be reached: said here with the node and the file,
 * as the rules would say it without them.
 */
function refuseMissingMinor(node: string, file: string, from: string, missing: string, to: string): void {
  // Nothing offered: an expression (next-minor) names no minor here, only an exact version or a minor does.
  const wanted = targetMinor(to, []);
  const asVersion = (minor: string) => parseVersion(`${minor}.0`);
  // Another major, or a minor before the missing one: the rules' to judge (across majors, never).
  if (
    wanted === undefined ||
    asVersion(wanted).major !== asVersion(from).major ||
    compareVersions(asVersion(wanted), asVersion(missing)) < 0
  )
    return;
  const skip = wanted === missing ? '' : `, and minors cannot be skipped (${from} → ${wanted})`;
  throw failure(
    ErrorType.MissingRelease,
    `no ${missing}.x release is available: the mirror of ${file} on ${node} has no v${missing} repository (404)${skip}; nothing was installed`,
  );
}

/** The minor a target needs, where it names one beyond what is offered (an exact version, a minor, next-minor). */
function targetMinor(to: string, offered: readonly string[]): string | undefined {
  try {
    const target = parseTarget(to);
    if (target.kind === 'exact') return minorOf(target.version);
    if (target.kind === 'minor') return target.minor.text;
    if (target.expression === 'next-minor') {
      const newest = [...offered].sort(compareNewestFirst)[0];
      return newest ? nextMinor(minorOfVersion(newest)) : undefined;
    }
  } catch {
    // A bad target is the rules' to report, with their message.
  }
  return undefined;
}

const compareNewestFirst = (a: string, b: string): number => compareVersions(parseVersion(b), parseVersion(a));

function layoutRefusal(node: string, repo: RepositoryState, minor: string): ApplicationFailure {
  const why =
    repo.text === undefined
      ? 'there is no such file'
      : repo.parsed?.layout === 'unrecognised'
        ? repo.parsed.why
        : "it is not the install guide's layout";
  return failure(
    ErrorType.RepositoryLayoutUnknown,
    `${node}: ${repo.file} offers no ${minor}.x and skewless does not rewrite it: ${why}; point it at v${minor} yourself (kubernetes.io: "Changing the package repository"), then retry`,
  );
}

export interface PointRepositoryResult {
  node: string;
  file: string;
  minor: string;
  /** The file was rewritten by this call (false: it named the minor already, or offers the version as it is). */
  changed: boolean;
  /** Its line before, credentials masked: what an abort or a failed hop can tell the operator it was. */
  previous?: string;
}

/**
 * Whether a failed refresh failed on the Kubernetes source at `minor` with a 404 (the mirror has no
 * such minor), by the URL or repository id the tool names: a failure it attributes to another source
 * (or none it can name) is not the mirror's missing minor, and is reported as what it is.
 */
function kubernetesSourceFailed(tool: RepositoryTool, r: ExecResult, text: string, minor: string): boolean {
  if (!isNotFound(r)) return false;
  const failures = tool.failures(`${r.stdout}\n${r.stderr}`);
  const ours = urlsOf(withMinor(text, minor));
  return failures.some((f) => f.repo === DNF_REPO_ID || ours.some((u) => sameRepository(u, f.url)));
}

/**
 * When every source a failed refresh names is another than the Kubernetes one: what the failure
 * message says instead of the command, naming them, so that the node's Kubernetes file is not blamed.
 */
function othersToBlame(tool: RepositoryTool, r: ExecResult, text: string, minor: string, file: string): string | undefined {
  const failures = tool.failures(`${r.stdout}\n${r.stderr}`);
  const ours = urlsOf(withMinor(text, minor));
  if (failures.length === 0 || failures.some((f) => f.repo === DNF_REPO_ID || ours.some((u) => sameRepository(u, f.url)))) return undefined;
  const named = failures.map((f) => (f.repo ? `repository '${f.repo}'` : `${f.url}${f.suite ? ` ${f.suite}` : ''}`));
  return maskUrlCredentials(`the refresh of ${file} (it failed on another source, not ${file}: ${named.join(', ')})`);
}

/** The repository URLs a Kubernetes source file names (apt's deb URI, dnf's baseurl). */
const urlsOf = (text: string): string[] =>
  [...text.matchAll(/^\s*(?:deb\s+(?:\[[^\]]*\]\s+)?|baseurl\s*=\s*)(\S+)/gm)].map((m) => m[1] as string);

const sameRepository = (a: string, b: string): boolean => {
  const norm = (u: string) => u.replace(/^([a-z+]+:\/\/)[^/@\s]+@/i, '$1').replace(/\/?$/, '/');
  return b !== '' && norm(a) === norm(b);
};

/**
 * Points the node's repository at the minor of `version`, as the first step of a hop on that node:
 * nothing to do when it names that minor already or (another layout) offers the version as it is;
 * otherwise the guide's file is rewritten with `sed -i`, read back, and the lists refreshed. A minor
 * the mirror lacks (the update's 404) puts the file back as it was: nothing is installed from it.
 */
export async function pointPackageRepository(
  access: ClusterAccess,
  input: { node: string; version: string },
): Promise<PointRepositoryResult> {
  const node = checkNode(input.node);
  const version = checkVersion(input.version);
  const minor = minorOfVersion(version);
  const { signal } = hostActivityScope();
  const tool = toolOf(access);
  const repo = await readRepository(access, node, signal);
  const done = (changed: boolean, previous?: string): PointRepositoryResult => ({
    node,
    file: repo.file,
    minor,
    changed,
    ...(previous ? { previous } : {}),
  });
  if (repo.parsed?.layout !== 'per-minor' || repo.text === undefined) {
    const offered = await tool.offeredHere(access, node, signal);
    if (offered.includes(version)) return done(false);
    throw layoutRefusal(node, repo, minor);
  }
  const from = repo.parsed.minor;
  if (from === minor) return done(false);
  const root = { timeoutMs: readMs(access), sudo: true, signal };
  const switchTo = async (to: string): Promise<void> => {
    const edit = ['sed', '-i', sedMinorExpression(to === minor ? from : minor, to), repo.file];
    await run(access, node, edit, root);
    const after = await readRepository(access, node, signal);
    if (after.text !== withMinor(repo.text as string, to)) {
      throw failure(
        ErrorType.VerificationFailed,
        `${node}: ${repo.file} does not read as expected after ${edit.join(' ')}: ${maskUrlCredentials(stderrTail(after.text ?? '(gone)', 3, 300))}`,
      );
    }
  };
  const update = tool.refresh.argv;
  const refresh = () =>
    access.shell.exec(node, update, { ...root, timeoutMs: installMs(access), ...(tool.refresh.env ? { env: tool.refresh.env } : {}) });
  await switchTo(minor);
  const r = await refresh();
  if (r.exitCode !== 0 && kubernetesSourceFailed(tool, r, repo.text as string, minor)) {
    await switchTo(from);
    await refresh();
    throw failure(
      ErrorType.VersionNotAvailable,
      `${node}: the mirror of ${repo.file} has no v${minor} repository (404): the file was put back to v${from}, nothing installed`,
    );
  }
  if (r.exitCode !== 0) throw commandFailed(node, update, r, othersToBlame(tool, r, repo.text as string, minor, repo.file));
  return done(true, repo.parsed.line);
}
