import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { WorkflowHandle } from '@temporalio/client';
import { UsageError, type CommandIo } from '../../client/cli-support.js';
import { eventPrinter, followRun } from '../../client/start-and-follow.js';
import { loadTemporalClient } from '../../client/temporal-sdk.js';

/** What a command printed: stdout lines, stderr lines, and the live line's updates ('' = erased). */
function capture(): CommandIo & { lines: string[]; errors: string[]; live: string[] } {
  const lines: string[] = [];
  const errors: string[] = [];
  const live: string[] = [];
  return { lines, errors, live, out: (t) => lines.push(t), err: (t) => errors.push(t), transient: (t) => live.push(t) };
}

/** A run that is RUNNING for `polls` describes, then COMPLETED; or not found at all. */
function fakeHandle(polls: number, found = true): { handle: WorkflowHandle; described: () => number } {
  let described = 0;
  const handle = {
    workflowId: 'upgrade/lab',
    describe: async () => {
      if (!found) {
        const { WorkflowNotFoundError } = await loadTemporalClient();
        throw new WorkflowNotFoundError('not found', 'upgrade/lab', undefined);
      }
      return { status: { name: ++described > polls ? 'COMPLETED' : 'RUNNING' }, taskQueue: 'q' };
    },
  };
  return { handle: handle as unknown as WorkflowHandle, described: () => described };
}

describe('followRun (client/start-and-follow.ts): the one follow loop of watch, restore and fleet', () => {
  it('shows each status until the run closes, then returns the exit code of its ending', async () => {
    const io = capture();
    const { handle, described } = fakeHandle(2);
    const statuses = [{ events: ['a'] }, { events: ['a', 'b'] }, { events: ['a', 'b', 'c'] }];
    const print = eventPrinter(io, undefined);
    const seen: boolean[] = [];
    const exit = await followRun({
      io,
      handle,
      notFound: 'no upgrade of lab found',
      pollMs: 1,
      status: async () => statuses.shift(),
      show: (s, closed) => {
        print(s.events);
        seen.push(closed);
        return `lab: ${s.events.length} events`;
      },
      ending: async () => {
        io.out('ended');
        return 4;
      },
    });
    assert.equal(exit, 4);
    assert.equal(described(), 3);
    assert.deepEqual(seen, [false, false, true], 'the last status is shown with the run closed');
    assert.deepEqual(io.lines, ['  a', '  b', '  c', 'ended'], 'each event once, the ending last');
    assert.ok(io.live.some((l) => l.includes('lab: 3 events')));
    assert.equal(io.live.at(-1), '', 'the live line is erased at the end');
  });

  it('waits through polls without a status and shows nothing for them', async () => {
    const io = capture();
    const { handle } = fakeHandle(2);
    const answers: ({ events: string[] } | undefined)[] = [undefined, undefined, { events: ['x'] }];
    let shown = 0;
    const exit = await followRun({
      io,
      handle,
      notFound: 'x',
      pollMs: 1,
      status: async () => answers.shift(),
      show: () => {
        shown++;
        return undefined;
      },
      ending: async () => 0,
    });
    assert.equal(exit, 0);
    assert.equal(shown, 1);
  });

  it('says a run that does not exist in one line, as a usage error (exit 2)', async () => {
    const io = capture();
    await assert.rejects(
      followRun({
        io,
        handle: fakeHandle(0, false).handle,
        notFound: 'no fleet eu found',
        pollMs: 1,
        status: async () => undefined,
        show: () => undefined,
        ending: async () => 0,
      }),
      (err: Error) => err instanceof UsageError && err.message === 'no fleet eu found',
    );
  });
});

describe('eventPrinter', () => {
  it('prints only the events not printed yet, as text or as NDJSON event records', () => {
    const text = capture();
    const printText = eventPrinter(text, undefined);
    printText(['one']);
    printText(['one', 'two']);
    printText(['one', 'two']);
    assert.deepEqual(text.lines, ['  one', '  two']);

    const records: [string, Record<string, unknown>][] = [];
    const printJson = eventPrinter(capture(), (type, fields) => records.push([type, fields]));
    printJson(['one', 'two']);
    printJson(['one', 'two', 'three']);
    assert.deepEqual(records, [
      ['event', { message: 'one' }],
      ['event', { message: 'two' }],
      ['event', { message: 'three' }],
    ]);
  });
});
