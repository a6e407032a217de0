// Small file helpers the product may need around a backup (`mkdir -p`, `test -f`, `sha256sum`,
// `stat -c %s`, `rm -f`, `cat`, `chown`, `mv`) and to find a node's package source files (`ls -1 DIR`), working on the host root, with GNU coreutils' messages. A path
// outside the root throws HostPathError, which the runner reports. Reads follow the file's mode and
// owner (HostMachine.mayRead): the login user cannot read a root-owned 0600 file without sudo.
import { createHash } from 'node:crypto';
import { createReadStream, existsSync, mkdirSync, readdirSync, renameSync, rmSync, statSync, readFileSync } from 'node:fs';
import { posix } from 'node:path';
import { fail, print, type CommandContext, type CommandOutcome } from './command.js';

/** Where a non-root user may write on the simulated host. */
const writable = (ctx: CommandContext, path: string): boolean => ctx.machine.mayWrite(path, ctx.root);

function statOf(file: string): ReturnType<typeof statSync> | undefined {
  return statSync(file, { throwIfNoEntry: false });
}

export const trueCommand = async (): Promise<CommandOutcome> => 0;
export const falseCommand = async (): Promise<CommandOutcome> => 1;

export async function echo(ctx: CommandContext): Promise<CommandOutcome> {
  const noNewline = ctx.argv[1] === '-n';
  const words = ctx.argv.slice(noNewline ? 2 : 1);
  ctx.out(`${words.join(' ')}${noNewline ? '' : '\n'}`);
  return 0;
}

export async function hostname(ctx: CommandContext): Promise<CommandOutcome> {
  print(ctx, ctx.machine.name);
  return 0;
}

export async function cat(ctx: CommandContext): Promise<CommandOutcome> {
  const paths = ctx.argv.slice(1);
  if (paths.length === 0) return fail(ctx, 'sim: cat without a file (stdin) is not simulated', 2);
  let code = 0;
  for (const p of paths) {
    const st = statOf(ctx.machine.hostPath(p));
    if (!st) code = fail(ctx, `cat: ${p}: No such file or directory`, 1);
    else if (st.isDirectory()) code = fail(ctx, `cat: ${p}: Is a directory`, 1);
    else if (!ctx.machine.mayRead(p, ctx.root)) code = fail(ctx, `cat: ${p}: Permission denied`, 1);
    else ctx.out(readFileSync(ctx.machine.hostPath(p), 'utf8'));
  }
  return code;
}

/** `ls -1 DIR`: the directory's names, one a line, sorted, without dot files (GNU ls's messages, exit 2). */
export async function ls(ctx: CommandContext): Promise<CommandOutcome> {
  const [flag, dir, ...extra] = ctx.argv.slice(1);
  if (flag !== '-1' || dir === undefined || extra.length)
    return fail(ctx, `sim: ls ${ctx.argv.slice(1).join(' ')} is not simulated (only ls -1 DIR)`, 2);
  const st = statOf(ctx.machine.hostPath(dir));
  if (!st) return fail(ctx, `ls: cannot access '${dir}': No such file or directory`, 2);
  if (!st.isDirectory()) {
    print(ctx, dir);
    return 0;
  }
  if (!ctx.machine.mayRead(dir, ctx.root)) return fail(ctx, `ls: cannot open directory '${dir}': Permission denied`, 2);
  const names = readdirSync(ctx.machine.hostPath(dir))
    .filter((n) => !n.startsWith('.'))
    .sort();
  if (names.length) print(ctx, ...names);
  return 0;
}

export async function test(ctx: CommandContext): Promise<CommandOutcome> {
  const [op, path, ...extra] = ctx.argv.slice(1);
  if (op === undefined) return 1;
  if (path === undefined || extra.length || !['-f', '-d', '-e', '-s'].includes(op))
    return fail(ctx, `sim: test ${ctx.argv.slice(1).join(' ')} is not simulated`, 2);
  const st = statOf(ctx.machine.hostPath(path));
  const ok = op === '-e' ? !!st : op === '-f' ? !!st?.isFile() : op === '-d' ? !!st?.isDirectory() : !!st && st.size > 0;
  return ok ? 0 : 1;
}

export async function sha256sum(ctx: CommandContext): Promise<CommandOutcome> {
  let code = 0;
  for (const p of ctx.argv.slice(1)) {
    const file = ctx.machine.hostPath(p);
    const st = statOf(file);
    if (!st || st.isDirectory()) {
      code = fail(ctx, `sha256sum: ${p}: ${st ? 'Is a directory' : 'No such file or directory'}`, 1);
      continue;
    }
    if (!ctx.machine.mayRead(p, ctx.root)) {
      code = fail(ctx, `sha256sum: ${p}: Permission denied`, 1);
      continue;
    }
    const hash = createHash('sha256');
    for await (const chunk of createReadStream(file)) hash.update(chunk as Buffer);
    print(ctx, `${hash.digest('hex')}  ${p}`);
  }
  return code;
}

export async function stat(ctx: CommandContext): Promise<CommandOutcome> {
  const args = ctx.argv.slice(1);
  let format: string | undefined;
  let fileSystem = false;
  const paths: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!;
    if (a === '-f' || a === '--file-system') fileSystem = true;
    else if (a === '-fc' || a === '-cf') {
      fileSystem = true;
      format = args[++i];
    } else if (a === '-c' || a === '--format') format = args[++i];
    else if (a.startsWith('--format=')) format = a.slice('--format='.length);
    else if (a.startsWith('-c')) format = a.slice(2);
    else paths.push(a);
  }
  if (fileSystem) return statFileSystem(ctx, format, paths);
  if (format === undefined || !/^(%[sYa]\s?)+$/.test(format) || paths.length === 0)
    return fail(ctx, `sim: stat ${args.join(' ')} is not simulated (use -c %s)`, 2);
  let code = 0;
  for (const p of paths) {
    const st = statOf(ctx.machine.hostPath(p));
    if (!st) code = fail(ctx, `stat: cannot statx '${p}': No such file or directory`, 1);
    else
      print(
        ctx,
        format
          .replace(/%s/g, String(st.size))
          .replace(/%Y/g, String(Math.floor(Number(st.mtimeMs) / 1000)))
          .replace(/%a/g, (Number(st.mode) & 0o777).toString(8)),
      );
  }
  return code;
}

/**
 * `stat -f -c %T PATH`: the type of the file system PATH is on. Only /sys/fs/cgroup is modelled, as
 * kubernetes.io's "About cgroup v2" says a node answers it: `cgroup2fs` on cgroup v2, `tmpfs` on v1
 * (https://kubernetes.io/docs/concepts/architecture/cgroups/#check-cgroup-version). The host's
 * version is the description's `cgroup` of the node.
 */
function statFileSystem(ctx: CommandContext, format: string | undefined, paths: readonly string[]): number {
  if (format !== '%T' || paths.length !== 1 || !/^\/sys\/fs\/cgroup\/?$/.test(paths[0]!))
    return fail(
      ctx,
      `sim: stat -f ${format === undefined ? '' : `-c ${format} `}${paths.join(' ')} is not simulated (only stat -fc %T /sys/fs/cgroup/)`,
      2,
    );
  print(ctx, (ctx.machine.config.cgroup ?? 'v2') === 'v2' ? 'cgroup2fs' : 'tmpfs');
  return 0;
}

export async function mkdir(ctx: CommandContext): Promise<CommandOutcome> {
  const parents = ctx.argv.includes('-p') || ctx.argv.includes('--parents');
  let code = 0;
  for (const p of ctx.argv.slice(1).filter((a) => !a.startsWith('-'))) {
    const file = ctx.machine.hostPath(p);
    const st = statOf(file);
    if (st && parents && st.isDirectory()) continue;
    if (st) code = fail(ctx, `mkdir: cannot create directory '${p}': File exists`, 1);
    else if (!writable(ctx, p)) code = fail(ctx, `mkdir: cannot create directory '${p}': Permission denied`, 1);
    else if (!parents && !existsSync(posix.dirname(file)))
      code = fail(ctx, `mkdir: cannot create directory '${p}': No such file or directory`, 1);
    else mkdirSync(file, { recursive: true });
  }
  return code;
}

export async function rm(ctx: CommandContext): Promise<CommandOutcome> {
  const flags = ctx.argv
    .slice(1)
    .filter((a) => a.startsWith('-'))
    .join('');
  const recursive = /[rR]/.test(flags);
  const force = flags.includes('f');
  let code = 0;
  for (const p of ctx.argv.slice(1).filter((a) => !a.startsWith('-'))) {
    const file = ctx.machine.hostPath(p);
    const st = statOf(file);
    if (!st) code = force ? code : fail(ctx, `rm: cannot remove '${p}': No such file or directory`, 1);
    else if (st.isDirectory() && !recursive) code = fail(ctx, `rm: cannot remove '${p}': Is a directory`, 1);
    else if (!writable(ctx, p)) code = fail(ctx, `rm: cannot remove '${p}': Permission denied`, 1);
    else if (st.isDirectory() && ['/', '/etc', '/var', '/usr', '/home', '/tmp'].includes(p.replace(/\/+$/, '') || '/'))
      code = fail(ctx, `sim: rm -r ${p} is not simulated`, 2);
    else {
      rmSync(file, { recursive });
      ctx.machine.setOwner(p, 'root');
    }
  }
  return code;
}

/**
 * `chown OWNER[:[GROUP]] FILE...`, by root only. The simulated host knows two users, root and the
 * login user; a group is accepted and not recorded (root's group bits never let the login user read).
 */
export async function chown(ctx: CommandContext): Promise<CommandOutcome> {
  const [spec, ...paths] = ctx.argv.slice(1);
  if (spec === undefined || spec.startsWith('-') || paths.length === 0 || paths.some((p) => p.startsWith('-'))) {
    return fail(ctx, `sim: chown ${ctx.argv.slice(1).join(' ')} is not simulated (chown OWNER[:GROUP] FILE...)`, 2);
  }
  const [owner = '', group] = spec.split(':', 2);
  const users = ['root', ctx.machine.config.user];
  if (!users.includes(owner)) return fail(ctx, `chown: invalid user: '${spec}'`, 1);
  if (group !== undefined && group !== '' && !users.includes(group)) return fail(ctx, `chown: invalid group: '${spec}'`, 1);
  let code = 0;
  for (const p of paths) {
    if (!statOf(ctx.machine.hostPath(p))) code = fail(ctx, `chown: cannot access '${p}': No such file or directory`, 1);
    else if (!ctx.root && ctx.machine.ownerOf(p) !== owner)
      code = fail(ctx, `chown: changing ownership of '${p}': Operation not permitted`, 1);
    else ctx.machine.setOwner(p, owner);
  }
  return code;
}

/**
 * `mv [-T] SOURCE DEST`: a rename on the host (a static pod manifest out of /etc/kubernetes/manifests
 * and back, an etcd data dir swapped). Without -T a DEST that is a directory receives SOURCE inside
 * it, as GNU mv does; -T (--no-target-directory) never does that. An existing file DEST is replaced;
 * a directory never replaces anything here. Owners move along.
 */
export async function mv(ctx: CommandContext): Promise<CommandOutcome> {
  const noTargetDir = ctx.argv.slice(1).some((a) => a === '-T' || a === '--no-target-directory');
  const args = ctx.argv.slice(1).filter((a) => a !== '--' && a !== '-T' && a !== '--no-target-directory');
  if (args.length !== 2 || args.some((a) => a.startsWith('-')))
    return fail(ctx, `sim: mv ${ctx.argv.slice(1).join(' ')} is not simulated (mv [-T] SOURCE DEST)`, 2);
  const [source, target] = args as [string, string];
  const from = ctx.machine.hostPath(source);
  const st = statOf(from);
  if (!st) return fail(ctx, `mv: cannot stat '${source}': No such file or directory`, 1);
  let dest = target;
  const targetStat = statOf(ctx.machine.hostPath(target));
  if (targetStat?.isDirectory() && !noTargetDir) dest = posix.join(target, posix.basename(source));
  const to = ctx.machine.hostPath(dest);
  const destStat = statOf(to);
  if (!writable(ctx, source) || !writable(ctx, dest)) return fail(ctx, `mv: cannot move '${source}' to '${dest}': Permission denied`, 1);
  if (!existsSync(posix.dirname(to))) return fail(ctx, `mv: cannot move '${source}' to '${dest}': No such file or directory`, 1);
  if (destStat && (st.isDirectory() || destStat.isDirectory())) {
    return fail(
      ctx,
      st.isDirectory() && destStat.isDirectory()
        ? `mv: cannot move '${source}' to '${dest}': Directory not empty`
        : `mv: cannot overwrite '${dest}'`,
      1,
    );
  }
  if (to === from || to.startsWith(`${from}/`)) return fail(ctx, `mv: cannot move '${source}' to a subdirectory of itself, '${dest}'`, 1);
  renameSync(from, to);
  ctx.machine.moveOwners(source, dest);
  return 0;
}
