// The operator guides stay true to the code: every `skewless COMMAND --flag` they show is a command
// the CLI has and a flag its help lists, and docs/real-cluster.md describes every key the cluster
// configuration's loader knows (asked of the loader itself, through its unknown-key errors).
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { parseClusterConfig } from '../../activities/cluster-config.js';
import { main } from '../../client/cli.js';
import { repoRoot } from './compose-file.js';

const FILES = [
  'README.md',
  ...readdirSync(join(repoRoot, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .map((f) => `docs/${f}`),
];

/** The CLI reference, whose "Policy flags:" line says what `[policy]` stands for. */
const POLICY_FLAGS_PAGE = 'docs/cli.md';

const SHELL_BLOCKS = ['', 'sh', 'bash', 'shell', 'console', 'zsh'];

interface Shown {
  file: string;
  line: number;
  text: string;
}

/** `skewless …` command lines: in fenced blocks (continuations joined, `$ ` and VAR=value prefixes off) and in inline code. */
export function skewlessCommands(file: string, markdown: string): Shown[] {
  const out: Shown[] = [];
  const lines = markdown.split('\n');
  let fence: string | undefined; // the open block's language; undefined outside a block
  for (let i = 0; i < lines.length; i++) {
    const raw = lines[i]!;
    const opening = /^\s*```\s*(\S*)/.exec(raw);
    if (opening) {
      fence = fence === undefined ? opening[1]! : undefined;
      continue;
    }
    if (fence !== undefined) {
      if (!SHELL_BLOCKS.includes(fence)) continue; // a sudoers file, YAML: not commands
      let text = raw;
      const start = i;
      while (text.endsWith('\\') && i + 1 < lines.length) text = `${text.slice(0, -1)} ${lines[++i]!.trim()}`;
      text = text
        .trim()
        .replace(/\s+/g, ' ')
        .replace(/^\$ /, '')
        .replace(/^(?:[A-Za-z_][A-Za-z0-9_]*=\S* )+/, '');
      if (/^skewless /.test(text)) out.push({ file, line: start + 1, text });
      continue;
    }
    for (const m of raw.matchAll(/`(skewless\s[^`]+)`/g)) {
      // A table cell's alternatives, `skewless pause\|resume\|abort NAME`: each one.
      const [head = '', ...rest] = m[1]!.replace(/\s+/g, ' ').split(' ').slice(1);
      for (const alt of head.split(/\\?\|/)) out.push({ file, line: i + 1, text: ['skewless', alt, ...rest].join(' ') });
    }
  }
  return out;
}

/**
 * The flags a guide's `[policy]` placeholder stands for: docs/cli.md's "Policy flags:" line. A command
 * shown with `[policy]` (or `[policy as upgrade]`) must take each of them, or the line lies.
 */
export function policyFlags(readme: string): string[] {
  const line = /^Policy flags: (.*)$/m.exec(readme)?.[1] ?? '';
  return [...line.matchAll(/(--[a-z][a-z0-9-]*)/g)].map((m) => m[1]!);
}

/** The flags a shown command line names, with its `[policy]` placeholder expanded. */
export function flagsShown(text: string, policy: readonly string[]): string[] {
  const words = text.split(/\s+/);
  const end = words.findIndex((w, i) => i > 0 && /^(#|\||>|>>|&&|;|2>)/.test(w));
  const flags = words.slice(2, end < 0 ? undefined : end).flatMap((w) => /^[[(]*(--[a-z][a-z0-9-]*)/.exec(w)?.[1] ?? []); // `[--detach]`: optional flags too
  return /\[policy(\]| as upgrade\])/.test(text) ? [...flags, ...policy] : flags;
}

/** The commands a page's table does not name: a row names one as `skewless NAME` or, after the first, as `NAME`. */
export function unlisted(commands: readonly string[], markdown: string): string[] {
  const rows = markdown.split('\n').filter((l) => l.startsWith('| `skewless '));
  return commands.filter((c) => !rows.some((r) => r.includes(`\`skewless ${c}\``) || r.includes(`, \`${c}\``)));
}

async function helpOf(args: string[]): Promise<{ code: number; text: string }> {
  let text = '';
  const io = {
    out: (t: string) => {
      text += `${t}\n`;
    },
    err: (t: string) => {
      text += `${t}\n`;
    },
  };
  const code = await main(args, io);
  return { code, text };
}

describe("the guides' skewless commands exist, with the flags they show", () => {
  it('checks every command line of the guides', async () => {
    const commandList = (await helpOf(['--help'])).text;
    const commands = new Set([...commandList.matchAll(/^ {2}([a-z][a-z-]*)\s{2,}/gm)].map((m) => m[1]!));
    assert.ok(
      commands.has('upgrade') && commands.has('plan') && commands.has('worker'),
      `commands read from the help: ${[...commands].join(', ')}`,
    );
    const helps = new Map<string, string>();
    const shown = FILES.flatMap((f) => skewlessCommands(f, readFileSync(join(repoRoot, f), 'utf8')));
    const policy = policyFlags(readFileSync(join(repoRoot, POLICY_FLAGS_PAGE), 'utf8'));
    assert.ok(policy.length >= 3, `${POLICY_FLAGS_PAGE}'s "Policy flags:" line names ${policy.join(' ') || 'nothing'}`);
    assert.ok(shown.length >= 20, `only ${shown.length} skewless commands found in ${FILES.join(', ')}`);
    const problems: string[] = [];
    for (const s of shown) {
      const command = s.text.split(/\s+/)[1]!;
      const where = `${s.file}:${s.line} \`${s.text}\``;
      if (command.startsWith('-')) {
        if (!['--help', '-h'].includes(command)) problems.push(`${where}: skewless ${command}?`);
        continue;
      }
      if (!commands.has(command)) {
        problems.push(`${where}: no command "${command}"`);
        continue;
      }
      if (!helps.has(command)) {
        const h = await helpOf([command, '--help']);
        assert.equal(h.code, 0, `skewless ${command} --help exits ${h.code}`);
        helps.set(command, h.text);
      }
      const help = helps.get(command)!;
      for (const flag of flagsShown(s.text, policy)) {
        if (flag !== '--help' && !new RegExp(`(^|[\\s\\[(,])${flag}(?![a-z0-9-])`, 'm').test(help))
          problems.push(`${where}: skewless ${command} has no ${flag}`);
      }
    }
    assert.deepEqual(problems, []);
  });

  it("the README names every command of the CLI's help, one line each", async () => {
    const commandList = (await helpOf(['--help'])).text;
    const commands = [...commandList.matchAll(/^ {2}([a-z][a-z-]*)\s{2,}/gm)].map((m) => m[1]!);
    const readme = readFileSync(join(repoRoot, 'README.md'), 'utf8');
    assert.ok(commands.length >= 15, `commands read from the help: ${commands.join(', ')}`);
    assert.deepEqual(unlisted(commands, readme), []);
    assert.deepEqual(unlisted(['upgrade', 'resume'], '| `skewless upgrade` | … |\n'), ['resume'], 'the check can fail');
  });

  it("starts services with the project's own bin after the build, never through npx (npm exec keeps their SIGTERM)", () => {
    // The demo's closing line too: it tells how to serve the run's history again.
    for (const file of [...FILES, 'demo/run-demo.ts']) {
      const text = readFileSync(join(repoRoot, file), 'utf8');
      assert.doesNotMatch(text, /npx skewless (worker|dev-server)\b/, `${file} starts a service through npx`);
    }
    const readme = readFileSync(join(repoRoot, 'README.md'), 'utf8');
    assert.match(readme, /`npm ci` compiles the CLI \(its `prepare` script: about 90 s, silent\); then `node bin\/skewless\.js --help`/);
    assert.ok(readme.split('\n').length <= 150, 'the README stays short');
  });

  it('finds a wrong flag (the check can fail)', async () => {
    const shown = skewlessCommands(
      'x.md',
      'text `skewless plan --cluster prod --to 1.33`\n```sh\nskewless upgrade --cluster a \\\n  --to 1.33 --no-such-flag\n```\n',
    );
    assert.deepEqual(
      shown.map((s) => s.text),
      ['skewless plan --cluster prod --to 1.33', 'skewless upgrade --cluster a --to 1.33 --no-such-flag'],
    );
    const help = (await helpOf(['upgrade', '--help'])).text;
    assert.match(help, /--cluster/);
    assert.doesNotMatch(help, /--no-such-flag/);
  });

  it("expands a [policy] placeholder to the CLI reference's policy flags (the check can fail on them)", () => {
    const policy = policyFlags('intro\nPolicy flags: `--canary N --first-control-plane NODE`.\n');
    assert.deepEqual(policy, ['--canary', '--first-control-plane']);
    assert.deepEqual(flagsShown('skewless upgrade --cluster NAME --to V [policy] [--detach]', policy), [
      '--cluster',
      '--to',
      '--detach',
      '--canary',
      '--first-control-plane',
    ]);
    assert.deepEqual(flagsShown('skewless rehearse --cluster NAME [policy as upgrade]', policy), [
      '--cluster',
      '--canary',
      '--first-control-plane',
    ]);
    assert.deepEqual(flagsShown('skewless status NAME | less --policy', policy), []);
  });
});

describe('docs/real-cluster.md describes every key of the cluster configuration', () => {
  /** The keys the loader knows in one mapping, from its own "unknown key … (known: …)" error. */
  function knownKeys(yamlWithUnknownKey: string): string[] {
    try {
      parseClusterConfig(yamlWithUnknownKey, 'probe.yaml');
    } catch (err) {
      const m = /\((?:known: )?([A-Za-z, ]+)\)\s*$/.exec((err as Error).message);
      assert.ok(m, `no list of known keys in: ${(err as Error).message}`);
      return m[1]!.split(/,\s*/);
    }
    assert.fail('the loader accepted an unknown key');
  }

  it('names each key the loader accepts, in every section', () => {
    const doc = readFileSync(join(repoRoot, 'docs/real-cluster.md'), 'utf8');
    const base = 'name: probe\nkubeconfig: /k\nssh: {user: u, privateKeyPath: /p, knownHostsPath: /h}\nsnapshots: {dir: /s}\n';
    const sections: [string, string, (k: string) => string[]][] = [
      ['top level', `${base}zzz: 1\n`, (k) => [`\`${k}\``, `\`${k}.`, `\`${k}[`]],
      ['ssh', base.replace('ssh: {', 'ssh: {zzz: 1, '), (k) => [`\`ssh.${k}\``]],
      ['nodes', `${base}nodes: {n1: {zzz: 1}}\n`, (k) => [`\`nodes.<node>.${k}\``]],
      ['etcd', `${base}etcd: {zzz: 1}\n`, (k) => [`\`etcd.${k}\``]],
      ['snapshots', base.replace('snapshots: {', 'snapshots: {zzz: 1, '), (k) => [`\`snapshots.${k}\``]],
      ['drain', `${base}drain: {zzz: 1}\n`, (k) => [`\`drain.${k}\``]],
      ['probes', `${base}probes: [{zzz: 1}]\n`, (k) => [`\`probes[].${k}\``]],
      ['timeouts', `${base}timeouts: {zzz: 1}\n`, (k) => [`\`timeouts.${k}\``]],
      ['maintenance', `${base}maintenance: {zzz: 1}\n`, (k) => [`\`maintenance.${k}\``]],
      ['pools', `${base}pools: {p: {zzz: 1}}\n`, (k) => [`\`pools.<pool>.${k}\``]],
      ['provisioning', `${base}provisioning: {zzz: 1}\n`, (k) => [`\`provisioning.${k}\``]],
      ['alerts', `${base}alerts: {zzz: 1}\n`, (k) => [`\`alerts.${k}\``]],
      ['drainRules', `${base}drainRules: [{zzz: 1}]\n`, (k) => [`\`drainRules[].${k}\``]],
      ['nodeHealth', `${base}nodeHealth: {zzz: 1}\n`, (k) => [`\`nodeHealth.${k}\``]],
      ['addons', `${base}addons: {zzz: 1}\n`, (k) => [`\`addons.${k}\``]],
    ];
    const missing: string[] = [];
    for (const [section, yaml, spellings] of sections) {
      const keys = knownKeys(yaml);
      assert.ok(keys.length >= 1, `${section}: no keys`);
      for (const k of keys) if (!spellings(k).some((s) => doc.includes(s))) missing.push(`${section}: ${spellings(k)[0]}`);
    }
    assert.deepEqual(missing, []);
  });
});
