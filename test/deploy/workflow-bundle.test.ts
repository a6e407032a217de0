import assert from 'node:assert/strict';
import { readFileSync, statSync, utimesSync } from 'node:fs';
import { describe, it } from 'node:test';
import { bundleWorkflowCode } from '@temporalio/worker';
import { prebuiltBundle, prebuiltBundlePath, workflowsPath } from '../../worker/workflow-bundle.js';

describe('the workflow bundle the build writes', () => {
  it('is what bundling the compiled workflows gives now, and the worker takes it', async () => {
    assert.deepEqual(prebuiltBundle(), { codePath: prebuiltBundlePath });
    const quiet = () => undefined;
    const { code } = await bundleWorkflowCode({
      workflowsPath,
      logger: { log: quiet, trace: quiet, debug: quiet, info: quiet, warn: quiet, error: quiet },
    });
    assert.ok(readFileSync(prebuiltBundlePath, 'utf8') === code, 'dist/workflow-bundle.js matches a fresh bundle of dist/workflows');
  });

  it('is passed over once a compiled workflow is newer (a tsc after the build)', () => {
    const { atime, mtime } = statSync(prebuiltBundlePath);
    try {
      utimesSync(prebuiltBundlePath, atime, new Date(mtime.getTime() - 3_600_000));
      assert.equal(prebuiltBundle(), undefined);
    } finally {
      utimesSync(prebuiltBundlePath, atime, mtime);
    }
    assert.deepEqual(prebuiltBundle(), { codePath: prebuiltBundlePath });
  });
});
