// ARCHITECTURE.md stays true to the tree: every file or folder it names exists, and it names every source
// file, so a newcomer who reads a folder's section finds every file there and nothing that is gone.
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { repoRoot } from '../helpers/run-cli.js';

/** Folders whose every file must be named itself: the product and what ships or runs beside it. */
const FILE_BY_FILE = ['contracts', 'tooling', 'rules', 'activities', 'workflows', 'worker', 'client', 'stack', 'scripts'];
const ALSO_FILE_BY_FILE = ['bin', 'demo', 'bench', 'deploy', 'examples'];
/** Folders where naming a subfolder covers its files (the test world, the tests, the guides' assets). */
const BY_FOLDER = ['sim', 'test', 'docs'];
/** Not in the repository: build output, state, and git-ignored results. */
const IGNORED = ['bench/results'];

const PATH_TOKEN = /^[A-Za-z0-9_.\-/]+$/;
const FILE_EXTENSION = /\.(ts|js|sh|json|ya?ml|md|go|example|service|tpl|txt)$/;
const NOT_IN_THE_TREE = ['dist/', '.skewless/', 'test-output/', '~', '/'];

export interface Named {
  line: number;
  token: string;
  /** The repository paths the token may mean, tried in order (a folder's section, its bullet's folder, the root). */
  candidates: string[];
}

/**
 * The paths a page names in inline code, each with the places it may mean: under `### \`dir/\`` a name is
 * relative to that folder, and within a bullet that starts with a folder (`- \`commands/\`: …`) relative to that
 * one too. A folder (`x/`) counts only where it starts a bullet, since elsewhere `fleet/` is a workflow id prefix.
 */
export function namedPaths(markdown: string): Named[] {
  const out: Named[] = [];
  let section = '';
  let bullet = '';
  let fenced = false;
  const lines = markdown.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const raw = lines[i]!;
    if (/^\s*```/.test(raw)) {
      fenced = !fenced;
      continue;
    }
    if (fenced) continue;
    const heading = /^(#+)\s+(.*)$/.exec(raw);
    if (heading) {
      section = heading[1] === '###' ? (/^`([^`]+\/)`$/.exec(heading[2]!.trim())?.[1] ?? '') : '';
      bullet = '';
      continue;
    }
    const startsBullet = /^- /.test(raw);
    if (startsBullet) bullet = /^- `([^`]+\/)`/.exec(raw)?.[1] ?? '';
    else if (!/^\s+\S/.test(raw)) bullet = ''; // a bullet's continuation is indented
    for (const m of raw.matchAll(/`([^`]+)`/g)) {
      const token = m[1]!;
      if (!PATH_TOKEN.test(token) || NOT_IN_THE_TREE.some((p) => token.startsWith(p))) continue;
      const isFolder = token.endsWith('/');
      if (isFolder ? !(startsBullet && m.index === 2) : !FILE_EXTENSION.test(token)) continue;
      const bases = new Set([...(section && bullet && !isFolder ? [section + bullet] : []), ...(section ? [section] : []), '']);
      out.push({ line: i + 1, token, candidates: [...bases].map((base) => base + token) });
    }
  }
  return out;
}

function filesUnder(dir: string): string[] {
  if (IGNORED.includes(dir)) return [];
  return readdirSync(join(repoRoot, dir)).flatMap((name) => {
    const path = `${dir}/${name}`;
    return statSync(join(repoRoot, path)).isDirectory() ? filesUnder(path) : [path];
  });
}

/** The source files the page must name, and whether naming one of its folders is enough. */
function filesToName(): { path: string; byFolder: boolean }[] {
  return [
    ...[...FILE_BY_FILE, ...ALSO_FILE_BY_FILE].flatMap((d) => filesUnder(d).map((path) => ({ path, byFolder: false }))),
    ...BY_FOLDER.flatMap((d) => filesUnder(d).map((path) => ({ path, byFolder: true }))),
  ];
}

/** A file is named by its own path or, where folders suffice, by a folder below the top one. */
export function unnamed(files: { path: string; byFolder: boolean }[], named: ReadonlySet<string>): string[] {
  return files
    .filter(({ path, byFolder }) => {
      if (named.has(path)) return false;
      if (!byFolder) return true;
      const parts = path.split('/');
      for (let n = 2; n < parts.length; n++) if (named.has(`${parts.slice(0, n).join('/')}/`)) return false;
      return true;
    })
    .map((f) => f.path);
}

describe('ARCHITECTURE.md names the tree as it is', () => {
  const page = readFileSync(join(repoRoot, 'ARCHITECTURE.md'), 'utf8');
  const named = namedPaths(page);
  const resolved = new Set<string>();
  const missing: string[] = [];
  for (const n of named) {
    const found = n.candidates.find((c) => existsSync(join(repoRoot, c)));
    if (found) resolved.add(found.endsWith('/') || !statSync(join(repoRoot, found)).isDirectory() ? found : `${found}/`);
    else missing.push(`ARCHITECTURE.md:${n.line} \`${n.token}\` (tried ${n.candidates.join(', ')})`);
  }

  it('every path it names exists', () => {
    assert.ok(named.length >= 200, `only ${named.length} paths found in ARCHITECTURE.md`);
    assert.deepEqual(missing, []);
  });

  it('names every source file, each in its folder section', () => {
    assert.deepEqual(unnamed(filesToName(), resolved), []);
  });

  it('reads names relative to their section and bullet, and can fail both ways', () => {
    const md = [
      '## Flow',
      'see `rules/policy.ts` and `fleet/` ids',
      '### `client/`',
      '- `cli.ts`: the table',
      '- `commands/`: `plan.ts`, `watch.ts`,',
      '  `upgrade.ts`',
      '- `gone.ts`: not there',
      '```sh',
      'skewless `x.ts`',
      '```',
    ].join('\n');
    const got = namedPaths(md).map((n) => `${n.token}→${n.candidates[0]}`);
    assert.deepEqual(got, [
      'rules/policy.ts→rules/policy.ts',
      'cli.ts→client/cli.ts',
      'commands/→client/commands/',
      'plan.ts→client/commands/plan.ts',
      'watch.ts→client/commands/watch.ts',
      'upgrade.ts→client/commands/upgrade.ts',
      'gone.ts→client/gone.ts',
    ]);
    const names = new Set(['rules/policy.ts', 'sim/hosts/commands/']);
    assert.deepEqual(
      unnamed(
        [
          { path: 'rules/policy.ts', byFolder: false },
          { path: 'rules/version.ts', byFolder: false },
          { path: 'sim/hosts/commands/sed.ts', byFolder: true },
          { path: 'sim/simulation.ts', byFolder: true },
        ],
        names,
      ),
      ['rules/version.ts', 'sim/simulation.ts'],
    );
  });
});
