import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, it } from 'node:test';
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
