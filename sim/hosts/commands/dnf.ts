// `dnf` (and `yum`, its name on RHEL 8 and later): `makecache`, `list [--showduplicates]` and
// `install` of the Kubernetes packages, from the repositories of /etc/yum.repos.d and any
// `--repofrompath`, with the repositories' `exclude=` unless `--disableexcludes`. Messages and exit
// codes as dnf 4 prints them (rpm-archive.ts names the sources and what is not modelled). An install
// is one rpm transaction; a reboot in its middle is modelled as before it (nothing changed).
// `--downloadonly` (dnf(8): "Download the resolved package set without performing any rpm transaction")
// only fills the repository's package cache (package-cache.ts); an install finds its packages there and
// removes them after its transaction (keepcache=0).
import { appendFileSync, mkdirSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, posix } from 'node:path';
import { sleep } from '../host-machine.js';
import { comparePackageVersions } from '../apt-archive.js';
import { isPackageName, PACKAGES, type PackageName } from '../host-state.js';
import { allCached, dropArchives, storeArchives } from '../package-cache.js';
import { globMatches, parseRepoFile, REPOS_DIR, rpmArchiveOffers, type RepoSection } from '../rpm-archive.js';
import { CRASH, fail, print, type CommandContext, type CommandOutcome } from './command.js';

export const DNF_RPM_LOG = '/var/log/dnf.rpm.log';
const ARCH = 'x86_64';

interface Options {
  yes: boolean;
  /** `--downloadonly`: the packages fetched into the cache, no rpm transaction. */
  downloadOnly: boolean;
  showDuplicates: boolean;
  /** `--disableexcludes=all|main|<repoid>` (repeatable, comma separated). */
  disableExcludes: string[];
  /** `--repofrompath=<id>,<url>`: a repository for this command only. */
  fromPath: RepoSection[];
  /** `--repo=<id>` (or --repoid): only these, enabled. */
  only: string[];
  enable: string[];
  disable: string[];
  /** `--setopt=reposdir=DIR[,DIR]`: where the .repo files are read from instead of /etc/yum.repos.d. */
  reposdir: string[];
  /** `--setopt=skip_if_unavailable=…` (main) and `--setopt=<repoid glob>.skip_if_unavailable=…`, in order. */
  skipIfUnavailable: { repo: string | undefined; on: boolean }[];
  words: string[];
}

const SUPERUSER = 'Error: This command has to be run with superuser privileges (under the root user on most systems).';

/** The verbs this dnf carries out (sim/hosts/faults.ts refuses a fault for another: it never meets a command that runs). */
export const DNF_VERBS: readonly string[] = ['makecache', 'list', 'install'];

function parseOptions(args: readonly string[]): Options | string {
  const o: Options = {
    yes: false,
    downloadOnly: false,
    showDuplicates: false,
    disableExcludes: [],
    fromPath: [],
    only: [],
    enable: [],
    disable: [],
    reposdir: [REPOS_DIR],
    skipIfUnavailable: [],
    words: [],
  };
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!;
    const [flag = '', inline] = a.startsWith('--')
      ? a.includes('=')
        ? [a.slice(0, a.indexOf('=')), a.slice(a.indexOf('=') + 1)]
        : [a, undefined]
      : [a, undefined];
    const value = (): string | undefined => inline ?? args[++i];
    const list = (): string[] => (value() ?? '').split(',').filter(Boolean);
    if (a === '-y' || a === '--assumeyes') o.yes = true;
    else if (a === '-q' || a === '--quiet' || a === '-C' || a === '--cacheonly' || a === '--refresh' || a === '--nogpgcheck') continue;
    else if (a === '--showduplicates') o.showDuplicates = true;
    else if (a === '--downloadonly') o.downloadOnly = true;
    else if (flag === '--disableexcludes' || flag === '--disableexcludepkgs') o.disableExcludes.push(...list());
    else if (flag === '--repo' || flag === '--repoid') o.only.push(...list());
    else if (flag === '--enablerepo') o.enable.push(...list());
    else if (flag === '--disablerepo') o.disable.push(...list());
    else if (flag === '--setopt') {
      const text = value() ?? '';
      const setting = /^reposdir=(.*)$/.exec(text);
      const skip = /^(?:(.+)\.)?skip_if_unavailable=(.*)$/.exec(text);
      if (setting) o.reposdir = (setting[1] ?? '').split(',').filter(Boolean);
      else if (skip) o.skipIfUnavailable.push({ repo: skip[1], on: /^(1|true|yes|on)$/i.test(skip[2] ?? '') });
      // other settings: accepted, no effect in the model
    } else if (flag === '--repofrompath') {
      const spec = value() ?? '';
      const comma = spec.indexOf(',');
      if (comma <= 0) return `dnf: error: argument --repofrompath: bad format: ${spec}`;
      o.fromPath.push({ id: spec.slice(0, comma), file: '--repofrompath', baseurl: spec.slice(comma + 1), enabled: true, exclude: [] });
    } else if (a.startsWith('-')) return `dnf: error: unrecognized arguments: ${a}`;
    else o.words.push(a);
  }
  return o;
}

/** The repositories this command uses: the .repo files' and --repofrompath's, enabled as asked. */
function repositories(ctx: CommandContext, o: Options): RepoSection[] | string {
  const { machine } = ctx;
  const sections: RepoSection[] = [];
  const files = o.reposdir.flatMap((dir) => {
    const at = machine.hostPath(dir);
    return statSync(at, { throwIfNoEntry: false })?.isDirectory()
      ? readdirSync(at)
          .filter((n) => n.endsWith('.repo'))
          .sort()
          .map((n) => posix.join(dir, n))
      : [];
  });
  for (const file of files) {
    if (!machine.mayRead(file, ctx.root)) return `Error: Cannot read repository file ${file}: [Errno 13] Permission denied: '${file}'`;
    const parsed = parseRepoFile(file, readFileSync(machine.hostPath(file), 'utf8'));
    if (typeof parsed === 'string') return parsed;
    sections.push(...parsed);
  }
  sections.push(...o.fromPath);
  return sections
    .map((s) => {
      let enabled = s.enabled;
      if (o.only.length) enabled = o.only.some((g) => globMatches(g, s.id));
      else {
        if (o.disable.some((g) => globMatches(g, s.id))) enabled = false;
        if (o.enable.some((g) => globMatches(g, s.id))) enabled = true;
      }
      return { ...s, enabled };
    })
    .filter((s) => s.enabled);
}

interface Available {
  name: PackageName;
  version: string;
  repo: string;
  excluded: boolean;
}

/** Whether a repository that fails is skipped: the main setting, then the section's, then `--setopt=<glob>.…` (dnf.conf(5)). */
function skipsIfUnavailable(repo: RepoSection, o: Options): boolean {
  let on = o.skipIfUnavailable.filter((s) => s.repo === undefined).at(-1)?.on ?? false;
  if (repo.skipIfUnavailable !== undefined) on = repo.skipIfUnavailable;
  for (const s of o.skipIfUnavailable) if (s.repo !== undefined && globMatches(s.repo, repo.id)) on = s.on;
  return on;
}

/**
 * Each enabled repository's metadata, fetched as dnf does; a 404 fails the whole command unless
 * the repository is skipped if unavailable: then its errors are printed and it is ignored.
 */
function loadMetadata(ctx: CommandContext, repos: readonly RepoSection[], o: Options): Available[] | string {
  const available: Available[] = [];
  const ignored: string[] = [];
  for (const repo of repos) {
    const { repository, otherRepositories } = ctx.machine.config;
    const versions = repo.baseurl === undefined ? undefined : rpmArchiveOffers(repository, repo.baseurl, otherRepositories);
    if (!versions) {
      const url = `${(repo.baseurl ?? '').replace(/\/?$/, '/')}repodata/repomd.xml`.replace(/^([a-z+]+:\/\/)[^/@]+@/, '$1');
      const error = [
        `Errors during downloading metadata for repository '${repo.id}':`,
        `  - Status code: 404 for ${url} (IP: 34.107.204.206)`,
        `Error: Failed to download metadata for repo '${repo.id}': Cannot download repomd.xml: Cannot download repodata/repomd.xml: All mirrors were tried`,
      ].join('\n');
      if (!skipsIfUnavailable(repo, o)) return error;
      ctx.err(`${error}\n`);
      ignored.push(repo.id);
      continue;
    }
    const excludesOff = o.disableExcludes.includes('all') || o.disableExcludes.includes(repo.id);
    for (const version of versions) {
      for (const name of PACKAGES) {
        available.push({ name, version, repo: repo.id, excluded: !excludesOff && repo.exclude.some((g) => globMatches(g, name)) });
      }
    }
  }
  if (ignored.length) ctx.err(`Ignoring repositories: ${ignored.join(', ')}\n`);
  return available;
}

export async function dnf(ctx: CommandContext): Promise<CommandOutcome> {
  const o = parseOptions(ctx.argv.slice(1));
  if (typeof o === 'string') return fail(ctx, o, 2);
  const [verb, ...specs] = o.words;
  if (verb === undefined) return fail(ctx, 'Error: No command given. Use `dnf --help`.', 1);
  if (!DNF_VERBS.includes(verb)) return fail(ctx, `No such command: ${verb}. Please use /usr/bin/dnf --help`, 1);
  if (verb === 'install' && !ctx.root) return fail(ctx, SUPERUSER, 1);
  if (ctx.rebootMidway) return CRASH;
  const repos = repositories(ctx, o);
  if (typeof repos === 'string') return fail(ctx, repos, 1);
  const metadata = loadMetadata(ctx, repos, o);
  if (typeof metadata === 'string') return fail(ctx, metadata, 1);
  if (verb === 'makecache') {
    for (const r of repos) if (isServed(ctx, r)) print(ctx, `${r.id.padEnd(40)} 27 kB/s | 9.4 kB     00:00`);
    print(ctx, 'Metadata cache created.');
    return 0;
  }
  const usable = metadata.filter((a) => !a.excluded);
  return verb === 'list' ? list(ctx, o, specs, usable) : install(ctx, o, specs, metadata, usable);
}

const isServed = (ctx: CommandContext, r: RepoSection): boolean =>
  r.baseurl !== undefined && rpmArchiveOffers(ctx.machine.config.repository, r.baseurl, ctx.machine.config.otherRepositories) !== undefined;

const nevra = (name: string, version: string): string => `${name}-${version}.${ARCH}`;

function list(ctx: CommandContext, o: Options, specs: readonly string[], usable: readonly Available[]): number {
  const { machine } = ctx;
  const names = PACKAGES.filter((p) => specs.length === 0 || specs.some((s) => globMatches(s, p)));
  const installed = names.map((p) => ({ name: p, version: machine.state.packages[p] }));
  const newest = (p: PackageName): Available | undefined =>
    usable.filter((a) => a.name === p).sort((a, b) => comparePackageVersions(b.version, a.version))[0];
  const available = names.flatMap((p) =>
    o.showDuplicates
      ? usable.filter((a) => a.name === p).sort((a, b) => comparePackageVersions(a.version, b.version))
      : [newest(p)].filter((a): a is Available => a !== undefined && comparePackageVersions(a.version, machine.state.packages[p]) > 0),
  );
  if (installed.length === 0 && available.length === 0) return fail(ctx, 'Error: No matching Packages to list', 1);
  const row = (name: string, version: string, repo: string): string => `${`${name}.${ARCH}`.padEnd(34)}${version.padEnd(28)}${repo}`;
  if (installed.length) print(ctx, 'Installed Packages', ...installed.map((i) => row(i.name, i.version, '@kubernetes')));
  if (available.length) print(ctx, 'Available Packages', ...available.map((a) => row(a.name, a.version, a.repo)));
  return 0;
}

/** A spec (`kubeadm`, `kubeadm-1.33.7`, `kubeadm-1.33.7-*`, `kubeadm-1.33.7-150500.1.1`) → what it matches. */
function matches(spec: string, a: { name: string; version: string }): boolean {
  const full = `${a.name}-${a.version}`;
  const [version = ''] = a.version.split('-');
  return [a.name, `${a.name}-${version}`, full, `${full}.${ARCH}`].some((form) => globMatches(spec, form));
}

async function install(
  ctx: CommandContext,
  o: Options,
  specs: readonly string[],
  all: readonly Available[],
  usable: readonly Available[],
): Promise<CommandOutcome> {
  const { machine } = ctx;
  if (specs.length === 0) return fail(ctx, 'Error: Need to pass a list of pkgs to install', 1);
  const wanted = new Map<PackageName, string>();
  for (const spec of specs) {
    const found = usable.filter((a) => matches(spec, a)).sort((a, b) => comparePackageVersions(b.version, a.version))[0];
    if (!found) {
      const filtered = all.some((a) => matches(spec, a));
      return fail(
        ctx,
        `${filtered ? 'All matches were filtered out by exclude filtering for argument' : 'No match for argument'}: ${spec}\nError: Unable to find a match: ${spec}`,
        1,
      );
    }
    wanted.set(found.name, found.version);
  }
  const changes = [...wanted].map(([pkg, to]) => ({ pkg, from: machine.state.packages[pkg], to })).filter((c) => c.from !== c.to);
  for (const [pkg, to] of wanted) if (machine.state.packages[pkg] === to) print(ctx, `Package ${nevra(pkg, to)} is already installed.`);
  print(ctx, 'Dependencies resolved.');
  if (changes.length === 0) {
    print(ctx, 'Nothing to do.', 'Complete!');
    return 0;
  }
  // dnf install moves to the version asked either way: older is a downgrade, without a flag.
  const upgrades = changes.filter((c) => comparePackageVersions(c.to, c.from) > 0);
  const downgrades = changes.filter((c) => comparePackageVersions(c.to, c.from) < 0);
  if (upgrades.length) print(ctx, 'Upgrading:', ...upgrades.map((c) => ` ${c.pkg}  ${ARCH}  ${c.to}  kubernetes`));
  if (downgrades.length) print(ctx, 'Downgrading:', ...downgrades.map((c) => ` ${c.pkg}  ${ARCH}  ${c.to}  kubernetes`));
  if (o.downloadOnly) print(ctx, 'DNF will only download packages for the transaction.');
  if (!o.yes) return fail(ctx, 'Is this ok [y/N]: Operation aborted.', 1);
  const cached = allCached(machine, 'rpm', changes);
  if (o.downloadOnly) {
    if (!cached) await machine.latency('packageDownload', ctx.signal);
    storeArchives(machine, 'rpm', changes);
    print(ctx, 'Complete!', 'The downloaded packages were saved in cache until the next successful transaction.');
    return 0;
  }
  // The rpm database lock: dnf waits for another transaction instead of failing.
  while (transacting.has(machine)) await sleep(100, ctx.signal);
  transacting.add(machine);
  try {
    if (!cached) await machine.latency('packageDownload', ctx.signal);
    await machine.latency('aptInstall', ctx.signal);
  } finally {
    transacting.delete(machine);
  }
  dropArchives(machine, 'rpm', changes);
  const log = machine.hostPath(DNF_RPM_LOG);
  mkdirSync(dirname(log), { recursive: true });
  const at = new Date().toISOString().replace(/\.\d+Z$/, '+0000');
  appendFileSync(
    log,
    changes
      .map((c) => `${at} SUBDEBUG ${comparePackageVersions(c.to, c.from) > 0 ? 'Upgrade' : 'Downgrade'}: ${nevra(c.pkg, c.to)}\n`)
      .join(''),
  );
  machine.store.update((s) => {
    for (const c of changes) s.packages[c.pkg] = c.to;
  });
  print(
    ctx,
    ...changes.map((c) => `  ${comparePackageVersions(c.to, c.from) > 0 ? 'Upgrading' : 'Downgrading'} : ${nevra(c.pkg, c.to)}`),
    'Complete!',
  );
  return 0;
}

/** Machines whose rpm database a transaction holds right now. */
const transacting = new WeakSet<object>();

/**
 * `rpm -q [--qf FORMAT] NAME...`: the installed version of each package, `%{NAME}`, `%{VERSION}`,
 * `%{RELEASE}`, `%{ARCH}` in the format (default `%{NAME}-%{VERSION}-%{RELEASE}.%{ARCH}\n`); a
 * name not installed prints "package X is not installed" and the exit code counts them.
 */
export async function rpm(ctx: CommandContext): Promise<CommandOutcome> {
  const args = ctx.argv.slice(1);
  let format = '%{NAME}-%{VERSION}-%{RELEASE}.%{ARCH}\\n';
  const names: string[] = [];
  let query = false;
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!;
    if (a === '-q' || a === '--query') query = true;
    else if (a === '--qf' || a === '--queryformat') format = args[++i] ?? '';
    else if (a.startsWith('--qf=') || a.startsWith('--queryformat=')) format = a.slice(a.indexOf('=') + 1);
    else if (a.startsWith('-')) return fail(ctx, `rpm: ${a}: unknown option`, 1);
    else names.push(a);
  }
  if (!query) return fail(ctx, `sim: rpm ${args.join(' ')} is not simulated (-q)`, 1);
  if (names.length === 0) return fail(ctx, 'rpm: no arguments given for query', 1);
  let missing = 0;
  for (const name of names) {
    if (!isPackageName(name)) {
      ctx.out(`package ${name} is not installed\n`);
      missing++;
      continue;
    }
    const full = ctx.machine.state.packages[name];
    const cut = full.lastIndexOf('-');
    const fields: Record<string, string> = { NAME: name, VERSION: full.slice(0, cut), RELEASE: full.slice(cut + 1), ARCH };
    ctx.out(
      format
        .replace(/%\{(\w+)\}/g, (m, key: string) => fields[key.toUpperCase()] ?? m)
        .replace(/\\n/g, '\n')
        .replace(/\\t/g, '\t'),
    );
  }
  return missing;
}
