import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, it } from 'node:test';
import {
  bluegreenWorkflowId,
  fleetWorkflowId,
  isFleetWorkflowId,
  maintainWorkflowId,
  nodeWorkflowId,
  planWorkflowId,
  rehearseWorkflowId,
  restoreWorkflowId,
  ROLLOUT_KINDS,
  rolloutKindOfWorkflowId,
  rolloutWorkflowId,
  scheduledUpgradeWorkflowId,
  upgradeNodeOfWorkflowId,
  upgradeScheduleId,
  upgradeWorkflowId,
} from '../../contracts/workflow-ids.js';
import { repoRoot } from '../helpers/run-cli.js';

describe('workflow ids (contracts/workflow-ids.ts)', () => {
  it('are the business keys running histories and operators already use', () => {
    // Wire names: a change here orphans every running rollout, so the expected ids are written out.
    assert.equal(upgradeWorkflowId('prod'), 'upgrade/prod');
    assert.equal(maintainWorkflowId('prod'), 'maintain/prod');
    assert.equal(restoreWorkflowId('prod'), 'restore/prod');
    assert.equal(bluegreenWorkflowId('prod'), 'bluegreen/prod');
    assert.equal(nodeWorkflowId('upgrade/prod', 'worker-1', '1.33.7'), 'upgrade/prod/1.33.7/worker-1');
    assert.equal(nodeWorkflowId('maintain/prod', 'worker-1'), 'maintain/prod/worker-1');
    assert.equal(fleetWorkflowId('eu'), 'fleet/eu');
    assert.equal(rehearseWorkflowId('prod'), 'rehearse/prod');
    assert.equal(planWorkflowId('prod', '2026-01-01T00:00:00.000Z', 'ab12cd34'), 'plan/prod/2026-01-01T00:00:00.000Z-ab12cd34');
    assert.equal(scheduledUpgradeWorkflowId('prod'), 'scheduled-upgrade/prod');
    assert.equal(upgradeScheduleId('prod'), 'upgrade-schedule/prod');
  });

  it('read back the kind of a rollout and of its node children, and nothing else', () => {
    for (const kind of ROLLOUT_KINDS) {
      assert.equal(rolloutKindOfWorkflowId(rolloutWorkflowId(kind, 'c')), kind);
      assert.equal(rolloutKindOfWorkflowId(nodeWorkflowId(rolloutWorkflowId(kind, 'c'), 'n')), kind);
    }
    for (const other of [
      fleetWorkflowId('c'),
      rehearseWorkflowId('c'),
      planWorkflowId('c', 't', 'x'),
      `${scheduledUpgradeWorkflowId('c')}-1`,
      'upgrades/c',
      '',
    ])
      assert.equal(rolloutKindOfWorkflowId(other), undefined, other);
  });

  it("read back an upgrade's node child's node and hop, and refuse any other id", () => {
    assert.deepEqual(upgradeNodeOfWorkflowId(nodeWorkflowId(upgradeWorkflowId('lab'), 'cp-1', '1.34.1')), {
      cluster: 'lab',
      hop: '1.34.1',
      node: 'cp-1',
    });
    for (const other of [
      upgradeWorkflowId('lab'),
      nodeWorkflowId(maintainWorkflowId('lab'), 'w1'),
      'upgrade/lab/1.34.1/w1/extra',
      'upgrade//1.34.1/w1',
    ])
      assert.equal(upgradeNodeOfWorkflowId(other), undefined, other);
    assert.equal(isFleetWorkflowId(fleetWorkflowId('eu')), true);
    assert.equal(isFleetWorkflowId(upgradeWorkflowId('fleet')), false);
  });
});

/**
 * A workflow id written as a template (`upgrade/${cluster}`) anywhere but contracts/: the next rename
 * would miss it. workflows/ is being reworked into the rollout core (issue 20): its ids are listed
 * here until they use contracts/ too, and an entry that no longer matches fails, so the list only shrinks.
 */
const ID_TEMPLATE = /`(upgrade|maintain|restore|bluegreen|fleet|plan|rehearse|scheduled-upgrade|upgrade-schedule)\/\$\{/;
const NOT_YET: readonly string[] = [];

function tsFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    if (['node_modules', 'dist', 'test-output', '.git'].includes(name)) return [];
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return tsFiles(path);
    return name.endsWith('.ts') ? [relative(repoRoot, path)] : [];
  });
}

describe('workflow-id templates live in contracts/ only', () => {
  it('no other file builds a workflow id from a template', () => {
    const offenders = tsFiles(repoRoot)
      .filter((f) => !f.startsWith('contracts/') && f !== 'test/contracts/workflow-ids.test.ts')
      .filter((f) =>
        readFileSync(join(repoRoot, f), 'utf8')
          .split('\n')
          .some((line) => ID_TEMPLATE.test(line)),
      );
    assert.deepEqual(
      offenders.filter((f) => !NOT_YET.includes(f)),
      [],
      'use the functions of contracts/workflow-ids.ts',
    );
    assert.deepEqual(
      NOT_YET.filter((f) => !offenders.includes(f)),
      [],
      'these use contracts/ now: take them off the list',
    );
  });
});
