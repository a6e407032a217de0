import assert from 'node:assert/strict';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { ESLint } from 'eslint';
import * as prettier from 'prettier';
import { readFileSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import { repoRoot } from './helpers/run-cli.js';

const eslint = new ESLint({ cwd: repoRoot });

async function lintAs(path: string, code: string): Promise<string[]> {
  const [result] = await eslint.lintText(code, { filePath: join(repoRoot, path) });
  return (result?.messages ?? []).map((m) => `${m.ruleId}: ${m.message}`);
}

describe('lint', () => {
  it('the whole repository passes eslint', async () => {
    const results = await eslint.lintFiles(['.']);
    const problems = results.flatMap((r) =>
      r.messages.map((m) => `${r.filePath.slice(repoRoot.length)}:${m.line} ${m.ruleId} ${m.message}`),
    );
    assert.deepEqual(problems, []);
  });

  it('every TypeScript and JavaScript file is as Prettier writes it (npm run format)', async () => {
    const files = execFileSync('git', ['ls-files', '--cached', '--others', '--exclude-standard', '*.ts', '*.js'], {
      cwd: repoRoot,
      encoding: 'utf8',
    })
      .split('\n')
      .filter(Boolean);
    const unformatted: string[] = [];
    for (const file of files) {
      const filepath = join(repoRoot, file);
      if ((await prettier.getFileInfo(filepath, { ignorePath: join(repoRoot, '.prettierignore') })).ignored) continue;
      const options = await prettier.resolveConfig(filepath);
      if (!(await prettier.check(readFileSync(filepath, 'utf8'), { ...options, filepath }))) unformatted.push(file);
    }
    assert.ok(files.length > 300, `found the repository's files (${files.length})`);
    assert.deepEqual(unformatted, []);
  });

  const banned: [string, string][] = [
    ['a Node built-in', "import { readFileSync } from 'node:fs';\nexport const x = readFileSync;\n"],
    ['a bare built-in', "import { spawn } from 'child_process';\nexport const x = spawn;\n"],
    ['the Kubernetes client', "import { KubeConfig } from '@kubernetes/client-node';\nexport const x = KubeConfig;\n"],
    ['ssh2', "import { Client } from 'ssh2';\nexport const x = Client;\n"],
    ['the Temporal client', "import { Client } from '@temporalio/client';\nexport const x = Client;\n"],
    ['activity implementations', "import { createActivities } from '../activities/index.js';\nexport const x = createActivities;\n"],
  ];
  for (const folder of ['workflows', 'workflows/deep/nested', 'rules']) {
    for (const [what, code] of banned) {
      it(`bans ${what} in ${folder}/`, async () => {
        const messages = await lintAs(`${folder}/example.ts`, code);
        assert.ok(
          messages.some((m) => m.startsWith('no-restricted-imports')),
          messages.join('\n'),
        );
      });
    }
  }

  it('allows `import type` from activities/ in workflows/', async () => {
    assert.deepEqual(
      await lintAs('workflows/example.ts', "import type { Activities } from '../activities/index.js';\nexport type X = Activities;\n"),
      [],
    );
  });

  it('bans clock reads and randomness in the pure rules', async () => {
    const messages = await lintAs(
      'rules/example.ts',
      'export const a = Date.now();\nexport const b = Math.random();\nexport const c = new Date();\n',
    );
    assert.equal(messages.filter((m) => /no-restricted-(properties|syntax)/.test(m)).length, 3, messages.join('\n'));
  });

  it('lets activities use Node built-ins', async () => {
    assert.deepEqual(await lintAs('activities/example.ts', "import { hostname } from 'node:os';\nexport const x = hostname;\n"), []);
  });
});
