// Under root the stack's PostgreSQL runs as Debian's `postgres` user, which must enter every dir above
// its data: the stack names the first one it cannot enter instead of leaving initdb's error to explain.
import assert from 'node:assert/strict';
import { chmodSync, mkdirSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { closedAncestor } from '../../stack/postgres.js';
import { tempDir } from '../helpers/temp-dir.js';

const base = tempDir('pg-access');
const other = { uid: 54_321, gid: 54_321 }; // owns nothing here: only the "others" bits count for it

describe('closedAncestor: the dir the PostgreSQL user cannot enter', () => {
  after(() => rmSync(base, { recursive: true, force: true }));

  it('names the first closed dir above the state dir, and none once it is opened (o+x)', () => {
    const state = join(base, 'private', 'stack');
    mkdirSync(state, { recursive: true });
    chmodSync(base, 0o711);
    chmodSync(join(base, 'private'), 0o700);
    assert.equal(closedAncestor(state, other), join(base, 'private'));
    chmodSync(join(base, 'private'), 0o711);
    assert.equal(closedAncestor(state, other), undefined);
  });

  it('lets the owner through its own closed dirs, by the owner bit', () => {
    const mine = statSync(base);
    chmodSync(base, 0o700);
    assert.equal(closedAncestor(join(base, 'x'), { uid: mine.uid, gid: mine.gid }), undefined);
    assert.equal(closedAncestor(join(base, 'x'), other), base);
  });
});
