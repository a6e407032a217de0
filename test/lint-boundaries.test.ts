import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, it } from 'node:test';
import { ESLint } from 'eslint';
import ts from 'typescript';
import { repoRoot } from './helpers/run-cli.js';

/**
 * No import cycles anywhere in the repository (eslint-plugin-import is not a dependency): the graph of
 * every .ts file's relative imports, `import type` and re-exports included, read with the TypeScript
 * compiler's own pre-processor; a cycle fails the test named file by file.
 */
type Graph = Map<string, string[]>;

function tsFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    if (name.startsWith('.') || ['node_modules', 'dist', 'test-output'].includes(name)) return [];
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return tsFiles(path);
    return name.endsWith('.ts') && !name.endsWith('.d.ts') ? [path] : [];
  });
}

/** `from` → the repository files it imports, as paths relative to `root`. */
export function importGraph(root: string, files: readonly string[] = tsFiles(root)): Graph {
  const graph: Graph = new Map();
  for (const file of files) {
    const { importedFiles } = ts.preProcessFile(readFileSync(file, 'utf8'), true, true);
    const deps = importedFiles
      .map((r) => r.fileName)
      .filter((name) => name.startsWith('.'))
      .map((name) => resolve(dirname(file), name.replace(/\.js$/, '.ts')))
      .filter((path) => existsSync(path))
      .map((path) => relative(root, path));
    graph.set(relative(root, file), [...new Set(deps)]);
  }
  return graph;
}

/** Every cycle as the strongly connected components of more than one file (or a file importing itself), each as a path a → b → … → a. */
export function importCycles(graph: Graph): string[][] {
  let next = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const components: string[][] = [];
  const visit = (v: string) => {
    index.set(v, next);
    low.set(v, next++);
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) !== index.get(v)) return;
    const component: string[] = [];
    let w: string;
    do {
      w = stack.pop()!;
      onStack.delete(w);
      component.push(w);
    } while (w !== v);
    if (component.length > 1 || (graph.get(v) ?? []).includes(v)) components.push(component);
  };
  for (const v of [...graph.keys()].sort()) if (!index.has(v)) visit(v);
  // One concrete cycle per component, to name in the failure: from its first file back to it.
  return components.map((component) => {
    const inside = new Set(component);
    const start = [...component].sort()[0]!;
    const path = [start];
    const seen = new Set([start]);
    const walk = (v: string): boolean => {
      for (const w of graph.get(v) ?? []) {
        if (w === start) return path.push(start) > 0;
        if (!inside.has(w) || seen.has(w)) continue;
        seen.add(w);
        path.push(w);
        if (walk(w)) return true;
        path.pop();
      }
      return false;
    };
    walk(start);
    return path;
  });
}

describe('import cycles', () => {
  it('the repository has none', () => {
    const graph = importGraph(repoRoot);
    assert.ok(graph.size > 300, `read the repository's files (${graph.size})`);
    assert.ok((graph.get('activities/host-address.ts') ?? []).includes('activities/ssh-shell.ts'), 'the graph follows relative imports');
    assert.deepEqual(
      importCycles(graph).map((c) => c.join(' → ')),
      [],
    );
  });

  it('no product file reaches sim/, demo/, bench/, stack/ or test/, through a dynamic import() either (which the lint does not see)', () => {
    const product = /^(activities|client|worker|rules|workflows|contracts)\//;
    const testWorld = /^(sim|demo|bench|stack|test)\//;
    const reaches = [...importGraph(repoRoot)].flatMap(([from, deps]) =>
      deps
        .filter((to) => (product.test(from) && testWorld.test(to)) || (/^stack\//.test(from) && /^(sim|demo|bench|test)\//.test(to)))
        .filter((to) => !(from === 'client/rehearse/twin.ts' && to.startsWith('sim/')))
        .map((to) => `${from} → ${to}`),
    );
    assert.deepEqual(reaches, []);
  });

  it('finds a cycle, through `import type` and re-exports too, and names it', () => {
    const graph: Graph = new Map([
      ['a.ts', ['b.ts']],
      ['b.ts', ['c.ts']],
      ['c.ts', ['a.ts', 'd.ts']],
      ['d.ts', []],
      ['self.ts', ['self.ts']],
    ]);
    assert.deepEqual(importCycles(graph), [
      ['a.ts', 'b.ts', 'c.ts', 'a.ts'],
      ['self.ts', 'self.ts'],
    ]);
    assert.deepEqual(
      importCycles(
        new Map([
          ['a.ts', ['b.ts']],
          ['b.ts', []],
        ]),
      ),
      [],
    );
  });

  it('reads type imports, re-exports and dynamic imports as edges', () => {
    const dir = join(repoRoot, 'activities');
    const files = ['host-address.ts', 'ssh-shell.ts'].map((f) => join(dir, f));
    const text = (code: string) => ts.preProcessFile(code, true, true).importedFiles.map((r) => r.fileName);
    assert.deepEqual(text("import type { A } from './a.js';\nexport { b } from './b.js';\nconst c = import('./c.js');\n"), [
      './a.js',
      './b.js',
      './c.js',
    ]);
    assert.deepEqual(importGraph(repoRoot, files).get('activities/ssh-shell.ts')?.includes('activities/host-address.ts'), false);
  });
});

/**
 * Each boundary of ARCHITECTURE.md's table as the lint enforces it: an import it is there to ban, linted
 * as if written in that layer, is reported by no-restricted-imports; the imports the table allows are not.
 */
describe('layer boundaries (eslint.config.js)', () => {
  const eslint = new ESLint({ cwd: repoRoot });
  const lintAs = async (path: string, code: string) => {
    const [result] = await eslint.lintText(code, { filePath: join(repoRoot, path) });
    return (result?.messages ?? []).map((m) => `${m.ruleId}: ${m.message}`);
  };
  const use = (what: string, from: string, typeOnly = false) =>
    typeOnly
      ? `import type { ${what} } from '${from}';\nexport type X = ${what};\n`
      : `import { ${what} } from '${from}';\nexport const x = ${what};\n`;

  const banned: [string, string, string][] = [
    // product ↛ the test world, the demo, the benchmark, the stack, the tests
    ...['activities/x.ts', 'client/x.ts', 'client/commands/x.ts', 'worker/x.ts', 'rules/x.ts', 'workflows/x.ts'].flatMap((file) => {
      const up = file.split('/').length === 3 ? '../../' : '../';
      return [
        [file, use('simulate', `${up}sim/simulation.js`), 'sim/'],
        [file, use('SimDescription', `${up}sim/description.js`, true), 'sim/'],
        [file, use('runDemo', `${up}demo/run-demo.js`), 'sim/'],
        [file, use('runBench', `${up}bench/run.js`), 'sim/'],
        [file, use('stackUp', `${up}stack/stack.js`), 'sim/'],
        [file, use('repoRoot', `${up}test/helpers/run-cli.js`), 'sim/'],
      ] as [string, string, string][];
    }),
    ['contracts/x.ts', use('simulate', '../sim/simulation.js'), 'contracts/'],
    ['stack/x.ts', use('ManagedProcess', '../sim/cluster/managed-process.js'), 'stack/ runs in production'],
    ['stack/x.ts', use('runDemo', '../demo/run-demo.js'), 'stack/ runs in production'],
    ['client/rehearse/twin.ts', use('runDemo', '../../demo/run-demo.js'), 'never the demo'],
    // activities ↛ workflows (but types), the CLI, the worker
    [
      'activities/x.ts',
      use('clusterUpgradeWorkflow', '../workflows/cluster-upgrade-workflow.js'),
      'Activities do not import workflow code',
    ],
    ['activities/x.ts', use('connectClient', '../client/temporal-connection.js'), 'do not import it or the CLI'],
    ['activities/x.ts', use('newWorker', '../worker/create-worker.js'), 'do not import it or the CLI'],
    // client ↛ worker internals, activity implementations, a worker in process
    ['client/commands/x.ts', use('newWorker', '../../worker/create-worker.js'), "worker's internals"],
    ['client/commands/x.ts', use('runWorker', '../../worker/run-worker.js'), "worker's internals"],
    ['client/x.ts', use('createClusterResolver', '../activities/host-address.js'), 'never to a cluster'],
    ['client/x.ts', use('NativeConnection', '@temporalio/worker'), 'does not run a worker'],
    ['client/commands/worker.ts', use('newWorker', '../../worker/create-worker.js'), "worker's internals"],
    ['client/x.ts', use('Client', '@temporalio/client'), 'client/temporal-sdk.ts'],
    // worker ↛ the CLI; rules ↛ workflows, activities; tooling ↛ the rest
    ['worker/x.ts', use('connectClient', '../client/temporal-connection.js'), 'The CLI imports the worker'],
    ['rules/x.ts', use('statusQuery', '../workflows/rollout-messages.js'), 'The pure rules import contracts/'],
    ['rules/x.ts', use('Activities', '../activities/index.js', true), 'The pure rules import contracts/'],
    ['tooling/x.ts', use('EXIT', '../client/cli-support.js'), 'tooling/ imports nothing'],
    // workflows ↛ activity implementations (type imports allowed below)
    ['workflows/x.ts', use('createActivities', '../activities/index.js'), 'Only `import type` from activities/'],
  ];
  for (const [file, code, expected] of banned) {
    const what = /from '([^']+)'/.exec(code)?.[1];
    it(`bans ${code.startsWith('import type') ? 'a type from ' : ''}${what} in ${file}`, async () => {
      const messages = await lintAs(file, code);
      assert.ok(
        messages.some((m) => m.startsWith('no-restricted-imports') && m.includes(expected)),
        `${file}: ${code.split('\n')[0]} → ${messages.join('\n') || 'no message'}`,
      );
    });
  }

  const allowed: [string, string][] = [
    ['client/rehearse/twin.ts', use('simulate', '../../sim/simulation.js')],
    ['client/rehearse/twin.ts', use('newWorker', '../../worker/create-worker.js')],
    ['client/rehearse/twin.ts', use('createClusterResolver', '../../activities/host-address.js')],
    ['client/rehearse/twin.ts', use('NativeConnection', '@temporalio/worker')],
    ['client/commands/x.ts', use('workerConfig', '../../worker/config.js')],
    ['client/x.ts', use('payloadCodec', '../worker/payload-codec.js')],
    ['client/commands/worker.ts', use('runWorker', '../../worker/run-worker.js')],
    ['client/x.ts', use('RehearsalFacts', '../activities/rehearsal.js', true)],
    ['client/x.ts', use('ensureTemporalBinary', '../tooling/temporal-binary.js')],
    ['client/x.ts', use('upgradeWorkflowId', '../contracts/workflow-ids.js')],
    ['client/temporal-sdk.ts', use('Client', '@temporalio/client')],
    ['workflows/x.ts', use('Activities', '../activities/index.js', true)],
    ['rules/x.ts', use('NEVER_RETRY', '../contracts/failure-types.js')],
    ['worker/x.ts', use('createActivities', '../activities/index.js')],
    ['stack/x.ts', use('ManagedProcess', '../tooling/managed-process.js')],
    ['stack/x.ts', use('ALL_SEARCH_ATTRIBUTES', '../workflows/search-attributes.js')],
    ['demo/x.ts', use('stackUp', '../stack/stack.js')],
    ['sim/x.ts', use('parseVersion', '../rules/index.js')],
  ];
  for (const [file, code] of allowed) {
    it(`allows ${code.split('\n')[0]} in ${file}`, async () => {
      assert.deepEqual(
        (await lintAs(file, code)).filter((m) => m.startsWith('no-restricted-imports')),
        [],
      );
    });
  }
});
