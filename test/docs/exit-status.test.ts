// Every exit status the docs and the commands' help name is one of the code's (EXIT in
// client/cli-support.ts), and docs/cli.md's table lists each of them: a script reads the numbers from
// the docs, the commands return them from the table.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { EXIT } from '../../client/cli-support.js';
import { COMMANDS } from '../../client/cli.js';
import { repoRoot } from '../deploy/compose-file.js';

const CLI_DOC = readFileSync(join(repoRoot, 'docs', 'cli.md'), 'utf8');
const CODES = new Set<number>(Object.values(EXIT));

/** "0 done, 4 done but …, 1 failed …; 2 invalid …, 3, 130 interrupted": each status with what it says. */
export function exitSegments(text: string): { code: number; says: string }[] {
  const starts = [...text.trim().matchAll(/(?:^|[,;:]\s*|[,;:]? or )(\d+)(?=[\s,.;]|$)/g)];
  return starts.map((m, i) => ({
    code: Number(m[1]),
    says: text
      .trim()
      .slice(m.index + m[0].length, starts[i + 1]?.index ?? text.trim().length)
      .trim(),
  }));
}

/** A help text's "Exit status…:" paragraph (up to the blank line), or undefined. */
const helpExitText = (help: string) => /Exit status[^:]*:([\s\S]*?)(?:\n\n|$)/.exec(help)?.[1]?.replace(/\s+/g, ' ');

/** docs/cli.md: each "### name" section's "Exit status:" line. */
function docSections(): { names: string[]; exit: string }[] {
  return [...CLI_DOC.matchAll(/^### (.+)\n([\s\S]*?)(?=^##)/gm)].flatMap((m) => {
    const exit = /^Exit status:(.*)$/m.exec(m[2]!)?.[1];
    return exit ? [{ names: m[1]!.split(',').map((n) => n.trim()), exit }] : [];
  });
}

/** Another run of the cluster running is a refusal before the start: exit 2 everywhere (refuseWhileAnotherRolloutRuns). */
const ANOTHER_RUN = /\b(an? (upgrade|maintenance|rollout|restore|blue\/green)|another rollout)\b[^,;]*\brunning\b|already running/;

describe('exit statuses: the docs and the helps name the code’s', () => {
  it("docs/cli.md's table lists exactly the statuses of EXIT", () => {
    const table = /^## Exit status\n([\s\S]*?)(?=^## )/m.exec(CLI_DOC)?.[1] ?? '';
    const rows = [...table.matchAll(/^\| (\d+) \|/gm)].map((m) => Number(m[1]));
    assert.deepEqual(
      [...rows].sort((a, b) => a - b),
      [...CODES].sort((a, b) => a - b),
    );
  });

  it("every status a command's section or --help names is in EXIT, and another run running is 2", async () => {
    const texts = docSections().map((s) => ({ where: `docs/cli.md ### ${s.names.join(', ')}`, exit: s.exit }));
    for (const [name, command] of Object.entries(COMMANDS)) {
      const exit = helpExitText((await command.load()).help);
      if (exit) texts.push({ where: `skewless ${name} --help`, exit });
    }
    assert.ok(texts.length > 20, `${texts.length} exit status texts`);
    for (const { where, exit } of texts) {
      const segments = exitSegments(exit);
      assert.ok(segments.length > 0, `${where}: no status in "${exit}"`);
      for (const { code, says } of segments) {
        assert.ok(CODES.has(code), `${where}: status ${code} is not in EXIT`);
        if (ANOTHER_RUN.test(says)) assert.equal(code, 2, `${where}: "${says}" under ${code}, but a run of the cluster running is 2`);
      }
    }
  });

  it('the sections of docs/cli.md on a command name together the statuses its --help names', async () => {
    const codes = (text: string) => exitSegments(text).map((s) => s.code);
    const documented = new Map<string, Set<number>>(); // "plan" and "plan --cluster" are two sections of one command
    for (const section of docSections())
      for (const name of section.names) {
        const command = name.split(' ')[0]!;
        documented.set(command, new Set([...(documented.get(command) ?? []), ...codes(section.exit)]));
      }
    for (const [name, command] of Object.entries(COMMANDS)) {
      const help = helpExitText((await command.load()).help);
      const doc = documented.get(name);
      if (!help || !doc) continue;
      const sorted = (c: Iterable<number>) => [...new Set(c)].sort((a, b) => a - b);
      assert.deepEqual(sorted(doc), sorted(codes(help)), `${name}: docs/cli.md vs --help "${help}"`);
    }
  });
});
