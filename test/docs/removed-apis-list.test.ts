// docs/real-cluster.md and `plan --help` say which removed APIs the readiness section checks, from the
// table the check itself reads, and that the repository look-ahead asks every node.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { planHelp } from '../../client/commands/plan.js';
import { REMOVED_APIS, removedApisByRelease } from '../../rules/readiness/removed-apis.js';
import { repoRoot } from '../deploy/compose-file.js';

const DOC = readFileSync(join(repoRoot, 'docs', 'real-cluster.md'), 'utf8');

describe('the removed APIs checked, as the docs list them', () => {
  it("docs/real-cluster.md lists every row of the check's table, by the release that removes it", () => {
    const block = /<!-- removed-apis:[^>]*-->\n([\s\S]*?)\n<!-- \/removed-apis -->/.exec(DOC)?.[1];
    assert.ok(block, 'the generated block is in docs/real-cluster.md');
    const listed = block.split('\n').map((line) => {
      const m = /^ {2}- removed in (\d+\.\d+): (.*)$/.exec(line);
      assert.ok(m, `not a list line: ${line}`);
      return { removedIn: m[1]!, apis: m[2]!.split(', ').map((a) => a.replace(/^`|`$/g, '')) };
    });
    assert.deepEqual(listed, removedApisByRelease());
    assert.equal(
      listed.reduce((n, g) => n + g.apis.length, 0),
      REMOVED_APIS.length,
    );
  });

  it('plan --help names the ones its hops remove (1.33 on) and says the repository is asked on every node', () => {
    const help = planHelp.replace(/\s+/g, ' ');
    for (const a of REMOVED_APIS.filter((r) => Number(r.removedIn.split('.')[1]) >= 33))
      assert.ok(help.includes(`${a.group}/${a.version}/${a.resource}`), `${a.resource} in plan --help`);
    assert.match(help, /and \d+ removed in 1\.16-1\.32 \(docs\/real-cluster\.md lists every one\)/);
    assert.match(help, /The package repository of each hop is asked on every node/);
    assert.match(DOC, /The package repository of each hop, on every node\*\* \(control planes and workers alike/);
  });
});
