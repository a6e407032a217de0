import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { QueryPace } from '../../client/query-pace.js';

describe('QueryPace: when watch asks the workflow again', () => {
  it('asks at first, then only once the history grew, and not sooner than the gap after the last ask', () => {
    const pace = new QueryPace(3_000);
    assert.equal(pace.due(10, 0), true, 'no answer yet');
    pace.asked(10, 0, true);
    assert.equal(pace.due(10, 60_000), false, 'nothing happened: the answer holds, however long');
    assert.equal(pace.due(12, 1_000), false, 'the history grew, but the last ask was a moment ago');
    assert.equal(pace.due(12, 3_000), true);
    pace.asked(12, 3_000, true);
    assert.equal(pace.due(12, 9_000), false);
  });

  it('keeps asking while no answer came (no worker yet)', () => {
    const pace = new QueryPace(3_000);
    pace.asked(5, 0, false);
    assert.equal(pace.due(5, 1_000), true);
  });
});
