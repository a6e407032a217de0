import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { repoRoot } from '../helpers/run-cli.js';

/**
 * No `StrictHostKeyChecking=no` equivalent anywhere in the product: every SSH connection checks the
 * host key against the cluster's pinned known_hosts (activities/host-known-hosts.ts, no trust on first
 * use), and every TLS connection checks its peer. The sim and the tests are scanned too; the few
 * places there that may skip a check (a test world talking to itself) are listed below, each with
 * why, and a listed place that no longer matches fails too, so the list cannot go stale.
 */

interface Rule {
  name: string;
  test: RegExp;
}

const RULES: Rule[] = [
  { name: 'StrictHostKeyChecking off', test: /StrictHostKeyChecking\s*[= ]\s*["']?(?:no|off|false|accept-new)\b/i },
  { name: 'known_hosts file /dev/null', test: /KnownHostsFile\s*[= ]\s*["']?\/dev\/null/i },
  {
    name: 'hostVerifier that accepts any key',
    test: /hostVerifier\s*[:=]?\s*(?:async\s*)?(?:function\s*)?\([^)]*\)\s*(?:=>\s*(?:true|!0|\(\s*true\s*\)|\{\s*return\s+(?:true|!0)\s*;?\s*\})|\{\s*return\s+(?:true|!0)\b)/,
  },
  { name: 'host keys fetched on first use (ssh-keyscan)', test: /\bssh-keyscan\b/ },
  { name: 'known_hosts written (trust on first use)', test: /(?:append|write)File(?:Sync)?\([^)]*known_?hosts/i },
  { name: 'TLS peer not verified (rejectUnauthorized false)', test: /rejectUnauthorized\s*[:=]\s*(?:false|0|!1)\b/ },
  { name: 'TLS verification off for the process', test: /NODE_TLS_REJECT_UNAUTHORIZED/ },
  { name: 'kubeconfig TLS verification off', test: /insecure-skip-tls-verify\s*:\s*true|skipTLSVerify\s*[:=]\s*true/i },
  { name: 'TLS server identity not checked', test: /checkServerIdentity\s*[:=]\s*(?:\([^)]*\)|\w+)\s*=>\s*(?:undefined|null|void 0)/ },
  { name: 'curl without certificate checks', test: /\bcurl\b[^\n]*\s(?:-[A-Za-z]*k[A-Za-z]*|--insecure)\b/ },
];

/** The product: everything that ships or runs against a real cluster. */
const PRODUCT = [
  'activities',
  'worker',
  'client',
  'workflows',
  'rules',
  'demo',
  'tooling',
  'scripts',
  'bin',
  'examples',
  'docker-compose.yml',
];
/** The test world and the tests: scanned with an explicit allow-list. */
const TEST_WORLD = ['sim', 'test'];
/** This file names every pattern it looks for. */
const SELF = 'test/security/insecure-transport-lint.test.ts';

/** Allowed places outside the product: file, rule, and why it is safe there. */
const ALLOWED: { file: string; rule: string; why: string }[] = [
  {
    file: 'sim/cluster/control-plane.ts',
    rule: 'TLS peer not verified (rejectUnauthorized false)',
    why: 'the sim polls its own controller-manager and scheduler /healthz on loopback, served with self-signed certificates',
  },
  {
    file: 'sim/cluster/node-components.ts',
    rule: 'TLS peer not verified (rejectUnauthorized false)',
    why: 'the sim polls its own per-host controller-managers and schedulers (/healthz, /metrics) on loopback, served with self-signed certificates',
  },
  {
    file: 'test/sim/hosts/host-keys.test.ts',
    rule: 'hostVerifier that accepts any key',
    why: 'the test proves the sim host rejects a client key it does not authorize, whatever the host key',
  },
  {
    file: 'test/sim/hosts/host-keys.test.ts',
    rule: 'known_hosts file /dev/null',
    why: 'GlobalKnownHostsFile=/dev/null beside a pinned UserKnownHostsFile and StrictHostKeyChecking=yes: only the pinned file counts',
  },
  {
    file: 'test/sim/hosts/host-keys.test.ts',
    rule: 'known_hosts written (trust on first use)',
    why: "the test swaps two hosts' lines in the sim's known_hosts to prove the mismatch is refused",
  },
  {
    file: 'test/activities/health.test.ts',
    rule: 'kubeconfig TLS verification off',
    why: 'a kubeconfig for a fake plain-HTTP apiserver on loopback in a unit test',
  },
  {
    file: 'test/activities/watch-waits.test.ts',
    rule: 'kubeconfig TLS verification off',
    why: 'a kubeconfig for a plain-HTTP server on loopback answering as an API server does (the client refuses http:// without it)',
  },
  {
    file: 'test/deploy/compose.test.ts',
    rule: 'known_hosts written (trust on first use)',
    why: "a stand-in known_hosts in a temporary copy of the worker container's files, so the worker's start-up check can read the example cluster configuration; nothing connects",
  },
];

const SOURCE = /\.(?:ts|js|mjs|cjs|sh|ya?ml|json|conf)$/;

function* files(path: string): Generator<string> {
  const full = join(repoRoot, path);
  if (statSync(full).isFile()) {
    yield path;
    return;
  }
  for (const name of readdirSync(full)) {
    if (name === 'node_modules' || name.startsWith('.')) continue;
    const child = join(path, name);
    if (statSync(join(repoRoot, child)).isDirectory()) yield* files(child);
    else if (SOURCE.test(name)) yield child;
  }
}

/** Every rule a text breaks, plus the ssh2 client that never checks host keys at all. */
function violations(text: string): string[] {
  const out = RULES.filter((r) => r.test.test(text)).map((r) => r.name);
  // ssh2's Client accepts any host key unless a hostVerifier is given.
  if (/from ['"]ssh2['"]/.test(text) && /\.connect\(/.test(text) && !/hostVerifier/.test(text))
    out.push('ssh2 client without hostVerifier');
  return out;
}

describe('no StrictHostKeyChecking=no equivalent anywhere', () => {
  it('the product checks every host key and every TLS peer', () => {
    const found: string[] = [];
    let scanned = 0;
    for (const root of PRODUCT) {
      for (const file of files(root)) {
        scanned++;
        for (const v of violations(readFileSync(join(repoRoot, file), 'utf8'))) found.push(`${file}: ${v}`);
      }
    }
    assert.deepEqual(found, []);
    assert.ok(scanned > 80, `${scanned} product files scanned`);
  });

  it("the product's SSH client pins host keys: a hostVerifier that asks known_hosts, no trust on first use", () => {
    const shell = readFileSync(join(repoRoot, 'activities/ssh-shell.ts'), 'utf8');
    assert.match(
      shell,
      /hostVerifier: \(key: Buffer\) => \{\s*if \(keyAccepted\(policy, key\)\) return true;\s*seen = fingerprint\(key\);\s*return false;/,
    );
    assert.match(readFileSync(join(repoRoot, 'activities/host-known-hosts.ts'), 'utf8'), /There is no trust on first use/);
  });

  it('the sim and the tests skip a check only where listed, and every listed place still does', () => {
    const found = new Set<string>();
    for (const root of TEST_WORLD) {
      for (const file of files(root)) {
        if (file === SELF) continue;
        for (const v of violations(readFileSync(join(repoRoot, file), 'utf8'))) found.add(`${file}: ${v}`);
      }
    }
    const allowed = new Set(ALLOWED.map((a) => `${a.file}: ${a.rule}`));
    assert.deepEqual(
      [...found].filter((f) => !allowed.has(f)),
      [],
      'not allowed',
    );
    assert.deepEqual(
      [...allowed].filter((a) => !found.has(a)),
      [],
      'allowed but no longer there: remove from ALLOWED',
    );
  });

  it('each rule catches what it is for, and passes the strict form', () => {
    const cases: [string, string | undefined][] = [
      [`spawn('ssh', ['-o', 'StrictHostKeyChecking=no', host])`, 'StrictHostKeyChecking off'],
      ['ssh -o StrictHostKeyChecking=accept-new cp-1', 'StrictHostKeyChecking off'],
      ['-o "StrictHostKeyChecking no"', 'StrictHostKeyChecking off'],
      [`['-o', 'StrictHostKeyChecking=yes', '-o', 'UserKnownHostsFile=/etc/skewless/known_hosts']`, undefined],
      ['-o UserKnownHostsFile=/dev/null', 'known_hosts file /dev/null'],
      ['client.connect({ host, hostVerifier: () => true })', 'hostVerifier that accepts any key'],
      ['{ hostVerifier: (_key) => { return true; } }', 'hostVerifier that accepts any key'],
      ['{ hostVerifier: function (k) { return true } }', 'hostVerifier that accepts any key'],
      ['{ hostVerifier: async (k: Buffer) => true }', 'hostVerifier that accepts any key'],
      ['{ hostVerifier: (key) => keyAccepted(policy, key) }', undefined],
      ['execFile("ssh-keyscan", ["-p", port, host])', 'host keys fetched on first use (ssh-keyscan)'],
      ['appendFileSync(config.ssh.knownHostsPath, line)', 'known_hosts written (trust on first use)'],
      ['new https.Agent({ rejectUnauthorized: false })', 'TLS peer not verified (rejectUnauthorized false)'],
      ['tls.connect({ rejectUnauthorized: true, ca })', undefined],
      ['process.env.NODE_TLS_REJECT_UNAUTHORIZED = "0"', 'TLS verification off for the process'],
      ['cluster: {server: x, insecure-skip-tls-verify: true}', 'kubeconfig TLS verification off'],
      ['kc.clusters[0].skipTLSVerify = true', 'kubeconfig TLS verification off'],
      ['{ checkServerIdentity: () => undefined }', 'TLS server identity not checked'],
      ['curl -fsSk https://cp-1:6443/readyz', 'curl without certificate checks'],
      ['curl -fsSL --cacert /etc/kubernetes/pki/ca.crt https://cp-1:6443/readyz', undefined],
      ['curl --insecure https://cp-1:6443/readyz', 'curl without certificate checks'],
      ["import { Client } from 'ssh2';\nnew Client().connect({ host, privateKey })", 'ssh2 client without hostVerifier'],
    ];
    for (const [text, rule] of cases) {
      const v = violations(text);
      if (rule) assert.ok(v.includes(rule), `${JSON.stringify(text)} should break "${rule}", got ${JSON.stringify(v)}`);
      else assert.deepEqual(v, [], JSON.stringify(text));
    }
  });
});
