// The facts of rules/readiness/other-sources.ts: which of a node's package sources besides
// Kubernetes' fail to refresh, found by a full refresh that changes nothing on the node. As the SSH
// user, never root, so it cannot touch the node's own lists, caches or locks; into a directory of its
// own under /tmp, removed afterwards:
// - apt: `apt-get update -o Dir::State::Lists=<dir>/lists` with the package caches off
//   (`Dir::Cache::pkgcache=`, `srcpkgcache=`): every configured source is fetched into that directory,
//   /var/lib/apt/lists stays as it is (apt.conf(5)).
// - dnf: `dnf makecache --setopt=cachedir=<dir>` with `--setopt=*.skip_if_unavailable=True`, so that
//   dnf goes on past the first failing repository and names each (dnf.conf(5); Red Hat's RHEL 8.1
//   release notes give the glob form); root's cache in /var/cache/dnf is not read or written.
// The files are read only when something failed, to name the one that configures each failing URL.
import { randomUUID } from 'node:crypto';
import { compareNatural } from '../../rules/index.js';
import { otherSourceFindings, type OtherSourceFailure } from '../../rules/readiness/other-sources.js';
import type { ReadinessFinding } from '../../rules/readiness/finding.js';
import type { ClusterAccess } from '../cluster-access.js';
import { kubeCall } from '../errors.js';
import { checkNode } from '../host-commands.js';
import { APT_ENV, aptStateIn } from '../package-install-apt.js';
import { APT_KUBERNETES_LIST, DNF_KUBERNETES_REPO, maskUrlCredentials } from '../parsers/kubernetes-repository.js';
import {
  parseAptSourceFiles,
  parseAptUpdateFailures,
  parseDnfMetadataFailures,
  parseDnfRepoFiles,
  sourceOfFailure,
  type ConfiguredSource,
  type RefreshFailure,
} from '../parsers/refresh-failures.js';

const READ_MS = 30_000;
/** A full refresh downloads every source's index: give it longer than a read. */
const REFRESH_MS = 300_000;
const SSH_PARALLEL = 8;

interface Tool {
  /** The directories whose files configure sources, and the one file apt also reads. */
  dirs: string[];
  files: string[];
  suffix: string;
  kubernetesFile: string;
  refresh(dir: string): { argv: string[]; env?: Record<string, string> };
  failures(output: string): RefreshFailure[];
  configured(files: Record<string, string>): ConfiguredSource[];
}

const TOOLS: Record<'apt' | 'dnf', Tool> = {
  apt: {
    dirs: ['/etc/apt/sources.list.d'],
    files: ['/etc/apt/sources.list'],
    suffix: '.list',
    kubernetesFile: APT_KUBERNETES_LIST,
    refresh: (dir) => ({ argv: ['apt-get', 'update', '-q', ...aptStateIn(dir)], env: APT_ENV }),
    failures: parseAptUpdateFailures,
    configured: parseAptSourceFiles,
  },
  dnf: {
    dirs: ['/etc/yum.repos.d'],
    files: [],
    suffix: '.repo',
    kubernetesFile: DNF_KUBERNETES_REPO,
    refresh: (dir) => ({ argv: ['dnf', 'makecache', '-q', `--setopt=cachedir=${dir}`, '--setopt=*.skip_if_unavailable=True'] }),
    failures: parseDnfMetadataFailures,
    configured: parseDnfRepoFiles,
  },
};

/** The text of each source file the node has (as the SSH user; one it may not read is left out). */
async function readSourceFiles(access: ClusterAccess, node: string, tool: Tool, signal?: AbortSignal): Promise<Record<string, string>> {
  const paths = [...tool.files];
  for (const dir of tool.dirs) {
    const r = await access.shell.exec(node, ['ls', '-1', dir], { timeoutMs: READ_MS, signal });
    if (r.exitCode === 0)
      paths.push(
        ...r.stdout
          .split('\n')
          .filter((n) => n.endsWith(tool.suffix))
          .map((n) => `${dir}/${n}`),
      );
  }
  const files: Record<string, string> = {};
  for (const path of paths) {
    const r = await access.shell.exec(node, ['cat', path], { timeoutMs: READ_MS, signal });
    if (r.exitCode === 0) files[path] = r.stdout;
  }
  return files;
}

/** The node's sources other than Kubernetes' that fail a refresh, each with the file that names it. */
export async function failingOtherSources(access: ClusterAccess, node: string, signal?: AbortSignal): Promise<OtherSourceFailure[]> {
  const tool = TOOLS[access.config.packageManager];
  const dir = `/tmp/skewless-sources-probe-${randomUUID()}`;
  let output: string;
  try {
    const mkdir = await access.shell.exec(node, ['mkdir', '-p', `${dir}/lists`], { timeoutMs: READ_MS, signal });
    if (mkdir.exitCode !== 0) throw new Error(`mkdir ${dir} exited ${mkdir.exitCode}: ${mkdir.stderr.trim().split('\n')[0]}`);
    const { argv, env } = tool.refresh(dir);
    const r = await access.shell.exec(node, argv, { timeoutMs: REFRESH_MS, signal, ...(env ? { env } : {}) });
    output = `${r.stdout}\n${r.stderr}`;
  } finally {
    await access.shell.exec(node, ['rm', '-rf', dir], { timeoutMs: READ_MS, signal }).catch(() => undefined);
  }
  const failures = tool.failures(output);
  if (failures.length === 0) return [];
  const configured = tool.configured(await readSourceFiles(access, node, tool, signal));
  return failures
    .map((f) => ({ failure: f, source: sourceOfFailure(f, configured) }))
    .filter(({ source }) => source?.file !== tool.kubernetesFile) // the Kubernetes source: the repository check's
    .map(({ failure, source }) => ({
      node,
      ...(source ? { file: source.file } : {}),
      url: maskUrlCredentials(failure.url || source?.url || ''),
      ...(failure.suite ? { suite: failure.suite } : {}),
      ...(failure.repo ? { repo: failure.repo } : {}),
      ...(failure.status ? { status: failure.status } : {}),
    }));
}

/** Every node's failing other sources as warnings of the first hop; a node that cannot be asked is a problem line. */
export async function findOtherSourceFailures(
  access: ClusterAccess,
  hop: string,
  signal?: AbortSignal,
): Promise<{ findings: ReadinessFinding[]; problems: string[] }> {
  const list = await kubeCall('list nodes', () => access.kube.core.listNode());
  const nodes = list.items
    .map((n) => n.metadata?.name ?? '')
    .filter(Boolean)
    .sort(compareNatural);
  const failures: OtherSourceFailure[] = [];
  const problems: string[] = [];
  for (let i = 0; i < nodes.length; i += SSH_PARALLEL) {
    await Promise.all(
      nodes.slice(i, i + SSH_PARALLEL).map(async (name) => {
        try {
          failures.push(...(await failingOtherSources(access, checkNode(name), signal)));
        } catch (err) {
          problems.push(`other sources on ${name}: ${maskUrlCredentials((err as Error).message.split('\n')[0] ?? '')}`);
        }
      }),
    );
  }
  failures.sort((a, b) => compareNatural(a.node, b.node) || (a.file ?? a.url).localeCompare(b.file ?? b.url));
  return { findings: otherSourceFindings(hop, failures), problems: problems.sort() };
}
