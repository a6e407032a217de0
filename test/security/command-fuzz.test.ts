import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { ApplicationFailure } from '@temporalio/common';
import type { ClusterAccess, ExecOptions, ExecResult, RemoteShell } from '../../activities/cluster-access.js';
import type { ClusterConfig } from '../../activities/cluster-config.js';
import {
  checkRestoreSnapshot,
  placeSnapshot,
  planRestore,
  restoreEtcdMember,
  startStaticPods,
  stopStaticPods,
  verifyEtcdRestore,
} from '../../activities/etcd-restore.js';
import { snapshotEtcd } from '../../activities/etcd-snapshot.js';
import { kubeadmUpgradeApply, kubeadmUpgradeNode, kubeadmUpgradePlan } from '../../activities/host-kubeadm.js';
import { rebootNode, restartKubelet } from '../../activities/host-kubelet.js';
import { installPackages } from '../../activities/host-packages.js';
import { availableVersions, pointPackageRepository } from '../../activities/package-repository.js';
import type { KubeApi } from '../../activities/kube-api.js';
import { commandLine } from '../../activities/shell-words.js';
import { isHostCommandForm } from '../../rules/host-command-forms.js';
import { createSshShell } from '../../activities/ssh-shell.js';
import { etcdManifest } from '../../sim/hosts/host-seed.js';
import { tempDir } from '../helpers/temp-dir.js';

/**
 * A seeded fuzz of every place that builds a host command from input: the host activities (node,
 * version, packages, hop, reboot command, timeouts, and what a hostile host prints back), and the
 * SSH shell's command line (shell-words). Each input is either refused as Invalid before anything runs
 * (a recording fake shell and API see no call), or every word reaches the host as one literal argv
 * word: each recorded command line is run by a real /bin/sh whose PATH holds only argv printers, and
 * must give back exactly the argv the activity built, with no option the product does not use.
 * SKEWLESS_FUZZ_SEED=<n> replays another seed; a failure names the seed and the input.
 */

const SEED = Number(process.env.SKEWLESS_FUZZ_SEED ?? 0x5eed_2026);
const CASES_PER_FIELD = 300;

function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const PWNED = join(tmpdir(), `skewless-fuzz-pwned-${process.pid}`);
const HOSTILE = [
  ';',
  '&&',
  '||',
  '|',
  '&',
  `$(touch ${PWNED})`,
  `\`touch ${PWNED}\``,
  '$HOME',
  '${IFS}',
  '$((1+1))',
  "'",
  '"',
  "'\\''",
  '\\',
  '\n',
  '\r',
  '\t',
  ' ',
  '\0',
  '*',
  '?',
  '[a-z]',
  '~',
  '~root',
  '#',
  '!',
  '{a,b}',
  '<',
  '>',
  '>>',
  '2>&1',
  '<(id)',
  '%s%n',
  '%3B',
  '..',
  '../../etc/passwd',
  '/etc/shadow',
  '-oProxyCommand=touch /tmp/x',
  '-o',
  '--help',
  '--',
  '-rf',
  '-',
  '=',
  'A=b',
  '--force-yes',
  '-y',
  '--allow-downgrades',
  '--root=/',
  '-c',
  'ü',
  '🚀',
  '\u202e',
  '\u200b',
  '；',
  '＄(id)',
  'ｖ1.33.7',
  '١.٣٣.٧',
  'v1.33.7\u0000',
  '\u00a0',
  '\x1b[31m',
  '\x7f',
];
const ATOMS = [
  'cp-1',
  'worker-3',
  'w',
  '1',
  '1.33.7',
  'v1.34.2',
  '1.33.7-rc.1',
  '1.33',
  'kubeadm',
  'kubelet',
  'kubectl',
  'reboot',
  'a',
  'x'.repeat(300),
];

/** A hostile string: valid-looking atoms and metacharacters glued together, sometimes huge. */
function hostileString(r: () => number): string {
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(r() * xs.length)] as T;
  const roll = r();
  if (roll < 0.03)
    return pick(ATOMS)
      .repeat(1 + Math.floor(r() * 2000))
      .slice(0, 20_000); // very long
  if (roll < 0.1) return `${pick(ATOMS)}${pick(HOSTILE)}`; // valid value with a tail
  if (roll < 0.17) return `${pick(HOSTILE)}${pick(ATOMS)}`; // and with a head (leading `-`: option injection)
  if (roll < 0.22) return pick(ATOMS);
  let s = '';
  for (let n = 1 + Math.floor(r() * 5); n > 0; n--) s += r() < 0.6 ? pick(HOSTILE) : pick(ATOMS);
  return s;
}

/** Not only strings: what JSON can put in a workflow input (toString traps included). */
function hostileValue(r: () => number): unknown {
  const roll = r();
  if (roll < 0.85) return hostileString(r);
  const others = [
    undefined,
    null,
    0,
    -1,
    1.5,
    1e309,
    true,
    [],
    ['cp-1'],
    {},
    JSON.parse('{"toString":1}'),
    JSON.parse('{"toString":null,"valueOf":null}'),
    JSON.parse('{"length":3}'),
    Object.create(null),
  ];
  return others[Math.floor(r() * others.length)];
}

const show = (v: unknown): string => {
  try {
    return JSON.stringify(v)?.slice(0, 120) ?? String(v);
  } catch {
    return Object.prototype.toString.call(v);
  }
};

// ---------------------------------------------------------------------------------------------
// The fake world: a shell that records every command (and answers like the real tools would), and
// an API that answers like the cluster would, so accepted inputs walk the whole command path.

interface Recorded {
  node: string;
  argv: string[];
  sudo: boolean;
  env: Record<string, string>;
}

const FIXTURES = join(import.meta.dirname, '..', '..', '..', 'test', 'fixtures', 'tool-output');
const fixture = (name: string): string =>
  readFileSync(join(FIXTURES, name), 'utf8')
    .split('\n')
    .filter((l) => !l.startsWith('# '))
    .join('\n');

interface World {
  access: ClusterAccess;
  calls: () => { execs: Recorded[]; kube: number };
}

function fakeWorld(o: { from: string; target: string; clusterAt: string; snapshots: string; madisonExtra?: string }): World {
  const execs: Recorded[] = [];
  let kube = 0;
  const s = {
    applied: false,
    restarted: false,
    rebooted: false,
    clusterAt: o.clusterAt,
    repoMinor: o.from.split('.').slice(0, 2).join('.'),
    probes: 0,
  };
  const snapshot = Buffer.from('etcd snapshot bytes');
  const sum = createHash('sha256').update(snapshot).digest('hex');
  const shell: RemoteShell = {
    async exec(node: string, argv: readonly string[], options: ExecOptions): Promise<ExecResult> {
      execs.push({ node, argv: [...argv], sudo: options.sudo === true, env: { ...options.env } });
      const ok = (stdout = ''): ExecResult => ({ exitCode: 0, stdout, stderr: '' });
      const [cmd, a1, a2] = argv;
      const pkgs = argv.slice(2).filter((w) => !w.startsWith('-'));
      if (cmd === 'apt-cache' && argv.includes('madison'))
        return ok(
          `${argv
            .slice(argv.indexOf('madison') + 1)
            .map((p) => `   ${p} | ${o.target}-1.1 | https://pkgs.k8s.io/core:/stable:/v1.33/deb  Packages`)
            .join('\n')}\n${o.madisonExtra ?? ''}`,
        );
      if (cmd === 'apt-cache' && a1 === 'policy')
        return ok(pkgs.map((p) => `${p}:\n  Installed: ${o.from}-1.1\n  Candidate: ${o.target}-1.1\n`).join(''));
      // kubernetes.list as the install guide writes it; `sed -i` points it at another minor.
      if (cmd === 'cat' && a1 === '/etc/apt/sources.list.d/kubernetes.list')
        return ok(
          `deb [signed-by=/etc/apt/keyrings/kubernetes-apt-keyring.gpg] https://pkgs.k8s.io/core:/stable:/v${s.repoMinor}/deb/ /\n`,
        );
      // The look ahead at the next minors: the mirror has the first one, the one after answers 404.
      if (cmd === 'apt-get' && a1 === 'update' && argv.some((w) => w.startsWith('Dir::Etc::SourceList=')) && ++s.probes > 1) {
        return {
          exitCode: 100,
          stdout: 'Err:2 https://pkgs.k8s.io/core:/stable:/v1.35/deb  Release\n  404  Not Found\n',
          stderr: "E: The repository 'https://pkgs.k8s.io/core:/stable:/v1.35/deb  Release' does not have a Release file.\n",
        };
      }
      if (cmd === 'sed') s.repoMinor = /\/v([\d.]+)\/,g$/.exec(a2 ?? '')?.[1] ?? s.repoMinor;
      if (cmd === 'pgrep') return { exitCode: 1, stdout: '', stderr: '' }; // as pgrep says "no such process": the host is quiet
      if (cmd === 'apt-mark' && a1 === 'showhold') return ok('kubeadm\nkubelet\nkubectl\n');
      if (cmd === 'kubelet' && a1 === '--version') return ok(`Kubernetes v${o.target}\n`);
      if (cmd === 'systemctl' && a1 === 'restart') s.restarted = true;
      if (cmd === 'kubeadm' && a1 === 'upgrade' && a2 === 'plan') return ok(fixture('kubeadm-upgrade-plan.patch-and-minor.txt'));
      if (cmd === 'kubeadm' && a1 === 'upgrade' && a2 === 'apply') Object.assign(s, { applied: true, clusterAt: o.target });
      if (cmd === 'kubeadm' && a1 === 'upgrade' && a2 === 'node') s.applied = true;
      if (cmd === 'cat' && a1 === '/proc/sys/kernel/random/boot_id') return ok(s.rebooted ? 'boot-2\n' : 'boot-1\n');
      if (['reboot', 'shutdown', '/sbin/reboot', '/usr/sbin/reboot'].includes(cmd ?? '') || (cmd === 'systemctl' && a1 === 'reboot'))
        s.rebooted = true;
      if ((cmd === 'etcdutl' || cmd === 'etcdctl') && a1 === 'snapshot' && a2 === 'status')
        return ok(fixture('etcdutl-snapshot-status.json.txt'));
      if (cmd === 'sha256sum') return ok(`${sum}  ${argv[1]}\n`);
      // The restore: a kubeadm etcd manifest, its fresh and previous data dirs not there yet, etcd answering.
      if (cmd === 'cat' && a1?.endsWith('/etcd.yaml')) return ok(etcdManifest('cp-1', '10.0.0.11'));
      if (cmd === 'test' && (argv[2] ?? '').includes('.skewless-')) return { exitCode: 1, stdout: '', stderr: '' };
      if (cmd === 'etcdctl' && argv.includes('endpoint') && argv.includes('status'))
        return ok('[{"Endpoint":"https://127.0.0.1:2379","Status":{"header":{"revision":2000000008}}}]');
      return ok();
    },
    async download(node, remotePath, localPath) {
      execs.push({ node, argv: ['<sftp download>', remotePath], sudo: false, env: {} });
      writeFileSync(localPath, snapshot);
    },
    async upload(node, _localPath, remotePath) {
      execs.push({ node, argv: ['<sftp upload>', remotePath], sudo: false, env: {} });
    },
  };
  const pods = (node: string) =>
    (node.startsWith('cp') ? ['kube-apiserver', 'kube-controller-manager', 'kube-scheduler'] : []).map((component) => ({
      metadata: { labels: { component } },
      spec: { containers: [{ image: `registry.k8s.io/${component}:v${s.applied ? o.target : o.from}` }] },
    }));
  const counted = <T>(value: T): Promise<T> => {
    kube++;
    return Promise.resolve(value);
  };
  const api = {
    core: {
      readNode: () =>
        counted({
          status: { conditions: [{ type: 'Ready', status: 'True' }], nodeInfo: { kubeletVersion: `v${s.restarted ? o.target : o.from}` } },
        }),
      listNamespacedPod: (req: { fieldSelector?: string }) => counted({ items: pods(req.fieldSelector?.split('=')[1] ?? '') }),
      readNamespacedConfigMap: () => counted({ data: { ClusterConfiguration: `kubernetesVersion: v${s.clusterAt}\n` } }),
      listNode: () => counted({ items: [{ metadata: { name: 'cp-1' } }] }),
    },
    // kubeadmUpgradeApply asks whether kube-proxy is there (addons.kubeProxy: auto): it is.
    apps: { readNamespacedDaemonSet: () => counted({ metadata: { name: 'kube-proxy', namespace: 'kube-system' } }) },
  } as unknown as KubeApi;
  const config = {
    name: 'fuzz',
    kubeconfig: '/nonexistent',
    ssh: { user: 'ops', port: 22, privateKeyPath: '/nonexistent', knownHostsPath: '/nonexistent', sudo: true, connectTimeoutSeconds: 5 },
    nodes: {},
    packageManager: 'apt',
    etcd: {
      endpoint: 'https://127.0.0.1:2379',
      caCert: '/etc/kubernetes/pki/etcd/ca.crt',
      cert: '/etc/kubernetes/pki/etcd/server.crt',
      key: '/etc/kubernetes/pki/etcd/server.key',
      remoteDir: '/var/lib/skewless/snapshots',
    },
    snapshots: { dir: o.snapshots },
    drain: { timeoutSeconds: 60, deleteEmptyDirData: false, ignoreDaemonSets: true },
    probes: [],
    timeouts: {
      commandSeconds: 60,
      packageInstallSeconds: 480,
      kubeadmPlanSeconds: 300,
      kubeadmApplySeconds: 1080,
      kubeadmNodeSeconds: 540,
    },
  } satisfies ClusterConfig;
  return { access: { config, kube: api, shell }, calls: () => ({ execs, kube }) };
}

// ---------------------------------------------------------------------------------------------
// Every command builder and each of its inputs. `valid` is a good input; a case replaces one field.

interface Target {
  name: string;
  valid: Record<string, unknown>;
  fields: string[];
  /** The state the node is in before the call, so a valid input runs every command it can. */
  world: (input: Record<string, unknown>) => { from: string; clusterAt: string };
  run: (access: ClusterAccess, input: Record<string, unknown>) => Promise<unknown>;
}

const any = (x: Record<string, unknown>) => x as never;
const FAKE_SUM = createHash('sha256').update(Buffer.from('etcd snapshot bytes')).digest('hex');
const RESTORE = {
  remotePath: '/var/lib/skewless/snapshots/etcd-fuzz-1.33.7.db',
  member: { node: 'cp-1', name: 'cp-1', peerUrl: 'https://10.0.0.11:2380', dataDir: '/var/lib/etcd' },
  initialCluster: 'cp-1=https://10.0.0.11:2380',
};
const TARGETS: Target[] = [
  {
    name: 'availableVersions',
    valid: { node: 'cp-1' },
    fields: ['node'],
    world: () => ({ from: '1.32.4', clusterAt: '1.32.4' }),
    run: (a, i) => availableVersions(a, any(i)),
  },
  {
    name: 'pointPackageRepository',
    valid: { node: 'worker-1', version: '1.33.7' },
    fields: ['node', 'version'],
    world: () => ({ from: '1.32.4', clusterAt: '1.32.4' }),
    run: (a, i) => pointPackageRepository(a, any(i)),
  },
  {
    name: 'installPackages',
    valid: { node: 'worker-1', version: '1.33.7', packages: ['kubeadm', 'kubelet', 'kubectl'] },
    fields: ['node', 'version', 'packages', 'packages[]'],
    world: () => ({ from: '1.32.4', clusterAt: '1.32.4' }),
    run: (a, i) => installPackages(a, any(i)),
  },
  {
    name: 'kubeadmUpgradePlan',
    valid: { node: 'cp-1', version: '1.33.7' },
    fields: ['node', 'version'],
    world: () => ({ from: '1.32.4', clusterAt: '1.32.4' }),
    run: (a, i) => kubeadmUpgradePlan(a, any(i)),
  },
  {
    name: 'kubeadmUpgradeApply',
    valid: { node: 'cp-1', version: '1.33.7' },
    fields: ['node', 'version'],
    world: () => ({ from: '1.32.4', clusterAt: '1.32.4' }),
    run: (a, i) => kubeadmUpgradeApply(a, any(i)),
  },
  {
    name: 'kubeadmUpgradeNode',
    valid: { node: 'worker-1', version: '1.33.7' },
    fields: ['node', 'version'],
    world: (i) => ({ from: '1.32.4', clusterAt: typeof i.version === 'string' ? i.version.replace(/^v/, '') : '1.33.7' }),
    run: (a, i) => kubeadmUpgradeNode(a, any(i)),
  },
  {
    name: 'restartKubelet',
    valid: { node: 'worker-1', version: '1.33.7', timeoutSeconds: 60 },
    fields: ['node', 'version', 'timeoutSeconds'],
    world: () => ({ from: '1.32.4', clusterAt: '1.33.7' }),
    run: (a, i) => restartKubelet(a, any(i)),
  },
  {
    name: 'rebootNode',
    valid: { node: 'worker-1', command: ['systemctl', 'reboot'], timeoutSeconds: 60 },
    fields: ['node', 'command', 'command[]', 'timeoutSeconds'],
    world: () => ({ from: '1.32.4', clusterAt: '1.32.4' }),
    run: (a, i) => rebootNode(a, any(i)),
  },
  {
    name: 'snapshotEtcd',
    valid: { node: 'cp-1', hop: '1.33.7' },
    fields: ['node', 'hop'],
    world: () => ({ from: '1.32.4', clusterAt: '1.32.4' }),
    run: (a, i) => snapshotEtcd(a, any(i)),
  },
  // The restore (activities/etcd-restore.ts): every value that reaches a command line.
  {
    name: 'planRestore',
    valid: { snapshotPath: RESTORE.remotePath, controlPlanes: ['cp-1'] },
    fields: ['snapshotPath', 'hop', 'controlPlanes', 'controlPlanes[]'],
    world: () => ({ from: '1.32.4', clusterAt: '1.32.4' }),
    run: (a, i) => planRestore(a, any(i)),
  },
  {
    name: 'planRestore by hop',
    valid: { hop: '1.33.7', controlPlanes: ['cp-1'] },
    fields: ['hop'],
    world: () => ({ from: '1.32.4', clusterAt: '1.32.4' }),
    run: (a, i) => planRestore(a, any(i)),
  },
  {
    name: 'placeSnapshot',
    valid: { node: 'cp-2', hop: '1.33.7' },
    fields: ['node', 'hop'],
    world: () => ({ from: '1.32.4', clusterAt: '1.32.4' }),
    run: (a, i) => placeSnapshot(a, any(i)),
  },
  {
    name: 'checkRestoreSnapshot',
    valid: { node: 'cp-1', remotePath: RESTORE.remotePath, sha256: FAKE_SUM, revision: 8 },
    fields: ['node', 'remotePath', 'sha256'],
    world: () => ({ from: '1.32.4', clusterAt: '1.32.4' }),
    run: (a, i) => checkRestoreSnapshot(a, any(i)),
  },
  {
    name: 'stopStaticPods',
    valid: { node: 'cp-1', timeoutSeconds: 5 },
    fields: ['node', 'timeoutSeconds'],
    world: () => ({ from: '1.32.4', clusterAt: '1.32.4' }),
    run: (a, i) => stopStaticPods(a, any(i)),
  },
  {
    name: 'restoreEtcdMember',
    valid: {
      node: 'cp-1',
      member: { ...RESTORE.member },
      remotePath: RESTORE.remotePath,
      initialCluster: RESTORE.initialCluster,
      bumpRevision: 1_000_000_000,
      tag: '1.33.7',
    },
    fields: ['node', 'member', 'member.name', 'member.peerUrl', 'member.dataDir', 'remotePath', 'initialCluster', 'bumpRevision', 'tag'],
    world: () => ({ from: '1.32.4', clusterAt: '1.32.4' }),
    run: (a, i) => restoreEtcdMember(a, any(i)),
  },
  {
    name: 'startStaticPods',
    valid: { node: 'cp-1' },
    fields: ['node'],
    world: () => ({ from: '1.32.4', clusterAt: '1.32.4' }),
    run: (a, i) => startStaticPods(a, any(i)),
  },
  {
    name: 'verifyEtcdRestore',
    valid: { node: 'cp-1', minRevision: 1_000_000_008, timeoutSeconds: 5 },
    fields: ['node', 'minRevision', 'timeoutSeconds'],
    world: () => ({ from: '1.32.4', clusterAt: '1.32.4' }),
    run: (a, i) => verifyEtcdRestore(a, any(i)),
  },
];

function mutate(t: Target, field: string, r: () => number): Record<string, unknown> {
  const input: Record<string, unknown> = structuredClone(t.valid);
  if (field.includes('.')) {
    const [outer = '', inner = ''] = field.split('.');
    input[outer] = { ...(input[outer] as Record<string, unknown>), [inner]: hostileValue(r) };
  } else if (field.endsWith('[]')) {
    const key = field.slice(0, -2);
    const list = [...(input[key] as unknown[])];
    list.splice(Math.floor(r() * (list.length + 1)), r() < 0.5 ? 1 : 0, hostileValue(r));
    input[key] = list;
  } else input[field] = hostileValue(r);
  return input;
}

/** The printer's name for a command word: absolute paths run as their basename, and a shell builtin (`true`) under another name. */
const BUILTINS = new Set(['true', 'false', 'echo', 'printf', 'test', 'kill', 'pwd', 'read', 'type']);
const programName = (word: string): string => (BUILTINS.has(basename(word)) ? `${basename(word)}-program` : basename(word));

/** Every option word the product itself passes (seen on valid inputs): anything else starting with `-` is injected. */
const PRODUCT_OPTIONS = new Set<string>();
const SAFE_WORD = /^[A-Za-z0-9._:=/+@,~-]+$/;
/**
 * Words the product writes itself that are not of the safe shape (pgrep's `apt-get|dpkg`): seen in
 * the baseline, where every input is plain, so they cannot come from input. Hostile input may not add others.
 */
const PRODUCT_WORDS = new Set<string>();
const harmless = (word: string) => SAFE_WORD.test(word) || PRODUCT_WORDS.has(word);

describe('command builders under hostile input (seeded fuzz)', () => {
  let scratch: string;
  let bin: string;
  const accepted: Recorded[] = [];
  const counts = { cases: 0, refused: 0, accepted: 0, commands: 0 };
  before(() => {
    scratch = tempDir('fuzz');
    bin = join(scratch, 'bin');
    mkdirSync(bin);
    // The argv printer: how many arguments, its own name, then each argument, NUL-separated.
    writeFileSync(join(scratch, 'argv-printer'), '#!/bin/sh\nprintf \'%s\\0\' "$#" "${0##*/}" "$@" "${FUZZ_V-<unset>}"\n');
    chmodSync(join(scratch, 'argv-printer'), 0o755);
  });
  after(() => {
    rmSync(scratch, { recursive: true, force: true });
    rmSync(PWNED, { force: true });
  });

  /** Runs recorded commands through a real /bin/sh (PATH: printers only) and returns each one's argv as the program saw it. */
  function throughShell(lines: string[], names: Iterable<string>): string[][] {
    for (const name of names) if (!existsSync(join(bin, name))) symlinkSync(join(scratch, 'argv-printer'), join(bin, name));
    const script = join(scratch, 'script.sh');
    writeFileSync(script, `${lines.join('\n')}\n`);
    const out = execFileSync('/bin/sh', [script], { env: { PATH: bin }, cwd: scratch, maxBuffer: 1 << 30 });
    const fields = out.toString('utf8').split('\0');
    const runs: string[][] = [];
    for (let i = 0; i < fields.length - 1;) {
      const n = Number(fields[i]);
      runs.push(fields.slice(i + 1, i + 3 + n));
      i += 3 + n;
    }
    return runs;
  }
  /** What /bin/sh must hand the program for a command the shell builds with commandLine (absolute command words run as their basename here). */
  const asRun = (c: Recorded): { line: string; expect: string[] } => {
    const argv = [programName(c.argv[0] as string), ...c.argv.slice(1)];
    const env = Object.entries(c.env).map(([k, v]) => `${k}=${v}`);
    return {
      line: commandLine(argv, { env: c.env, sudo: c.sudo }),
      expect: c.sudo ? ['sudo', '-n', ...env, ...argv, '<unset>'] : [...argv, '<unset>'],
    };
  };

  it('valid inputs run their commands (the baseline: which options the product uses)', async () => {
    for (const t of TARGETS) {
      const snapshots = join(scratch, 'snapshots-valid');
      mkdirSync(snapshots, { recursive: true });
      const w = fakeWorld({ ...t.world(t.valid), target: '1.33.7', snapshots });
      await t.run(w.access, structuredClone(t.valid));
      const { execs } = w.calls();
      assert.ok(execs.length > 0, `${t.name} ran commands`);
      for (const c of execs) for (const word of c.argv.slice(1)) if (word.startsWith('-')) PRODUCT_OPTIONS.add(word);
      for (const c of execs) for (const word of c.argv) if (!SAFE_WORD.test(word)) PRODUCT_WORDS.add(word);
      // The table `sim fault` refuses by (a fault no command of these can match) must know each command built.
      for (const c of execs.filter((x) => !(x.argv[0] as string).startsWith('<sftp ')))
        assert.ok(isHostCommandForm(c.argv), `${t.name}: '${c.argv.join(' ')}' is a form rules/host-command-forms.ts does not list`);
    }
    assert.ok(PRODUCT_OPTIONS.has('--yes') && PRODUCT_OPTIONS.has('-y'), [...PRODUCT_OPTIONS].join(' '));
  });

  for (const t of TARGETS) {
    for (const field of t.fields) {
      it(`${t.name}: ${CASES_PER_FIELD} hostile values of ${field}`, async () => {
        const r = mulberry32(SEED ^ (t.name.length * 7919) ^ (field.length * 104729) ^ t.fields.indexOf(field));
        const snapshots = join(scratch, `snapshots-${t.name}`);
        for (let i = 0; i < CASES_PER_FIELD; i++) {
          const input = mutate(t, field, r);
          rmSync(snapshots, { recursive: true, force: true });
          mkdirSync(snapshots, { recursive: true });
          const version = typeof input.version === 'string' ? input.version.replace(/^v/, '') : '1.33.7';
          const w = fakeWorld({ ...t.world(input), target: version, snapshots });
          const shownValue = field.includes('.')
            ? (input[field.split('.')[0] as string] as Record<string, unknown>)[field.split('.')[1] as string]
            : field.endsWith('[]')
              ? input[field.slice(0, -2)]
              : input[field];
          const where = `seed ${SEED}, ${t.name} case ${i}: ${field} = ${show(shownValue)}`;
          let error: unknown;
          try {
            await t.run(w.access, input);
          } catch (err) {
            error = err;
          }
          counts.cases++;
          const { execs, kube } = w.calls();
          if (error !== undefined) {
            assert.ok(
              error instanceof ApplicationFailure,
              `${where}: a plain ${(error as Error)?.name ?? typeof error} escaped (${(error as Error)?.message}); hostile input must be a typed failure`,
            );
            if (error.type === 'Invalid' && execs.length === 0 && kube === 0) {
              counts.refused++;
              continue;
            }
          }
          // Accepted (or refused only after reading the host): every command it built must be harmless.
          counts.accepted++;
          for (const c of execs.filter((x) => !['<sftp download>', '<sftp upload>'].includes(x.argv[0] as string))) {
            for (const word of c.argv) {
              assert.ok(harmless(word), `${where}: argv word ${show(word)} in '${c.argv.join(' ')}' is not a validated value`);
              if (word.startsWith('-'))
                assert.ok(PRODUCT_OPTIONS.has(word), `${where}: option ${show(word)} injected into '${c.argv.join(' ')}'`);
            }
            accepted.push(c);
          }
        }
      });
    }
  }

  it('a hostile package repository cannot inject words into apt-get install', async () => {
    const r = mulberry32(SEED ^ 0xa97);
    for (let i = 0; i < CASES_PER_FIELD; i++) {
      const cell = hostileString(r).replace(/[\n|]/g, ' ');
      const snapshots = join(scratch, 'snapshots-madison');
      const w = fakeWorld({
        from: '1.32.4',
        target: '1.33.6',
        clusterAt: '1.32.4',
        snapshots,
        madisonExtra: `   kubeadm | ${cell} | x\n   kubelet | 1.33.7-${cell} | x\n   kubectl | 1.33.7${cell} | x\n`,
      });
      counts.cases++;
      try {
        await installPackages(w.access, { node: 'worker-1', version: '1.33.7', packages: ['kubeadm', 'kubelet', 'kubectl'] });
      } catch (err) {
        assert.ok(err instanceof ApplicationFailure, `seed ${SEED}, madison case ${i}: ${String(err)}`);
      }
      counts.accepted++;
      for (const c of w.calls().execs) {
        for (const word of c.argv)
          assert.ok(
            harmless(word) && (!word.startsWith('-') || PRODUCT_OPTIONS.has(word)),
            `seed ${SEED}, madison case ${i} (${show(cell)}): argv word ${show(word)}`,
          );
        accepted.push(c);
      }
    }
  });

  it('every command an accepted input built reaches a real /bin/sh as exactly its argv', () => {
    assert.ok(accepted.length > 1000, `${accepted.length} commands recorded`);
    // Each distinct command line once: most valid-input cases build the same lines again.
    const runs = [...new Map(accepted.map(asRun).map((x) => [x.line, x])).values()];
    const seen = throughShell(
      runs.map((x) => x.line),
      new Set(['sudo', ...accepted.map((c) => programName(c.argv[0] as string))]),
    );
    assert.equal(seen.length, runs.length, 'one program run per command line');
    runs.forEach((x, i) => assert.deepEqual(seen[i], x.expect, x.line));
    counts.commands = runs.length;
    assert.ok(!existsSync(PWNED), 'no command substitution ever ran');
  });

  it('shell-words: thousands of random argv and env values round-trip through /bin/sh word for word', () => {
    const r = mulberry32(SEED ^ 0x5e11);
    const names = ['apt-get', 'kubeadm', 'etcdctl', 'systemctl', 'sha256sum'];
    const runs: { line: string; expect: string[] }[] = [];
    let refused = 0;
    for (let i = 0; i < 3000; i++) {
      const argv = [names[Math.floor(r() * names.length)] as string];
      for (let n = Math.floor(r() * 6); n > 0; n--) argv.push(hostileString(r));
      const env = r() < 0.4 ? { FUZZ_V: hostileString(r) } : undefined;
      const sudo = r() < 0.5;
      let line: string;
      try {
        line = commandLine(argv, { ...(env ? { env } : {}), sudo });
      } catch (err) {
        // Only what no shell word can carry is refused: NUL anywhere, a newline in an env value, a huge env value.
        const ok = argv.some((w) => w.includes('\0')) || (env !== undefined && (/[\0\n\r]/.test(env.FUZZ_V) || env.FUZZ_V.length > 4096));
        assert.ok(ok && err instanceof TypeError, `seed ${SEED}, case ${i}: refused ${show(argv)} ${show(env)}: ${String(err)}`);
        refused++;
        continue;
      }
      const envWords = env ? [`FUZZ_V=${env.FUZZ_V}`] : [];
      const utf8 = (s: string) => Buffer.from(s, 'utf8').toString('utf8'); // what bytes on a wire can carry
      runs.push({
        line,
        expect: (sudo ? ['sudo', '-n', ...envWords, ...argv, '<unset>'] : [...argv, env ? env.FUZZ_V : '<unset>']).map(utf8),
      });
    }
    const seen = throughShell(
      runs.map((x) => x.line),
      ['sudo', ...names],
    );
    assert.equal(seen.length, runs.length);
    runs.forEach((x, i) => assert.deepEqual(seen[i], x.expect, `seed ${SEED}: ${JSON.stringify(x.line).slice(0, 300)}`));
    assert.ok(refused > 0 && runs.length > 2500, `${runs.length} round trips, ${refused} refused`);
    counts.cases += 3000;
    counts.commands += runs.length;
    assert.ok(!existsSync(PWNED), 'no command substitution ever ran');
  });

  it('the SSH shell refuses a command line it cannot quote as Invalid, before connecting', async () => {
    let resolved = 0;
    const shell = createSshShell(fakeWorld({ from: '1', target: '1', clusterAt: '1', snapshots: scratch }).access.config, async () => {
      resolved++;
      return { host: '127.0.0.1', port: 1 };
    });
    for (const [argv, env] of [[['echo', 'a\0b']], [['echo'], { 'A B': 'x' }], [['echo'], { A: 'x\ny' }], [[]]] as [
      string[],
      Record<string, string>?,
    ][]) {
      const err = await shell.exec('cp-1', argv, { timeoutMs: 1000, ...(env ? { env } : {}) }).then(
        () => undefined,
        (e: unknown) => e,
      );
      assert.ok(err instanceof ApplicationFailure && err.type === 'Invalid', `${show(argv)} ${show(env)}: ${String(err)}`);
    }
    assert.equal(resolved, 0, 'no address resolved, no connection opened');
  });

  it('counts', (t) => {
    t.diagnostic(
      `seed ${SEED}: ${counts.cases} hostile cases, ${counts.refused} refused before any call, ${counts.accepted} accepted; ${counts.commands} command lines round-tripped through /bin/sh`,
    );
    assert.ok(counts.cases >= 8000, `${counts.cases} cases`);
  });
});
