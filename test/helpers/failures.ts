import assert from 'node:assert/strict';
import { ApplicationFailure } from '@temporalio/common';

/** The ApplicationFailure `p` rejects with, asserted to be of `type` (an activity's typed failure). */
export async function failsWith(p: Promise<unknown>, type: string): Promise<ApplicationFailure> {
  const err = await p.then(
    () => assert.fail(`expected ${type}`),
    (e: unknown) => e,
  );
  assert.ok(err instanceof ApplicationFailure, `expected an ApplicationFailure, got ${String(err)}`);
  assert.equal(err.type, type, err.message);
  return err;
}
