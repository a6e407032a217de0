// `apt-get update` and `apt-get install`, with apt's messages and exit code 100 for its refusals:
// unknown versions, held packages without --allow-change-held-packages, downgrades, a held dpkg lock
// (waited for up to `-o DPkg::Lock::Timeout=N` seconds first, as apt ≥ 1.9.11 does), dpkg
// interrupted. An install unpacks, then configures (dpkg-database.ts); a reboot in between
// (a rebootDuring fault) leaves the packages unpacked and dpkg interrupted. `-d`/`--download-only`
// (apt-get(8): "Download only; package files are only retrieved, not unpacked or installed") goes
// through the same checks (apt-private/private-install.cc refuses held packages without
// --allow-change-held-packages before it downloads) and the same lock, then only fills the archive
// cache (package-cache.ts), which a later install takes instead of downloading again.
import { configurePackages, unpackPackages, type PackageChange } from '../dpkg-database.js';
import { sleep } from '../host-machine.js';
import { isPackageName, type PackageName } from '../host-state.js';
import { sourceLabel } from '../apt-archive.js';
import { allCached, storeArchives } from '../package-cache.js';
import {
  addAptOption,
  aptDirs,
  candidateVersion,
  comparePackageVersions,
  offers,
  readSources,
  resolveVersion,
  updateLists,
} from './apt-repository.js';
import { CRASH, fail, print, type CommandContext, type CommandOutcome } from './command.js';

interface Options {
  yes: boolean;
  allowHeld: boolean;
  allowDowngrades: boolean;
  /** `-d`, `--download-only`, `-o APT::Get::Download-Only=true`: archives fetched into the cache, nothing installed. */
  downloadOnly: boolean;
  /** Seconds to wait for the dpkg lock (`-o DPkg::Lock::Timeout=N`; apt's keys ignore case). */
  lockTimeout: number;
  /** Every `-o Key=Value` (keys lower-cased): the Dir::… of a probe, Dpkg::Options, the lock timeout. */
  config: Map<string, string>;
  words: string[];
}

/** Machines whose dpkg frontend lock an install holds right now. */
const locked = new WeakSet<object>();

function parseOptions(args: readonly string[]): Options | string {
  const o: Options = {
    yes: false,
    allowHeld: false,
    allowDowngrades: false,
    downloadOnly: false,
    lockTimeout: 0,
    config: new Map(),
    words: [],
  };
  const option = (setting: string | undefined): void => {
    if (!addAptOption(o.config, setting)) return;
    const timeout = o.config.get('dpkg::lock::timeout');
    if (timeout !== undefined && /^\d+$/.test(timeout)) o.lockTimeout = Number(timeout);
    const downloadOnly = o.config.get('apt::get::download-only');
    if (downloadOnly !== undefined) o.downloadOnly = /^(true|yes|1)$/i.test(downloadOnly);
  };
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!;
    if (a === '-y' || a === '--yes' || a === '--assume-yes') o.yes = true;
    else if (a === '--allow-change-held-packages') o.allowHeld = true;
    else if (a === '--allow-downgrades') o.allowDowngrades = true;
    else if (a === '-d' || a === '--download-only') o.downloadOnly = true;
    else if (a === '-q' || a === '-qq' || a === '--quiet' || a === '--no-install-recommends') continue;
    else if (a === '-o' || a === '--option')
      option(args[++i]); // `Dpkg::Options::=--force-confold`: accepted, no effect here
    else if (a.startsWith('-o')) option(a.slice(2));
    else if (/^-[qyd]+$/.test(a)) {
      o.yes ||= a.includes('y');
      o.downloadOnly ||= a.includes('d');
    } else if (a.startsWith('-')) return `E: Command line option '${a}' is not understood in combination with the other options.`;
    else o.words.push(a);
  }
  return o;
}

/** The operations this apt-get carries out (sim/hosts/faults.ts refuses a fault for another). */
export const APT_GET_VERBS: readonly string[] = ['update', 'install', 'upgrade', 'dist-upgrade', 'full-upgrade'];

export async function aptGet(ctx: CommandContext): Promise<CommandOutcome> {
  const options = parseOptions(ctx.argv.slice(1));
  if (typeof options === 'string') return fail(ctx, options, 100);
  const [verb, ...packages] = options.words;
  if (verb === undefined) return fail(ctx, 'E: No operation specified.', 100); // apt-get prints usage, exit 100
  const upgradeAll = verb === 'upgrade' || verb === 'dist-upgrade' || verb === 'full-upgrade';
  if (!APT_GET_VERBS.includes(verb)) return fail(ctx, `E: Invalid operation ${verb}`, 100);
  if (upgradeAll && packages.length > 0) return fail(ctx, `E: The ${verb} command takes no arguments`, 100);
  const dirs = aptDirs(options.config);
  // An update into a lists directory of the user's own (a probe) needs no root; everything else does.
  if (!ctx.root && !(verb === 'update' && ctx.machine.mayWrite(dirs.lists, false))) {
    const lock = verb === 'update' ? `${dirs.lists}/lock` : '/var/lib/dpkg/lock-frontend';
    return fail(
      ctx,
      `E: Could not open lock file ${lock} - open (13: Permission denied)\nE: Unable to lock directory ${lock.replace(/\/[^/]+$/, '/')}`,
      100,
    );
  }
  if (locked.has(ctx.machine) && !(await lockFreed(ctx, options.lockTimeout))) {
    return fail(
      ctx,
      'E: Could not get lock /var/lib/dpkg/lock-frontend. It is held by process 4242 (apt-get)\nE: Unable to acquire the dpkg frontend lock (/var/lib/dpkg/lock-frontend), is another process using it?',
      100,
    );
  }
  if (verb === 'update') {
    // A reboot cuts an update before it changed anything the simulation keeps.
    if (ctx.rebootMidway) return CRASH;
    const sources = readSources(ctx.machine, dirs, ctx.root);
    if (typeof sources === 'string') return fail(ctx, sources, 100);
    const { lines, errors } = updateLists(ctx.machine, dirs, sources);
    print(ctx, ...lines);
    return errors.length ? fail(ctx, errors.join('\n'), 100) : 0;
  }
  // apt checks dpkg's journal before anything else when it takes the system lock.
  if (ctx.machine.state.unconfigured?.length) {
    return ctx.rebootMidway
      ? CRASH
      : fail(ctx, "E: dpkg was interrupted, you must manually run 'sudo dpkg --configure -a' to correct the problem.", 100);
  }
  const outcome = await install(ctx, options, upgradeAll ? upgradable(ctx) : packages);
  // Refused or with nothing to change, the host still goes down while apt-get runs.
  return ctx.rebootMidway ? CRASH : outcome;
}

/**
 * What `apt-get upgrade|dist-upgrade|full-upgrade` (an OS upgrade, skewless maintain's usual
 * maintenance.command) moves of the packages the simulation keeps: every one not held whose
 * candidate is newer, as on a real host, which is why kubeadm's guide holds them. Held ones are
 * "kept back". The rest of the OS is not simulated.
 */
function upgradable(ctx: CommandContext): string[] {
  const { machine } = ctx;
  const names = (Object.keys(machine.state.packages) as PackageName[]).sort();
  const newer = names.filter(
    (p) => comparePackageVersions(candidateVersion(machine, p, machine.state.packages[p]), machine.state.packages[p]) > 0,
  );
  const kept = newer.filter((p) => machine.state.holds.includes(p));
  if (kept.length) print(ctx, 'The following packages have been kept back:', `  ${kept.join(' ')}`);
  return newer.filter((p) => !kept.includes(p));
}

/** Waits up to `seconds` for another install on this host to let go of the dpkg lock. */
async function lockFreed(ctx: CommandContext, seconds: number): Promise<boolean> {
  if (seconds <= 0) return false;
  ctx.err('Waiting for cache lock: Could not get lock /var/lib/dpkg/lock-frontend. It is held by process 4242 (apt-get)\n');
  const deadline = Date.now() + seconds * 1000;
  while (locked.has(ctx.machine) && Date.now() < deadline) await sleep(100, ctx.signal);
  return !locked.has(ctx.machine);
}

type Change = PackageChange;

/** The archives fetched, each from the source that offers its version, and kept in the cache. */
function download(ctx: CommandContext, changes: Change[]): void {
  const { machine } = ctx;
  const sources = readSources(machine, aptDirs(new Map()), true);
  changes.forEach((c, i) => {
    const from =
      typeof sources === 'string' ? undefined : offers(machine, aptDirs(new Map()), sources, c.pkg).find((o) => o.version === c.to)?.entry;
    print(ctx, `Get:${i + 1} ${from ? sourceLabel(from) : ''}${c.pkg} ${c.to} [11.2 MB]`);
  });
  print(ctx, `Fetched ${(11.2 * changes.length).toFixed(1)} MB in 0s (60.0 MB/s)`);
  storeArchives(machine, 'deb', changes);
}

async function install(ctx: CommandContext, options: Options, args: string[]): Promise<CommandOutcome> {
  const { machine } = ctx;
  print(ctx, 'Reading package lists...', 'Building dependency tree...', 'Reading state information...');
  const wanted = new Map<PackageName, string>();
  for (const arg of args) {
    const [name = '', version] = arg.split('=', 2);
    if (!isPackageName(name)) return fail(ctx, `E: Unable to locate package ${name}`, 100);
    const installed = machine.state.packages[name];
    const to =
      version === undefined
        ? candidateVersion(machine, name, installed)
        : (resolveVersion(machine, name, version) ?? (version === installed ? installed : undefined));
    if (to === undefined) return fail(ctx, `E: Version '${version}' for '${name}' was not found`, 100);
    wanted.set(name, to);
  }
  const changes: Change[] = [];
  for (const [pkg, to] of wanted) {
    const from = machine.state.packages[pkg];
    if (from === to) print(ctx, `${pkg} is already the newest version (${to}).`);
    else changes.push({ pkg, from, to });
  }
  const held = changes.filter((c) => machine.state.holds.includes(c.pkg));
  const upgrades = changes.filter((c) => comparePackageVersions(c.to, c.from) > 0);
  const downgrades = changes.filter((c) => comparePackageVersions(c.to, c.from) < 0);
  const list = (cs: Change[]): string => `  ${cs.map((c) => c.pkg).join(' ')}`;
  if (held.length) print(ctx, 'The following held packages will be changed:', list(held));
  if (upgrades.length) print(ctx, 'The following packages will be upgraded:', list(upgrades));
  if (downgrades.length) print(ctx, 'The following packages will be DOWNGRADED:', list(downgrades));
  print(
    ctx,
    `${upgrades.length} upgraded, 0 newly installed, ${downgrades.length ? `${downgrades.length} downgraded, ` : ''}0 to remove and 0 not upgraded.`,
  );
  if (held.length && !options.allowHeld) {
    if (!options.yes) return fail(ctx, 'Do you want to continue? [Y/n] Abort.', 1);
    return fail(ctx, 'E: Held packages were changed and -y was used without --allow-change-held-packages.', 100);
  }
  if (downgrades.length && !options.allowDowngrades) {
    if (!options.yes) return fail(ctx, 'Do you want to continue? [Y/n] Abort.', 1);
    return fail(ctx, 'E: Packages were downgraded and -y was used without --allow-downgrades.', 100);
  }
  if (options.downloadOnly && changes.length === 0) return 0;
  const cached = allCached(machine, 'deb', changes);
  // Holding the dpkg lock for the install's latency: a concurrent apt-get on this host fails as on a real one.
  // A client that goes away meanwhile aborts the install before anything changed.
  locked.add(machine);
  try {
    if (changes.length > 0 && !cached) await machine.latency('packageDownload', ctx.signal);
    if (!options.downloadOnly) await machine.latency('aptInstall', ctx.signal);
  } finally {
    locked.delete(machine);
  }
  if (changes.length === 0) return 0;
  if (!cached) download(ctx, changes);
  if (options.downloadOnly) {
    print(ctx, 'Download complete and in download only mode');
    return 0;
  }
  print(ctx, '(Reading database ... 31245 files and directories currently installed.)');
  for (const c of changes) {
    print(ctx, `Preparing to unpack .../${c.pkg}_${c.to}_amd64.deb ...`, `Unpacking ${c.pkg} (${c.to}) over (${c.from}) ...`);
  }
  unpackPackages(machine.store, changes);
  // The power goes here: files unpacked, the status file at the new versions, nothing configured.
  if (ctx.rebootMidway) return CRASH;
  configurePackages(
    machine.store,
    changes.map((c) => c.pkg),
  );
  for (const c of changes) print(ctx, `Setting up ${c.pkg} (${c.to}) ...`);
  return 0;
}
