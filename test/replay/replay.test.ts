import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, it } from 'node:test';
import { Worker } from '@temporalio/worker';
import { DeterminismViolationError } from '@temporalio/workflow';
import { workflowBundle } from '../helpers/temporal-env.js';

// Histories saved from real runs (the e2e test writes them with SKEWLESS_SAVE_HISTORIES=<dir>).
const dir = fileURLToPath(new URL('../../../test/replay/histories/', import.meta.url));
const histories = readdirSync(dir)
  .filter((f) => f.endsWith('.json'))
  .sort();

describe('replay of saved histories through the current workflow code', () => {
  it('has histories to replay', () => assert.ok(histories.length >= 3, histories.join(', ')));

  for (const file of histories) {
    it(`replays ${file} without a determinism violation`, async () => {
      const history = JSON.parse(readFileSync(join(dir, file), 'utf8'));
      // The workflow id matters (child ids derive from it): file names are ids with '/' as '_',
      // and an optional `@label` for one run of several (continue-as-new).
      const workflowId = file.replace(/(@[\w-]+)?\.json$/, '').replace(/_/g, '/');
      await Worker.runReplayHistory({ workflowBundle: await workflowBundle() }, history, workflowId);
    });
  }

  it('detects a changed command sequence (the negative case)', async () => {
    const history = JSON.parse(readFileSync(join(dir, 'upgrade_e2e_1.33.7_worker-3.json'), 'utf8'));
    // Rename the first scheduled activity: the code now schedules something the history does not have.
    const scheduled = history.events.find(
      (e: { activityTaskScheduledEventAttributes?: unknown }) => e.activityTaskScheduledEventAttributes,
    );
    scheduled.activityTaskScheduledEventAttributes.activityType.name = 'somethingElse';
    await assert.rejects(
      Worker.runReplayHistory({ workflowBundle: await workflowBundle() }, history, 'upgrade/e2e/1.33.7/worker-3'),
      DeterminismViolationError,
    );
  });
});
