// `etcdctl` / `etcdutl` run the REAL binaries against the simulation's real etcd (per-node: the host's
// own member, or the member whose modelled address is dialled). What the product sends is kubeadm-shaped
// (https://127.0.0.1:2379 with the node's etcd TLS files); the sim's etcd listens on plain http, so the
// endpoint is swapped, the TLS files are checked on the host and dropped,
// and paths are mapped into the host root (and back, in the output).
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fail, type CommandContext, type CommandOutcome } from './command.js';

const TLS_FLAGS = ['cacert', 'cert', 'key'] as const;
const VALUE_FLAGS = new Set([
  'endpoints',
  'cacert',
  'cert',
  'key',
  'user',
  'password',
  'dial-timeout',
  'command-timeout',
  'keepalive-time',
  'keepalive-timeout',
  'write-out',
  'w',
  'discovery-srv',
  'data-dir',
  'wal-dir',
  'name',
  'initial-cluster',
  'initial-cluster-token',
  'initial-advertise-peer-urls',
  'bump-revision',
]);
/** `etcdutl snapshot restore`'s flags: the ones with a path are mapped into the host root. */
const RESTORE_VALUE_FLAGS = [
  'data-dir',
  'wal-dir',
  'name',
  'initial-cluster',
  'initial-cluster-token',
  'initial-advertise-peer-urls',
  'bump-revision',
];
const RESTORE_BOOLEAN_FLAGS = ['mark-compacted', 'skip-hash-check'];
/** The subcommands the product may need; others could change the sim's etcd in ways nothing models. */
const ETCDCTL_ALLOWED = ['snapshot save', 'snapshot status', 'endpoint health', 'endpoint status', 'member list', 'version'];

interface EtcdArgs {
  flags: Map<string, string>;
  positional: string[];
}

function parse(args: readonly string[], env: Readonly<Record<string, string>>): EtcdArgs {
  const parsed: EtcdArgs = { flags: new Map(), positional: [] };
  // ETCDCTL_CACERT, ETCDCTL_ENDPOINTS... are etcdctl's flags by environment.
  for (const [k, val] of Object.entries(env))
    if (k.startsWith('ETCDCTL_') && k !== 'ETCDCTL_API') parsed.flags.set(k.slice(8).toLowerCase().replace(/_/g, '-'), val);
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!;
    if (!a.startsWith('-')) {
      parsed.positional.push(a);
      continue;
    }
    const [name = '', inline] = a.replace(/^--?/, '').split(/=(.*)/s, 2);
    const value = inline ?? (VALUE_FLAGS.has(name) ? (args[++i] ?? '') : 'true');
    parsed.flags.set(name === 'w' ? 'write-out' : name, value);
  }
  return parsed;
}

/** Runs a real binary with argv (no shell); output has the host root mapped back to host paths. */
function run(ctx: CommandContext, binary: string, argv: string[]): Promise<number> {
  const root = ctx.machine.store.rootDir;
  const unmap = (text: string): string => text.split(root).join('');
  return new Promise((resolve) => {
    execFile(
      binary,
      argv,
      { signal: ctx.signal, maxBuffer: 16 << 20, env: { PATH: process.env.PATH ?? '/usr/bin:/bin' } },
      (err, stdout, stderr) => {
        ctx.out(unmap(stdout));
        ctx.err(unmap(stderr));
        if (err && (err as NodeJS.ErrnoException).code === 'ENOENT')
          resolve(fail(ctx, `bash: line 1: ${ctx.argv[0]}: command not found`, 127));
        else resolve(err ? (typeof err.code === 'number' ? err.code : 1) : 0);
      },
    );
  });
}

export async function etcdctl(ctx: CommandContext): Promise<CommandOutcome> {
  const tools = ctx.machine.config.etcd;
  if (!tools) return fail(ctx, `bash: line 1: ${ctx.argv[0]}: command not found`, 127);
  const { flags, positional } = parse(ctx.argv.slice(1), ctx.env);
  const sub = positional.slice(0, 2).join(' ');
  if (!ETCDCTL_ALLOWED.some((a) => sub === a || (a === 'version' && positional[0] === 'version'))) {
    return fail(ctx, `sim: etcdctl ${positional.join(' ')} is not simulated (only ${ETCDCTL_ALLOWED.join(', ')})`, 2);
  }
  if (sub === 'snapshot status') return snapshotStatus(ctx, tools.etcdutl, positional[2], flags);
  if (positional[0] !== 'version') {
    // A kubeadm etcd serves only TLS: without the client files the real etcdctl cannot connect.
    const endpoints = flags.get('endpoints') ?? 'https://127.0.0.1:2379';
    if (!endpoints.startsWith('http://') && TLS_FLAGS.some((f) => !flags.has(f))) {
      return fail(
        ctx,
        `{"level":"warn","msg":"retrying of unary invoker failed","target":"etcd-endpoints://${endpoints}","error":"rpc error: code = DeadlineExceeded desc = latest balancer error: connection error: desc = \\"error reading server preface: EOF\\""}\nError: context deadline exceeded`,
        1,
      );
    }
    for (const f of TLS_FLAGS) {
      const path = flags.get(f);
      if (path === undefined) continue;
      if (!existsSync(ctx.machine.hostPath(path))) return fail(ctx, `Error: open ${path}: no such file or directory`, 128);
      if (f === 'key' && !ctx.root) return fail(ctx, `Error: open ${path}: permission denied`, 128);
    }
  }
  const dialled = flags.get('endpoints') ?? 'https://127.0.0.1:2379';
  const pass: string[] = [`--endpoints=${tools.memberOf?.(ctx.machine.name, dialled) ?? tools.endpoint}`];
  for (const [name, value] of flags) {
    if (name !== 'endpoints' && !(TLS_FLAGS as readonly string[]).includes(name)) pass.push(`--${name}=${value}`);
  }
  const args = [...positional];
  if (sub === 'snapshot save') {
    if (positional[2] === undefined) return fail(ctx, 'Error: snapshot save expects one argument', 1);
    if (!ctx.root) return fail(ctx, `Error: could not open ${positional[2]}.part (open ${positional[2]}.part: permission denied)`, 1);
    args[2] = ctx.machine.hostPath(positional[2]);
    await ctx.machine.latency('etcdSnapshot', ctx.signal);
    // The real etcdctl writes `<file>.part` with mode 0600 and renames it: a new file, root's.
    const code = await run(ctx, tools.etcdctl, [...pass, ...args]);
    if (code === 0) ctx.machine.setOwner(positional[2], 'root');
    return code;
  }
  return run(ctx, tools.etcdctl, [...pass, ...args]);
}

/** etcd 3.6 moved `snapshot status` to etcdutl; `etcdctl snapshot status` lands here too. */
function snapshotStatus(ctx: CommandContext, etcdutlPath: string, path: string | undefined, flags: Map<string, string>): Promise<number> {
  if (path === undefined) return Promise.resolve(fail(ctx, 'Error: snapshot status requires exactly one argument', 1));
  if (!ctx.machine.mayRead(path, ctx.root)) return Promise.resolve(fail(ctx, `Error: open ${path}: permission denied`, 1));
  const format = flags.get('write-out');
  return run(ctx, etcdutlPath, ['snapshot', 'status', ctx.machine.hostPath(path), ...(format ? [`--write-out=${format}`] : [])]);
}

export async function etcdutl(ctx: CommandContext): Promise<CommandOutcome> {
  const tools = ctx.machine.config.etcd;
  if (!tools) return fail(ctx, `bash: line 1: ${ctx.argv[0]}: command not found`, 127);
  const { flags, positional } = parse(ctx.argv.slice(1), {});
  if (positional[0] === 'version') return run(ctx, tools.etcdutl, ['version']);
  const sub = positional.slice(0, 2).join(' ');
  if (sub === 'snapshot restore') return snapshotRestore(ctx, tools.etcdutl, positional, flags);
  if (sub !== 'snapshot status')
    return fail(ctx, `sim: etcdutl ${positional.join(' ')} is not simulated (only snapshot status, snapshot restore, version)`, 2);
  return snapshotStatus(ctx, tools.etcdutl, positional[2], flags);
}

/**
 * The REAL `etcdutl snapshot restore` into a data dir on the host (mapped into its root): the
 * primary control plane's /var/lib/etcd is what the real etcd serves (sim/cluster/static-pods.ts).
 * It writes a new directory, so it needs root; etcdutl itself refuses a data dir that exists.
 */
function snapshotRestore(ctx: CommandContext, etcdutlPath: string, positional: string[], flags: Map<string, string>): Promise<number> {
  const file = positional[2];
  if (file === undefined || positional.length > 3)
    return Promise.resolve(fail(ctx, 'Error: snapshot restore requires exactly one argument', 1));
  const unknown = [...flags.keys()].filter((f) => !RESTORE_VALUE_FLAGS.includes(f) && !RESTORE_BOOLEAN_FLAGS.includes(f));
  if (unknown.length > 0) return Promise.resolve(fail(ctx, `sim: etcdutl snapshot restore --${unknown[0]} is not simulated`, 2));
  const dataDir = flags.get('data-dir');
  if (!dataDir)
    return Promise.resolve(
      fail(
        ctx,
        'sim: etcdutl snapshot restore without --data-dir (a directory named after --name in the working directory) is not simulated',
        2,
      ),
    );
  if (!ctx.machine.mayRead(file, ctx.root)) return Promise.resolve(fail(ctx, `Error: open ${file}: permission denied`, 1));
  if (!ctx.root) return Promise.resolve(fail(ctx, `Error: mkdir ${dataDir}: permission denied`, 1));
  const argv = ['snapshot', 'restore', ctx.machine.hostPath(file)];
  for (const [name, value] of flags) {
    if (RESTORE_BOOLEAN_FLAGS.includes(name)) argv.push(`--${name}`);
    else argv.push(`--${name}=${name === 'data-dir' || name === 'wal-dir' ? ctx.machine.hostPath(value) : value}`);
  }
  return run(ctx, etcdutlPath, argv);
}
