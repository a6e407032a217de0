import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { runCli, writeFiles } from '../helpers/run-cli.js';

/**
 * `skewless fleet`: what was typed and the whole fleet file are judged before Temporal is contacted.
 * Every run points at an address where no Temporal listens: a refusal of the input is exit 2 with one
 * line, and only input that passes every check gets as far as exit 3 (unreachable), so nothing starts.
 */
const NOWHERE = ['--address', '127.0.0.1:1'];
const GOOD = `name: prod
maxParallel: 2
defaults: {to: latest-patch}
stages:
  - name: admin
    clusters: [{name: admin, to: "1.34", approve: true}]
  - name: users
    clusters: [user-a, {name: user-b, policy: {batchSize: 2}}]
`;

const oneLine = (r: { code: number | null; stdout: string; stderr: string }, code: number, message: RegExp) => {
  assert.equal(r.code, code, r.stdout + r.stderr);
  assert.equal(r.stdout, '');
  assert.equal(r.stderr.trim().split('\n').length, 1, r.stderr);
  assert.match(r.stderr, /^skewless: /);
  assert.match(r.stderr, message);
};

describe('skewless fleet: input checks before Temporal', () => {
  it('--help names every subcommand and the file format', () => {
    const r = runCli(['fleet', '--help']);
    assert.equal(r.code, 0);
    for (const word of ['fleet start FILE', 'status|watch NAME', '--action retry|skip', 'maxParallel', 'stages:', '--output json|text'])
      assert.ok(r.stdout.includes(word), word);
  });

  it('a good file passes every check and only then meets the unreachable server (exit 3)', () => {
    const f = writeFiles({ 'fleet.yaml': GOOD });
    const r = runCli(['fleet', 'start', f['fleet.yaml'] as string, ...NOWHERE]);
    oneLine(r, 3, /cannot reach Temporal at 127\.0\.0\.1:1/);
  });

  const bad: [string, () => string[], RegExp][] = [
    ['no subcommand', () => [], /a subcommand is required: start, status/],
    ['an unknown subcommand', () => ['upgrade', 'prod'], /unknown subcommand "upgrade"/],
    ['start without a file', () => ['start'], /FILE \(the fleet file\) is required/],
    ['a file that does not exist', () => ['start', '/nonexistent/fleet.yaml'], /cannot read fleet file \/nonexistent\/fleet\.yaml: ENOENT/],
    ['a file that is not YAML', () => ['start', writeFiles({ f: 'stages: [a, b\n  name: {' }).f as string], /is not valid YAML: /],
    [
      'a key given twice',
      () => ['start', writeFiles({ f: 'name: a\nname: b\nstages: []\n' }).f as string],
      /is not valid YAML: .*[Mm]ap keys must be unique/,
    ],
    [
      'a bad target in the file',
      () => ['start', writeFiles({ f: GOOD.replace('"1.34"', 'next-major') }).f as string],
      /stages\[0\]\.clusters\[0\]\.to: invalid target "next-major"/,
    ],
    [
      'a policy typo in the file',
      () => ['start', writeFiles({ f: GOOD.replace('batchSize', 'batch-size') }).f as string],
      /stages\[1\]\.clusters\[1\]\.policy: unknown key "batch-size"/,
    ],
    [
      'a cluster twice',
      () => ['start', writeFiles({ f: GOOD.replace('user-a,', 'admin,') }).f as string],
      /cluster admin is already listed/,
    ],
    [
      'start with --cluster',
      () => ['start', writeFiles({ f: GOOD }).f as string, '--cluster', 'x'],
      /--cluster does not go with fleet start/,
    ],
    ['status without NAME', () => ['status'], /NAME \(the fleet\) is required/],
    ['a bad fleet NAME', () => ['status', 'Prod/1'], /invalid fleet name "Prod\/1"/],
    ['two names', () => ['status', 'a', 'b'], /unexpected argument "b"/],
    ['resolve without --cluster', () => ['resolve', 'prod', '--action', 'retry'], /--cluster \(the cluster\) is required/],
    ['resolve without --action', () => ['resolve', 'prod', '--cluster', 'a'], /--action is required/],
    [
      'resolve with a node action',
      () => ['resolve', 'prod', '--cluster', 'a', '--action', 'force'],
      /--action must be retry or skip, got "force" \(a blocked node is answered with "skewless resolve a"\)/,
    ],
    ['approve with a bad cluster', () => ['approve', 'prod', '--cluster', 'A_B'], /invalid cluster name "A_B"/],
    ['approve with --action', () => ['approve', 'prod', '--cluster', 'a', '--action', 'skip'], /--action does not go with fleet approve/],
    ['pause with --detach', () => ['pause', 'prod', '--detach'], /--detach does not go with fleet pause/],
    ['a bad --output', () => ['status', 'prod', '--output', 'yaml'], /--output must be "json" or "text", got "yaml"/],
  ];
  for (const [name, args, message] of bad) {
    it(`exit 2, one line: ${name}`, () => oneLine(runCli(['fleet', ...args(), ...NOWHERE]), 2, message));
  }
});
